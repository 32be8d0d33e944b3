/**
 * The storage contract under every setting that changes how the store gets there: flush mode
 * (threshold, group commit, interval) × segment size (tiny, so logs roll every few records,
 * and the default) × tail cache (none, a few KiB so blocks are evicted under the writer, the
 * default) × descriptor budget (tiny, so segment files are closed and opened again nearly per
 * operation, and the default). Each combination runs the same contract — append and read at
 * every offset, roll, recovery after close and after a torn tail, cut, retention, seeks by
 * count and time — against the plain model of log-model.ts (as nats-server's filestore tests
 * run under testFileStoreAllPermutations).
 *
 * `npm test` runs a pairwise subset (every pair of settings of any two dimensions at least
 * once); `npm run test:permutations` runs all 36. Data comes from a seed named on failure
 * (test/helpers/seeded.ts: META_TEST_SEED replays it).
 */
import assert from 'node:assert/strict'
import {appendFileSync, readdirSync, readFileSync, truncateSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {defaultBrokerConfig} from '../../src/broker/index.js'
import {DEFAULT_MAX_OPEN_FILES, DEFAULT_TAIL_CACHE_BYTES, MessageStore, type PartitionLog, type TopicStorageConfig} from '../../src/storage/index.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {PERMUTATIONS_ALL, seeds, withSeed, type Random} from '../helpers/seeded.js'
import {appendTurn, assertStored, BASE_MS, checkLayout, checkReads, checkSeeks, LogModel, randomMessage, type Message} from './log-model.js'

const FLUSH = {
  threshold: {unflushThreshold: 4, unflushIntervalMs: 3_600_000},
  'group commit': {unflushThreshold: 0, unflushIntervalMs: 3_600_000},
  interval: {unflushThreshold: 1_000_000, unflushIntervalMs: 5},
} as const
const SEGMENT_BYTES = {tiny: 512, default: defaultBrokerConfig().system.maxSegmentBytes} as const
const TAIL_CACHE_BYTES = {none: 0, tiny: 8 * 1024, default: DEFAULT_TAIL_CACHE_BYTES} as const
const OPEN_FILES = {tiny: 1, default: DEFAULT_MAX_OPEN_FILES} as const

interface Combination {
  flush: keyof typeof FLUSH
  segment: keyof typeof SEGMENT_BYTES
  cache: keyof typeof TAIL_CACHE_BYTES
  files: keyof typeof OPEN_FILES
}

const DIMENSIONS = {
  flush: Object.keys(FLUSH),
  segment: Object.keys(SEGMENT_BYTES),
  cache: Object.keys(TAIL_CACHE_BYTES),
  files: Object.keys(OPEN_FILES),
} as Record<keyof Combination, string[]>

const TOPIC = 'perm'
/** The biggest payload; records are 20 bytes more. */
const MAX_PAYLOAD = 120

/** Every combination of the dimensions, in order. */
function allCombinations(): Combination[] {
  let out: Array<Record<string, string>> = [{}]
  for (const [name, values] of Object.entries(DIMENSIONS)) out = out.flatMap((c) => values.map((v) => ({...c, [name]: v})))
  return out as unknown as Combination[]
}

/**
 * A small set of combinations in which every pair of values of any two dimensions appears
 * (greedy: each pick covers the most pairs not covered yet, the earliest on a tie).
 */
function pairwise(all: Combination[]): Combination[] {
  const names = Object.keys(DIMENSIONS) as Array<keyof Combination>
  const pairsOf = (c: Combination) => names.flatMap((a, i) => names.slice(i + 1).map((b) => `${a}=${c[a]},${b}=${c[b]}`))
  const uncovered = new Set(all.flatMap(pairsOf))
  const chosen: Combination[] = []
  while (uncovered.size > 0) {
    let best = all[0]
    let bestCount = -1
    for (const c of all) {
      const count = pairsOf(c).filter((p) => uncovered.has(p)).length
      if (count > bestCount) [best, bestCount] = [c, count]
    }
    for (const p of pairsOf(best)) uncovered.delete(p)
    chosen.push(best)
  }
  return chosen
}

function nameOf(c: Combination): string {
  return `flush ${c.flush}, segments ${c.segment}, tail cache ${c.cache}, descriptors ${c.files}`
}

/** A store on `dataPath` with the combination's settings, counting its file operations; closed after the test. */
async function openCombination(t: Cleanup, c: Combination, dataPath: string, ops = new FaultFileOps()): Promise<{store: MessageStore; ops: FaultFileOps}> {
  const config: TopicStorageConfig = {dataPath, ...FLUSH[c.flush], maxSegmentBytes: SEGMENT_BYTES[c.segment]}
  const store = await MessageStore.open({
    dataPath,
    topicConfig: () => config,
    tailCacheBytes: TAIL_CACHE_BYTES[c.cache],
    maxOpenFiles: OPEN_FILES[c.files],
    fileOps: ops,
  })
  t.after(() => store.close())
  return {store, ops}
}

interface Fixture {
  dataPath: string
  store: MessageStore
  ops: FaultFileOps
  log: PartitionLog
  model: LogModel
  random: Random
  clock: {ms: number}
}

/** A new log of the combination at a drawn start offset (0, small, or past 2^32). */
async function fixture(t: Cleanup, c: Combination, random: Random): Promise<Fixture> {
  const dataPath = await tmpDir(t)
  const {store, ops} = await openCombination(t, c, dataPath)
  const start = random.pick([0, 0, random.int(1, 5000), 2 ** 32 + random.int(0, 5000)])
  const log = store.getOrCreate(TOPIC, 0, start)
  return {dataPath, store, ops, log, model: new LogModel(start, SEGMENT_BYTES[c.segment]), random, clock: {ms: BASE_MS}}
}

/** One turn's worth of units: single appends and appendRecords batches of 2..6. */
function drawUnits(f: Fixture): Message[][] {
  return Array.from({length: f.random.int(1, 12)}, () =>
    Array.from({length: f.random.chance(0.25) ? f.random.int(2, 6) : 1}, () => randomMessage(f.random, f.clock, MAX_PAYLOAD)),
  )
}

/**
 * Append `turns` turns (some started before the previous one was acknowledged) and check the
 * flush policy at each acknowledgement: under group commit an append is acknowledged only
 * after an fdatasync that ended after it was made.
 */
async function fill(f: Fixture, c: Combination, turns: number): Promise<void> {
  const pending: Array<Promise<Array<string | null>>> = []
  for (let i = 0; i < turns; i++) {
    const syncsAtAppend = f.ops.syncsCompleted
    const turn = appendTurn(f.log, f.model, drawUnits(f), (err) => {
      if (err === null && c.flush === 'group commit') {
        assert.ok(f.ops.syncsCompleted > syncsAtAppend, 'group commit acknowledges after an fdatasync that covers the append')
      }
    })
    pending.push(turn.outcomes)
    if (f.random.chance(0.7)) {
      for (const outcomes of pending.splice(0)) assertStored(await outcomes)
    } else {
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  for (const outcomes of pending) assertStored(await outcomes)
}

/** What the flush policy leaves unflushed once the writer is idle, then flush() syncs the rest. */
async function checkFlushPolicy(f: Fixture, c: Combination): Promise<void> {
  if (c.flush === 'group commit') assert.equal(f.log.info().unflushedCount, 0, 'every acknowledged append is synced')
  else if (c.flush === 'threshold') {
    await waitFor(() => f.log.info().unflushedCount <= FLUSH.threshold.unflushThreshold, {what: 'the threshold fdatasync'})
  } else await waitFor(() => f.log.info().unflushedCount === 0, {what: 'the interval timer to fdatasync'})
  await f.log.flush()
  assert.equal(f.log.info().unflushedCount, 0)
}

/** The store kept to its descriptor budget, and a tiny budget really made it open files again. */
function checkDescriptors(f: Fixture, c: Combination): void {
  assert.ok(f.store.openFileCount <= OPEN_FILES[c.files], `${f.store.openFileCount} files open, budget ${OPEN_FILES[c.files]}`)
  if (c.files === 'tiny')
    assert.ok(
      [...f.ops.opened.values()].some((n) => n > 1),
      'the tiny budget closed a file that was opened again',
    )
}

/** The segment (`.meta`) and side index (`.idx`) files of the partition are the model's segments. */
function checkFiles(f: Fixture): void {
  const names = readdirSync(join(f.dataPath, `${TOPIC}-0`)).sort()
  const starts = (suffix: string) => names.filter((n) => n.endsWith(suffix)).map((n) => Number(n.slice(0, 20)))
  assert.deepEqual(starts('.meta'), f.model.segments, 'one .meta file per segment, named by its start')
  const indexed = starts('.idx')
  assert.ok(
    indexed.every((s) => f.model.segments.includes(s)),
    `no side index without its segment: ${indexed.join(', ')}`,
  )
}

async function checkAll(f: Fixture): Promise<void> {
  await checkLayout(f.log, f.model)
  await checkReads(f.log, f.model, f.random)
  await checkSeeks(f.log, f.model, f.random)
}

/** Close the store and open the directory again with the same settings; `f` then holds the new store and log. */
async function reopen(t: Cleanup, f: Fixture, c: Combination, damage?: () => void): Promise<void> {
  await f.store.close()
  damage?.()
  const {store} = await openCombination(t, c, f.dataPath, f.ops)
  const log = store.get(TOPIC, 0)
  assert.ok(log, 'the partition is recovered')
  f.store = store
  f.log = log
}

/** The last segment's file and the record in it that ends the log. */
function lastRecordFile(f: Fixture): {path: string; start: number} {
  const start = f.model.segments[f.model.segments.length - 1]
  return {path: join(f.dataPath, `${TOPIC}-0`, `${String(start).padStart(20, '0')}.meta`), start}
}

function contract(c: Combination): void {
  const run = (name: string, body: (t: Cleanup, f: Fixture) => Promise<void>) => {
    for (const seed of seeds({ci: 1, all: 2})) {
      test(`${name} (seed ${seed})`, (t) => withSeed(import.meta.url, seed, async (random) => body(t, await fixture(t, c, random))))
    }
  }

  run('appends are readable at every offset, acknowledged per the flush policy, within the descriptor budget', async (_t, f) => {
    await fill(f, c, 25)
    await checkLayout(f.log, f.model)
    // Every record offset and some inside records; every byte under test:permutations.
    await checkReads(f.log, f.model, f.random, PERMUTATIONS_ALL ? 'every byte' : 64)
    await checkSeeks(f.log, f.model, f.random)
    await checkFlushPolicy(f, c)
    checkDescriptors(f, c)
  })

  run('rolls where the segment size says, never splitting a batch, one file pair per segment', async (_t, f) => {
    await fill(f, c, 5)
    // Batches larger than a tiny segment: each is one unit in one segment.
    const big = Array.from({length: 3}, () => Array.from({length: 5}, () => randomMessage(f.random, f.clock, MAX_PAYLOAD * 2)))
    assertStored(await appendTurn(f.log, f.model, big).outcomes)
    await fill(f, c, 5)
    await checkLayout(f.log, f.model)
    if (c.segment === 'tiny') assert.ok(f.model.segments.length > 5, `${f.model.segments.length} segments`)
    else assert.equal(f.model.segments.length, 1)
    await f.log.flush()
    checkFiles(f)
    await checkReads(f.log, f.model, f.random)
  })

  run('recovers after close to the same log, appends acknowledged during close included, and appends on', async (t, f) => {
    await fill(f, c, 15)
    const before = f.log.info().messageCount
    // A turn still being written when close() starts is written, synced and acknowledged.
    const last = appendTurn(f.log, f.model, drawUnits(f))
    await reopen(t, f, c)
    assertStored(await last.outcomes)
    assert.ok(f.log.info().messageCount > before, 'the turn written at close is in the log')
    await checkAll(f)
    checkFiles(f)
    await fill(f, c, 5)
    await checkAll(f)
    checkDescriptors(f, c)
  })

  run('recovers after a torn last record: the log ends at the last whole record and appends on from there', async (t, f) => {
    await fill(f, c, 15)
    const torn = f.model.records[f.model.records.length - 1]
    const {path, start} = lastRecordFile(f)
    const keep = torn.offset - start + f.random.int(1, torn.bytes.length - 1)
    await reopen(t, f, c, () => {
      truncateSync(path, keep)
      // Sometimes what the disk held after the torn record too: zeros or garbage (not after a
      // record of under 4 payload bytes: zeros there can complete it into a valid record).
      if (torn.bytes.length >= 24 && f.random.chance(0.5))
        appendFileSync(path, f.random.chance(0.5) ? Buffer.alloc(f.random.int(1, 600)) : f.random.bytes(f.random.int(1, 600)))
    })
    f.model.dropLastRecord()
    await checkAll(f)
    await fill(f, c, 5)
    await checkAll(f)
    await reopen(t, f, c)
    await checkAll(f)
  })

  run('recovers after garbage past the last record: nothing is lost', async (t, f) => {
    await fill(f, c, 10)
    const {path} = lastRecordFile(f)
    await reopen(t, f, c, () => appendFileSync(path, f.random.chance(0.5) ? Buffer.alloc(f.random.int(1, 4096)) : f.random.bytes(f.random.int(1, 4096))))
    await checkAll(f)
    await fill(f, c, 3)
    await checkLayout(f.log, f.model)
  })

  run('cuts the tail at a record boundary (a segment start, inside a segment, the log start), keeps the cut bytes and appends on', async (t, f) => {
    await fill(f, c, 15)
    const boundaries = f.model.records.map((r) => r.offset)
    const at = f.random.pick([f.random.pick(boundaries), f.random.pick(f.model.segments), f.model.minOffset, boundaries[Math.floor(boundaries.length / 2)]])
    const cutBytes = f.model.slice(at, f.model.end)
    const messages = f.model.countBetween(at, f.model.end)
    const result = await f.store.cutTail(TOPIC, 0, at)
    assert.deepEqual({from: result.from, to: result.to, messages: result.messages}, {from: at, to: f.model.end, messages})
    f.model.cut(at)
    const log = f.store.get(TOPIC, 0)
    assert.ok(log)
    f.log = log
    await checkAll(f)
    if (result.file !== undefined) assert.ok(readFileSync(result.file).equals(cutBytes), 'the cut file holds exactly the cut bytes')
    await fill(f, c, 5)
    await checkAll(f)
    await reopen(t, f, c)
    await checkAll(f)
  })

  run('retention removes whole sealed segments, oldest first, never the last, and the log reopens so', async (t, f) => {
    await fill(f, c, 25)
    await f.log.flush()
    const upTo = f.random.int(f.model.minOffset, f.model.end)
    assert.equal(await f.log.removeSegmentsBefore(upTo), f.model.removeSegmentsBefore(upTo), `removeSegmentsBefore(${upTo})`)
    await checkAll(f)
    const maxBytes = f.random.int(0, f.model.end - f.model.minOffset)
    const outcome = await f.log.applyRetention({maxBytes: Math.max(1, maxBytes)}, 'delete')
    assert.deepEqual(
      outcome.removed.map((r) => r.start),
      f.model.retainBytes(Math.max(1, maxBytes)),
      `retention to ${maxBytes} bytes`,
    )
    assert.equal(outcome.minOffset, f.model.minOffset)
    await checkAll(f)
    checkFiles(f)
    await reopen(t, f, c)
    await checkAll(f)
    await fill(f, c, 3)
    await checkLayout(f.log, f.model)
  })

  run('seeks by count and by time land where the model says, before and after a reopen', async (t, f) => {
    await fill(f, c, 30)
    await checkSeeks(f.log, f.model, f.random, 40)
    await reopen(t, f, c)
    await checkSeeks(f.log, f.model, f.random, 40)
    checkDescriptors(f, c)
  })
}

const all = allCombinations()
for (const c of PERMUTATIONS_ALL ? all : pairwise(all)) describe(nameOf(c), () => contract(c))

describe('the permutation matrix', () => {
  test('the subset npm test runs covers every pair of settings', () => {
    const subset = pairwise(all)
    assert.equal(all.length, 36)
    assert.ok(subset.length < all.length / 2, `${subset.length} combinations`)
    const names = Object.keys(DIMENSIONS) as Array<keyof Combination>
    for (const [i, a] of names.entries()) {
      for (const b of names.slice(i + 1)) {
        for (const va of DIMENSIONS[a]) {
          for (const vb of DIMENSIONS[b])
            assert.ok(
              subset.some((c) => c[a] === va && c[b] === vb),
              `${a}=${va} with ${b}=${vb}`,
            )
        }
      }
    }
  })
})
