/**
 * The side index (docs/protocol.md#side-index): seeks by time and by message count land on exact
 * offsets, checked against a brute-force walk of the same log; the index is rebuilt when deleted or
 * damaged, extended when stale, and repaired to the very bytes a clean run writes.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, rmSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {checksum} from '../../src/protocol/crc.js'
import {makeMessageId} from '../../src/protocol/message-id.js'
import {MessageStore, type PartitionLog} from '../../src/storage/index.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {decodeEntry, encodeEntries} from '../../src/storage/side-index.js'
import {openStore, put, putMany} from './support.js'

const BASE_MS = Date.UTC(2024, 0, 1)
const CONFIG = {maxSegmentBytes: 64 * 1024}

interface Written {
  offset: number
  ts: number
}

/** Append one message per timestamp (varied sizes, 100 per turn); returns offsets and times. */
async function writeDataset(log: PartitionLog, timestamps: number[]): Promise<Written[]> {
  const written: Written[] = []
  for (let first = 0; first < timestamps.length; first += 100) {
    const batch = timestamps.slice(first, first + 100).map((ts, j) => {
      const i = first + j
      const payload = Buffer.alloc(30 + ((i * 37) % 400), i % 251)
      return new Promise<Written>((resolve, reject) => {
        const id = makeMessageId(ts, 1, i & 0xfff)
        const offset = log.append(id, 0, payload, checksum(payload), (err) => (err ? reject(err) : resolve({offset, ts})))
      })
    })
    written.push(...(await Promise.all(batch)))
  }
  return written
}

/** Non-decreasing times, several messages per millisecond, with gaps. */
function steadyTimes(count: number): number[] {
  return Array.from({length: count}, (_, i) => BASE_MS + Math.floor(i / 3) * 7)
}

/** What every query must answer, computed by brute force over `written`. */
const reference = {
  time: (written: Written[], end: number, ms: number) => written.find((w) => w.ts >= ms)?.offset ?? end,
  between: (written: Written[], from: number, to: number) => written.filter((w) => w.offset >= from && w.offset < to).length,
  shift(written: Written[], end: number, offset: number, delta: number): number {
    const at = offset >= end ? written.length : written.findIndex((w) => w.offset === offset)
    const target = Math.min(written.length, Math.max(0, at + delta))
    return target === written.length ? end : written[target].offset
  },
}

/** Check a spread of queries of every kind against the reference. */
async function checkQueries(log: PartitionLog, written: Written[]): Promise<void> {
  const end = log.maxOffset
  const times = [0, BASE_MS - 1, ...written.filter((_, i) => i % 97 === 0).flatMap((w) => [w.ts, w.ts + 1]), BASE_MS * 2]
  for (const ms of times) assert.equal(await log.offsetForTimestamp(ms), reference.time(written, end, ms), `time ${ms}`)
  for (const count of [0, 1, 2, 99, 500, written.length - 1, written.length, written.length + 5]) {
    const expected = count >= written.length ? log.minOffset : count === 0 ? end : written[written.length - count].offset
    assert.equal(await log.offsetBeforeEnd(count), expected, `before end ${count}`)
  }
  const probes = written.filter((_, i) => i % 131 === 0).map((w) => w.offset)
  for (const from of [...probes, end]) {
    for (const delta of [-10_000, -157, -1, 0, 1, 42, 10_000]) {
      assert.equal(await log.shiftOffset(from, delta), reference.shift(written, end, from, delta), `shift ${from} by ${delta}`)
    }
    for (const to of [log.minOffset, ...probes, end]) {
      assert.equal(await log.countBetween(from, to), to <= from ? 0 : reference.between(written, from, to), `between ${from} ${to}`)
    }
  }
  assert.equal(log.info().messageCount, written.length)
}

async function freshLog(t: Cleanup, dataPath: string): Promise<{store: MessageStore; log: PartitionLog}> {
  const store = await openStore(t, dataPath, CONFIG)
  return {store, log: store.getOrCreate('idx', 0)}
}

async function reopen(t: Cleanup, dataPath: string): Promise<PartitionLog> {
  const store = await openStore(t, dataPath, CONFIG)
  const log = store.get('idx', 0)
  assert.ok(log)
  return log
}

function indexFiles(dir: string): Map<string, Buffer> {
  const names = readdirSync(dir)
    .filter((name) => name.endsWith('.idx'))
    .sort()
  return new Map(names.map((name) => [name, readFileSync(join(dir, name))]))
}

/** A closed log of 3000 messages over many segments, its index bytes and the reference. */
async function closedDataset(t: Cleanup, times = steadyTimes(3000)) {
  const dataPath = await tmpDir(t)
  const {store, log} = await freshLog(t, dataPath)
  const written = await writeDataset(log, times)
  await store.close()
  const dir = join(dataPath, 'idx-0')
  return {dataPath, dir, written, indexes: indexFiles(dir)}
}

describe('side index', () => {
  test('PartitionLog time and count seeks land on exact offsets across segments', async (t) => {
    const {log} = await freshLog(t, await tmpDir(t))
    const written = await writeDataset(log, steadyTimes(3000))
    assert.ok(log.info().segmentCount > 5, 'the data spans several segments')
    await checkQueries(log, written)
  })

  test('PartitionLog.offsetForTimestamp() finds the first later message when times go backwards', async (t) => {
    const {log} = await freshLog(t, await tmpDir(t))
    // A foreign clock: a sawtooth, so later messages may carry earlier times.
    const times = Array.from({length: 2000}, (_, i) => BASE_MS + ((i * 7919) % 1000) * 5 + Math.floor(i / 100))
    const written = await writeDataset(log, times)
    for (const ms of [BASE_MS, BASE_MS + 2500, BASE_MS + 4990, BASE_MS + 5010, BASE_MS + 6000]) {
      assert.equal(await log.offsetForTimestamp(ms), reference.time(written, log.maxOffset, ms), `time ${ms}`)
    }
  })

  test('PartitionLog seeks on an empty log answer its bounds', async (t) => {
    const {log} = await freshLog(t, await tmpDir(t))
    assert.equal(await log.offsetForTimestamp(BASE_MS), 0)
    assert.equal(await log.offsetBeforeEnd(10), 0)
    assert.equal(await log.shiftOffset(0, 5), 0)
    assert.equal(await log.countBetween(0, 100), 0)
    assert.equal(log.info().messageCount, 0)
  })

  test('MessageStore.open() keeps exact counts and seeks after reopen', async (t) => {
    const {dataPath, written} = await closedDataset(t)
    await checkQueries(await reopen(t, dataPath), written)
  })

  test('MessageStore.open() rebuilds deleted index files byte for byte', async (t) => {
    const {dataPath, dir, written, indexes} = await closedDataset(t)
    for (const name of indexes.keys()) rmSync(join(dir, name))
    const log = await reopen(t, dataPath)
    assert.deepEqual(indexFiles(dir), indexes)
    await checkQueries(log, written)
  })

  test('MessageStore.open() rebuilds damaged indexes: bad magic, truncated entry, entry past the end', async (t) => {
    const {dataPath, dir, written, indexes} = await closedDataset(t)
    const names = [...indexes.keys()]
    const badMagic = Buffer.from(indexes.get(names[0]) as Buffer)
    badMagic.write('XXXX', 0)
    writeFileSync(join(dir, names[0]), badMagic)
    truncateSync(join(dir, names[1]), (indexes.get(names[1]) as Buffer).length - 5)
    const pastEnd = Buffer.from(indexes.get(names[2]) as Buffer)
    pastEnd.writeUInt32BE(0x7fff, pastEnd.length - 24) // last entry's position: far past the segment
    writeFileSync(join(dir, names[2]), pastEnd)
    const last = names[names.length - 1]
    const wrongLast = Buffer.from(indexes.get(last) as Buffer)
    wrongLast.writeUInt32BE(wrongLast.readUInt32BE(16 + 24 + 12) + 1, 16 + 24 + 12) // second entry's count
    writeFileSync(join(dir, last), wrongLast)
    const log = await reopen(t, dataPath)
    assert.deepEqual(indexFiles(dir), indexes)
    await checkQueries(log, written)
  })

  test('MessageStore.open() extends stale indexes of the last and of sealed segments', async (t) => {
    const {dataPath, dir, written, indexes} = await closedDataset(t)
    const names = [...indexes.keys()]
    for (const name of [names[0], names[names.length - 1]]) {
      truncateSync(join(dir, name), (indexes.get(name) as Buffer).length - 3 * 24)
    }
    const log = await reopen(t, dataPath)
    assert.deepEqual(indexFiles(dir), indexes)
    await checkQueries(log, written)
  })

  test('PartitionLog seeks stay exact when a sealed index entry is wrong', async (t) => {
    const {dataPath, dir, written, indexes} = await closedDataset(t)
    const name = [...indexes.keys()][1]
    const bad = Buffer.from(indexes.get(name) as Buffer)
    // Shift a middle entry off its record boundary; open only checks the last entry.
    bad.writeUInt32BE(bad.readUInt32BE(16 + 5 * 24 + 4) + 3, 16 + 5 * 24 + 4)
    writeFileSync(join(dir, name), bad)
    await checkQueries(await reopen(t, dataPath), written)
  })

  test("MessageStore.open() rebuilds a damaged sealed segment's index around the damage, and seeks skip it", async (t) => {
    const {dataPath, dir, written} = await closedDataset(t)
    const [index] = [...indexFiles(dir).keys()]
    rmSync(join(dir, index))
    const segment = join(dir, index.replace('.idx', '.meta'))
    const start = Number(index.slice(0, 20))
    const bytes = readFileSync(segment)
    bytes[100] ^= 0xff
    writeFileSync(segment, bytes)
    const damaged = written.findLastIndex((w) => w.offset <= start + 100)
    const log = await reopen(t, dataPath)
    assert.deepEqual(
      log.damagedRanges().map((r) => [r.offset, r.bytes]),
      [[written[damaged].offset, written[damaged + 1].offset - written[damaged].offset]],
    )
    await checkQueries(
      log,
      written.filter((_, i) => i !== damaged),
    )
  })

  test('PartitionLog removes the index with a segment a failed group commit rolled back', async (t) => {
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 't-0')
    const ops = new FaultFileOps()
    const store = await openStore(t, dataPath, {maxSegmentBytes: 50, unflushThreshold: 0}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await put(log, '0123456789')
    const synced = indexFiles(dir)
    ops.failSyncs = 'EIO'
    ops.holdSyncs = true
    // 30-byte records: the one at 60 starts segment 60, with its own index, before the sync fails.
    const failed = Promise.allSettled([put(log, 'abcdefghij'), put(log, 'abcdefghij')])
    await waitFor(() => ops.heldSyncs.length > 0, {what: 'the fdatasync that will fail'})
    assert.deepEqual([...indexFiles(dir).keys()], ['00000000000000000000.idx', '00000000000000000060.idx'])
    ops.holdSyncs = false
    for (const held of ops.heldSyncs) held.open()
    assert.ok((await failed).every((r) => r.status === 'rejected'))
    assert.deepEqual(readdirSync(dir).sort(), ['00000000000000000000.idx', '00000000000000000000.meta'])
    assert.deepEqual(indexFiles(dir), synced, 'the sealed entry of segment 0 is rolled back too')
    ops.failSyncs = undefined
    await putMany(log, ['abcdefghij', 'abcdefghij'])
    assert.equal(log.info().messageCount, 3)
    assert.equal(await log.offsetBeforeEnd(2), 30)
    assert.equal(await log.offsetForTimestamp(0), 0)
  })
})

describe('side index entry encoding', () => {
  test('encodeEntries() writes each value as a big-endian uint64, as Buffer#writeUInt32BE pairs did, and decodeEntry() reads it back', () => {
    const values = [0, 1, 255, 256, 0x7fffffff, 0x80000000, 0xffffffff, 2 ** 32, 2 ** 32 + 1, 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER]
    let x = 99
    for (let i = 0; i < 300; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31
      values.push(x * 2 ** (i % 22) + (i % 7))
    }
    while (values.length % 3 !== 0) values.push(7)
    const expected = Buffer.alloc(values.length * 8)
    values.forEach((v, i) => {
      expected.writeUInt32BE(Math.floor(v / 2 ** 32), i * 8)
      expected.writeUInt32BE(v % 2 ** 32, i * 8 + 4)
    })
    assert.deepEqual(encodeEntries(values), expected)
    assert.deepEqual(encodeEntries(values, 2), expected.subarray(2 * 24))
    const encoded = encodeEntries(values)
    for (let e = 0; e < values.length / 3; e++) {
      assert.deepEqual(decodeEntry(encoded, e * 24), {pos: values[e * 3], count: values[e * 3 + 1], maxTs: values[e * 3 + 2]})
    }
  })
})
