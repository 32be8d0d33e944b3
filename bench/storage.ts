/**
 * Storage engine throughput, in process (`npm run bench:storage`).
 *
 * - append, threshold mode (unflushThreshold 1000, unflushIntervalMs 10000, MetaQ's
 *   defaults): a producer issues `perTurn` appends per event-loop turn; rate = acknowledged
 *   appends per second.
 * - append, group commit (unflushThreshold 0): `inFlight` producers each issue their next
 *   append as soon as the previous one is acknowledged (after its fdatasync); rate =
 *   acknowledged appends per second, with the fdatasyncs per second that carried them.
 * - read: replay the log written by the threshold run from a freshly opened store (page
 *   cache, positional reads of `READ_BYTES`), and again from the tail cache of a live store.
 *
 * Records are `payload` bytes plus MetaQ's 20-byte header. Options: BENCH_SECONDS (default 3
 * per append scenario). The data directory is a temp dir removed at the end.
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {checksum} from '../src/protocol/crc.js'
import {MessageStore, nodeFileOps, type FileOps, type PartitionLog, type TopicStorageConfig} from '../src/storage/index.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const READ_BYTES = 1024 * 1024
const SEGMENT_BYTES = 1024 * 1024 * 1024

interface Row {
  scenario: string
  record: string
  msgsPerSec: number
  mbPerSec: number
  note: string
}

/** node:fs with an fdatasync counter. */
const counting = {syncs: 0}
const countingOps: FileOps = {
  ...nodeFileOps,
  fdatasync: (fd) => {
    counting.syncs += 1
    return nodeFileOps.fdatasync(fd)
  },
}

function openStore(dataPath: string, config: Partial<TopicStorageConfig>): Promise<MessageStore> {
  const topicConfig = {dataPath, unflushThreshold: 1000, unflushIntervalMs: 10_000, maxSegmentBytes: SEGMENT_BYTES, ...config}
  return MessageStore.open({dataPath, topicConfig: () => topicConfig, fileOps: countingOps})
}

function payloadOf(bytes: number): {payload: Buffer; crc: number} {
  const payload = Buffer.alloc(bytes, 'x')
  return {payload, crc: checksum(payload)}
}

/** Threshold mode: `perTurn` appends per turn for SECONDS; resolves with acknowledged count. */
function pumpPerTurn(log: PartitionLog, bytes: number, perTurn: number): Promise<{acked: number; seconds: number}> {
  const {payload, crc} = payloadOf(bytes)
  const start = performance.now()
  let issued = 0
  let acked = 0
  let stopped = false
  let id = 1n
  return new Promise((resolve, reject) => {
    const done = (err: Error | null): void => {
      if (err) reject(err)
      acked += 1
      if (stopped && acked === issued) resolve({acked, seconds: (performance.now() - start) / 1000})
    }
    const turn = (): void => {
      for (let i = 0; i < perTurn; i += 1) log.append(id++, 0, payload, crc, done)
      issued += perTurn
      if (performance.now() - start < SECONDS * 1000) setImmediate(turn)
      else stopped = true
    }
    turn()
  })
}

/** Group commit: `inFlight` producers, each appending again when acknowledged. */
function pumpClosedLoop(log: PartitionLog, bytes: number, inFlight: number): Promise<{acked: number; seconds: number}> {
  const {payload, crc} = payloadOf(bytes)
  const start = performance.now()
  let outstanding = 0
  let acked = 0
  let id = 1n
  return new Promise((resolve, reject) => {
    const done = (err: Error | null): void => {
      if (err) reject(err)
      acked += 1
      outstanding -= 1
      if (performance.now() - start < SECONDS * 1000) issue()
      else if (outstanding === 0) resolve({acked, seconds: (performance.now() - start) / 1000})
    }
    const issue = (): void => {
      outstanding += 1
      log.append(id++, 0, payload, crc, done)
    }
    for (let i = 0; i < inFlight; i += 1) issue()
  })
}

async function appendThreshold(root: string, bytes: number): Promise<{row: Row; dir: string}> {
  const dataPath = join(root, `threshold-${bytes}`)
  const store = await openStore(dataPath, {})
  const log = store.getOrCreate('bench', 0)
  counting.syncs = 0
  const {acked, seconds} = await pumpPerTurn(log, bytes, 1000)
  const syncs = counting.syncs
  await store.close()
  const row = rate('append, threshold 1000/10s', bytes, acked, seconds, `1000 per turn, ${Math.round(syncs / seconds)} fdatasync/s`)
  return {row, dir: dataPath}
}

async function appendGroupCommit(root: string, bytes: number, inFlight: number): Promise<Row> {
  const dataPath = join(root, `group-${bytes}-${inFlight}`)
  const store = await openStore(dataPath, {unflushThreshold: 0})
  const log = store.getOrCreate('bench', 0)
  counting.syncs = 0
  const {acked, seconds} = await pumpClosedLoop(log, bytes, inFlight)
  const syncs = counting.syncs
  await store.close()
  rmSync(dataPath, {recursive: true, force: true})
  const perSync = Math.round(acked / Math.max(1, syncs))
  return rate('append, group commit', bytes, acked, seconds, `${inFlight} in flight, ${Math.round(syncs / seconds)} fdatasync/s, ${perSync}/sync`)
}

/** Replay the whole log with sequential positional reads from a freshly opened store. */
async function readReplay(dataPath: string, bytes: number): Promise<Row> {
  const store = await openStore(dataPath, {})
  const log = store.get('bench', 0)
  if (log === undefined) throw new Error(`no log in ${dataPath}`)
  const start = performance.now()
  let offset = log.minOffset
  while (offset < log.maxOffset) {
    const result = await log.read(offset, READ_BYTES)
    if (result.kind !== 'data') throw new Error(`unexpected ${result.kind} at ${offset}`)
    offset += result.data.length
  }
  const seconds = (performance.now() - start) / 1000
  const total = log.maxOffset - log.minOffset
  await store.close()
  return rate('read, page cache', bytes, total / (bytes + 20), seconds, `${READ_BYTES / 1024} KiB reads, ${mb(total)} MB`)
}

/** Tail reads: a consumer following a live producer, served from the tail cache. */
async function readTail(root: string, bytes: number): Promise<Row> {
  const dataPath = join(root, `tail-${bytes}`)
  const store = await openStore(dataPath, {})
  const log = store.getOrCreate('bench', 0)
  const {payload, crc} = payloadOf(bytes)
  let consumed = 0
  let offset = 0
  const start = performance.now()
  while (performance.now() - start < SECONDS * 1000) {
    for (let i = 0; i < 1000; i += 1) log.append(1n, 0, payload, crc, () => {})
    await new Promise((resolve) => setImmediate(resolve))
    for (;;) {
      const result = await log.read(offset, READ_BYTES)
      if (result.kind !== 'data') break
      offset += result.data.length
      consumed += result.data.length
    }
  }
  const seconds = (performance.now() - start) / 1000
  await store.close()
  rmSync(dataPath, {recursive: true, force: true})
  return rate('append + tail read', bytes, consumed / (bytes + 20), seconds, 'reads served by the tail cache')
}

function rate(scenario: string, bytes: number, messages: number, seconds: number, note: string): Row {
  return {
    scenario,
    record: `${bytes} B`,
    msgsPerSec: messages / seconds,
    mbPerSec: (messages * (bytes + 20)) / seconds / 1e6,
    note,
  }
}

function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(0)
}

function printTable(rows: Row[]): void {
  const header = ['scenario', 'payload', 'msgs/s', 'MB/s', 'notes']
  const cells = rows.map((r) => [r.scenario, r.record, Math.round(r.msgsPerSec).toLocaleString('en-US'), r.mbPerSec.toFixed(1), r.note])
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)))
  const line = (c: string[]): string => c.map((v, i) => (i === 2 || i === 3 ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join('  ')
  console.log(line(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const c of cells) console.log(line(c))
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'meta-bench-storage-'))
  const loadBefore = loadavg()[0]
  const rows: Row[] = []
  try {
    for (const bytes of [100, 1024]) {
      const {row, dir} = await appendThreshold(root, bytes)
      rows.push(row)
      rows.push(await readReplay(dir, bytes))
      rmSync(dir, {recursive: true, force: true})
    }
    for (const inFlight of [64, 512, 4096]) rows.push(await appendGroupCommit(root, 100, inFlight))
    rows.push(await appendGroupCommit(root, 1024, 512))
    rows.push(await readTail(root, 100))
  } finally {
    rmSync(root, {recursive: true, force: true})
  }
  const load = `load average ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after`
  console.log(`storage bench: node ${process.version}, ${SECONDS} s per append scenario, data in ${tmpdir()}, ${load}`)
  printTable(rows)
}

await main()
