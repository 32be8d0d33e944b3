/**
 * The partition log against a plain in-memory model (log-model.ts), one random operation
 * sequence per seed: turns of appends and appendRecords batches (some turns written while
 * the one before is still being acknowledged), reads and seeks, flush, close and reopen, a
 * torn last record, a full disk and a failing disk (data writes, side index writes,
 * fdatasync), cuts, retention by offset, size and age, and config reloads that change the
 * segment size and flush mode. The store's settings (flush mode, segment size, tail cache,
 * descriptor budget, start offset) are drawn too. After every step the log is checked against
 * the model; a failure names the seed and the last steps (META_TEST_SEED=<seed> replays it).
 */
import assert from 'node:assert/strict'
import {truncateSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'node:test'
import {MessageStore, type PartitionLog, type TopicStorageConfig} from '../../src/storage/index.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {scaleFor, seeds, withSeed, type Random, type Steps} from '../helpers/seeded.js'
import {appendTurn, assertStored, BASE_MS, checkLayout, checkRead, checkReads, checkSeeks, LogModel, randomMessage, type Message} from './log-model.js'

const TOPIC = 'model'
const FLUSH_MODES = [
  {unflushThreshold: 3, unflushIntervalMs: 3_600_000},
  {unflushThreshold: 0, unflushIntervalMs: 3_600_000},
  {unflushThreshold: 1_000_000, unflushIntervalMs: 2},
]

/** Operations and how often each is drawn. */
const OPERATIONS = {
  turn: 30,
  read: 14,
  seek: 5,
  layout: 4,
  flush: 4,
  reopen: 3,
  tear: 2,
  'disk full': 3,
  'index write fails': 2,
  'fdatasync fails': 3,
  cut: 2,
  retention: 3,
  reload: 2,
}

class Run {
  store!: MessageStore
  log!: PartitionLog
  readonly ops = new FaultFileOps()
  readonly clock = {ms: BASE_MS}
  /** Turns written and not yet acknowledged. */
  private pending: Array<Promise<Array<string | null>>> = []

  constructor(
    private readonly t: Cleanup,
    readonly random: Random,
    readonly dataPath: string,
    readonly config: TopicStorageConfig,
    readonly options: {tailCacheBytes: number; maxOpenFiles: number},
    readonly model: LogModel,
  ) {}

  async open(): Promise<void> {
    this.store = await MessageStore.open({dataPath: this.dataPath, topicConfig: () => ({...this.config}), fileOps: this.ops, ...this.options})
    const store = this.store
    this.t.after(() => store.close())
  }

  get groupCommit(): boolean {
    return this.config.unflushThreshold <= 0
  }

  units(max = 8): Message[][] {
    return Array.from({length: this.random.int(1, max)}, () =>
      Array.from({length: this.random.chance(0.2) ? this.random.int(2, 5) : 1}, () => randomMessage(this.random, this.clock, this.random.pick([10, 60, 300]))),
    )
  }

  /** One turn of appends; under group commit each acknowledgement follows an fdatasync that ended after the turn began. */
  turn(units = this.units()): Promise<Array<string | null>> {
    const syncsAtAppend = this.ops.syncsCompleted
    const groupCommit = this.groupCommit
    return appendTurn(this.log, this.model, units, (err) => {
      if (err === null && groupCommit) assert.ok(this.ops.syncsCompleted > syncsAtAppend, 'group commit acknowledged before an fdatasync covered the append')
    }).outcomes
  }

  async settle(): Promise<void> {
    for (const outcomes of this.pending.splice(0)) assertStored(await outcomes)
  }

  async step(op: keyof typeof OPERATIONS, steps: Steps): Promise<void> {
    const {random, model} = this
    if (op === 'turn') {
      const outcomes = this.turn()
      steps.step(`turn → end ${model.end}, ${model.segments.length} segments`)
      this.pending.push(outcomes)
      // Sometimes the next operation starts while this turn is still being acknowledged.
      if (random.chance(0.6) || this.pending.length > 2) await this.settle()
      else await new Promise((resolve) => setImmediate(resolve))
      return
    }
    if (op === 'read') {
      const offset = random.int(Math.max(0, model.minOffset - 5), model.end + 5)
      const maxBytes = random.pick([1, 19, 20, random.int(1, 500), 1 << 20])
      steps.step(`read(${offset}, ${maxBytes})`)
      return checkRead(this.log, model, offset, maxBytes)
    }
    await this.settle()
    if (op === 'seek') {
      steps.step('seeks')
      return checkSeeks(this.log, model, random, 4)
    }
    if (op === 'layout') {
      steps.step('layout')
      return checkLayout(this.log, model)
    }
    if (op === 'flush') {
      steps.step('flush')
      await this.log.flush()
      assert.equal(this.log.info().unflushedCount, 0, 'flush() leaves nothing unflushed')
      return
    }
    if (op === 'reopen') {
      steps.step('close and reopen')
      await this.reopen()
      return checkLayout(this.log, model)
    }
    if (op === 'tear') {
      const last = model.records.at(-1)
      const lastStart = model.segments[model.segments.length - 1]
      if (last === undefined || last.offset < lastStart) return
      const keep = last.offset - lastStart + random.int(1, last.bytes.length - 1)
      steps.step(`tear the record at ${last.offset} (${last.bytes.length} bytes) after ${keep - (last.offset - lastStart)} bytes`)
      await this.reopen(() => truncateSync(join(this.dataPath, `${TOPIC}-0`, `${String(lastStart).padStart(20, '0')}.meta`), keep))
      model.dropLastRecord()
      return checkLayout(this.log, model)
    }
    if (op === 'disk full') {
      const code = random.pick(['ENOSPC', 'EIO'])
      const turns = random.int(1, 3)
      this.ops.failWrites = code
      this.ops.partialWriteBytes = random.pick([0, random.int(1, 60)])
      steps.step(`${code} on the writes of ${turns} turns (${this.ops.partialWriteBytes} bytes written first)`)
      const answers: Array<Promise<Array<string | null>>> = []
      for (let i = 0; i < turns; i++) {
        const checkpoint = model.checkpoint()
        answers.push(this.turn())
        // The turn's write (queued before this) fails and cuts the log back: the next turn appends there.
        await new Promise((resolve) => setImmediate(resolve))
        model.restore(checkpoint)
      }
      const outcomes = (await Promise.all(answers)).flat()
      this.ops.failWrites = undefined
      this.ops.partialWriteBytes = 0
      const expected = code === 'ENOSPC' ? 'DISK_FULL' : 'STORAGE_ERROR'
      assert.deepEqual(
        outcomes,
        outcomes.map(() => expected),
        'a failed write fails its whole batch',
      )
      return checkLayout(this.log, model)
    }
    if (op === 'index write fails') {
      steps.step('side index writes fail for a turn')
      this.ops.paths = /\.idx$/
      this.ops.failWrites = 'EIO'
      const outcomes = await this.turn()
      this.ops.failWrites = undefined
      this.ops.paths = undefined
      // The data is written; the index is marked broken and seeks walk the segment instead.
      assertStored(outcomes)
      return checkSeeks(this.log, model, random, 4)
    }
    if (op === 'fdatasync fails') {
      const turns = random.int(1, 3)
      steps.step(`fdatasync fails under ${turns} turns (${this.groupCommit ? 'group commit' : 'threshold'})`)
      const checkpoint = model.checkpoint()
      this.ops.failSyncs = 'EIO'
      // Held, so that every turn is written before the fdatasync covering the first one fails.
      this.ops.holdSyncs = true
      const answers: Array<Promise<Array<string | null>>> = []
      for (let i = 0; i < turns; i++) {
        answers.push(this.turn())
        await new Promise((resolve) => setImmediate(resolve))
      }
      if (this.groupCommit) await waitFor(() => this.ops.heldSyncs.length > 0, {what: 'the fdatasync covering the first turn'})
      this.ops.holdSyncs = false
      for (const held of this.ops.heldSyncs.splice(0)) held.open()
      const outcomes = (await Promise.all(answers)).flat()
      if (this.groupCommit) {
        assert.deepEqual(
          outcomes,
          outcomes.map(() => 'STORAGE_ERROR'),
          'group commit fails the appends a failed fdatasync covered',
        )
        model.restore(checkpoint)
      } else {
        assertStored(outcomes)
        await assert.rejects(this.log.flush(), {code: 'STORAGE_ERROR'})
      }
      this.ops.failSyncs = undefined
      // A flush() may still be failed by an fdatasync that began before the disk recovered
      // (the interval timer's): the next one succeeds.
      await waitFor(
        () =>
          this.log.flush().then(
            () => true,
            () => false,
          ),
        {what: 'a flush after the disk recovered'},
      )
      assert.equal(this.log.info().unflushedCount, 0, 'the next fdatasync covers what the failed one did not')
      return checkLayout(this.log, model)
    }
    if (op === 'cut') {
      const at = random.pick([model.minOffset, model.end, ...model.segments, ...model.records.map((r) => r.offset)])
      steps.step(`cut at ${at}`)
      const result = await this.store.cutTail(TOPIC, 0, at)
      assert.equal(result.messages, model.countBetween(at, model.end))
      model.cut(at)
      const log = this.store.get(TOPIC, 0)
      assert.ok(log)
      this.log = log
      return checkLayout(this.log, model)
    }
    if (op === 'retention') {
      await this.log.flush()
      const how = random.pick(['offset', 'size', 'age'] as const)
      if (how === 'offset') {
        const upTo = random.int(model.minOffset, model.end + 10)
        steps.step(`removeSegmentsBefore(${upTo})`)
        assert.equal(await this.log.removeSegmentsBefore(upTo), model.removeSegmentsBefore(upTo))
      } else if (how === 'size') {
        const maxBytes = random.int(1, Math.max(1, model.end - model.minOffset))
        steps.step(`retention to ${maxBytes} bytes`)
        const outcome = await this.log.applyRetention({maxBytes}, random.pick(['delete', 'archive'] as const))
        assert.deepEqual(
          outcome.removed.map((r) => r.start),
          model.retainBytes(maxBytes),
        )
      } else {
        steps.step('retention by age: every sealed segment is old')
        const sealed = model.segments.slice(0, -1)
        const outcome = await this.log.applyRetention({maxAgeMs: 1000, nowMs: Date.now() + 3_600_000}, 'delete')
        assert.deepEqual(
          outcome.removed.map((r) => [r.start, r.reason]),
          sealed.map((start) => [start, 'age']),
        )
        model.removeSegmentsBefore(Number.MAX_SAFE_INTEGER)
      }
      return checkLayout(this.log, model)
    }
    // reload: another segment size, another flush mode.
    this.config.maxSegmentBytes = random.pick([64, 300, 2000, 1 << 30])
    Object.assign(this.config, random.pick(FLUSH_MODES))
    model.maxSegmentBytes = this.config.maxSegmentBytes
    steps.step(`reload: segments ${this.config.maxSegmentBytes}, threshold ${this.config.unflushThreshold}`)
    this.store.reloadConfig()
  }

  async reopen(damage?: () => void): Promise<void> {
    await this.store.close()
    damage?.()
    await this.open()
    const log = this.store.get(TOPIC, 0)
    assert.ok(log, 'the partition is recovered')
    this.log = log
  }

  /** Everything, at every offset: reads, seeks, layout, then again after a reopen. */
  async checkAll(steps: Steps): Promise<void> {
    await this.settle()
    steps.step('final checks')
    await checkLayout(this.log, this.model)
    await checkReads(this.log, this.model, this.random)
    await checkSeeks(this.log, this.model, this.random, 20)
    await this.reopen()
    await checkLayout(this.log, this.model)
    await checkReads(this.log, this.model, this.random)
    assert.ok(this.store.openFileCount <= this.options.maxOpenFiles, `${this.store.openFileCount} files open, budget ${this.options.maxOpenFiles}`)
  }
}

for (const seed of seeds({ci: 4, all: 40})) {
  test(`PartitionLog follows the model through a random sequence of operations (seed ${seed})`, (t) =>
    withSeed(import.meta.url, seed, async (random, steps) => {
      const dataPath = await tmpDir(t)
      const config: TopicStorageConfig = {dataPath, ...random.pick(FLUSH_MODES), maxSegmentBytes: random.pick([64, 300, 2000, 1 << 30])}
      const options = {tailCacheBytes: random.pick([0, 4096, 64 * 1024, 64 << 20]), maxOpenFiles: random.pick([1, 2, 3, 1024])}
      const start = random.pick([0, random.int(1, 10_000), 2 ** 40 + random.int(0, 10_000)])
      steps.step(`settings: ${JSON.stringify({...config, dataPath: undefined, ...options, start})}`)
      const run = new Run(t, random, dataPath, config, options, new LogModel(start, config.maxSegmentBytes))
      await run.open()
      run.log = run.store.getOrCreate(TOPIC, 0, start)
      const count = scaleFor({ci: 120, all: 600})
      for (let i = 0; i < count; i++) await run.step(random.weighted(OPERATIONS), steps)
      await run.checkAll(steps)
    }))
}
