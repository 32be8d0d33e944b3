/**
 * A plain in-memory model of one partition log (the records, where its segments start, where
 * it ends) and the checks that hold a real PartitionLog to it: every read, every seek by count
 * and time, the segment layout and the counts. The permutation matrix and the model-based test
 * of the log both use it, through the log's public interface only (append, appendRecords,
 * read, the seeks, info, segmentInfos), so they hold whatever the write path becomes.
 *
 * The rules it encodes are the log's documented ones (src/storage/partition-log.ts): a record
 * (or an appendRecords batch, never split) starts a new segment when the segment the next
 * record goes to already holds maxSegmentBytes or more; a read returns the bytes from its
 * offset to the first of offset + maxBytes, the end of that segment and the end of the log;
 * retention removes whole sealed segments, oldest first, never the last.
 */
import assert from 'node:assert/strict'
import {checksum} from '../../src/protocol/crc.js'
import {makeMessageId} from '../../src/protocol/message-id.js'
import type {PartitionLog} from '../../src/storage/index.js'
import type {Random} from '../helpers/seeded.js'
import {handRecord} from './support.js'

/** Message ids are stamped from here on (2024-01-01T00:00:00Z). */
export const BASE_MS = Date.UTC(2024, 0, 1)

export interface ModelRecord {
  offset: number
  id: bigint
  /** The time in the id (what the side index keeps). */
  ts: number
  /** The whole record as stored (header and payload). */
  bytes: Buffer
}

/** A message to append: its id's time, flag and payload. */
export interface Message {
  ts: number
  flag: number
  payload: Buffer
}

/** The state a failed batch rolls back to. */
export interface ModelCheckpoint {
  records: number
  segments: number[]
  end: number
}

export class LogModel {
  records: ModelRecord[] = []
  /** Start offsets of the segments, oldest first (the first is the log's start). */
  segments: number[]
  end: number
  private cache: Buffer | undefined
  private sequence = 0

  constructor(
    start: number,
    /** The topic's segment size now (a config reload changes it). */
    public maxSegmentBytes: number,
  ) {
    this.segments = [start]
    this.end = start
  }

  get minOffset(): number {
    return this.segments[0]
  }

  /** Bytes of the log from its start. */
  get data(): Buffer {
    this.cache ??= Buffer.concat(this.records.map((r) => r.bytes))
    return this.cache
  }

  /** A record for `message`, not yet in the model (ids are unique within the model). */
  record(message: Message): {id: bigint; bytes: Buffer} {
    this.sequence = (this.sequence + 1) & 0xfff
    const id = makeMessageId(message.ts, this.sequence & 0x3ff, this.sequence)
    return {id, bytes: handRecord(id, message.flag, message.payload)}
  }

  /** Add records at the end as the log does: one unit (a single append, or one appendRecords batch). */
  append(unit: Array<{id: bigint; ts: number; bytes: Buffer}>): number {
    const offset = this.end
    const tail = this.segments[this.segments.length - 1]
    if (offset - tail >= this.maxSegmentBytes && offset > tail) this.segments.push(offset)
    let at = offset
    for (const r of unit) {
      this.records.push({offset: at, id: r.id, ts: r.ts, bytes: r.bytes})
      at += r.bytes.length
    }
    this.end = at
    this.cache = undefined
    return offset
  }

  checkpoint(): ModelCheckpoint {
    return {records: this.records.length, segments: [...this.segments], end: this.end}
  }

  restore(to: ModelCheckpoint): void {
    this.records.length = to.records
    this.segments = [...to.segments]
    this.end = to.end
    this.cache = undefined
  }

  /** The end of the segment holding `offset`. */
  segmentEnd(offset: number): number {
    return this.segments.find((start) => start > offset) ?? this.end
  }

  /** Bytes [from, to) of the log. */
  slice(from: number, to: number): Buffer {
    return this.data.subarray(from - this.minOffset, to - this.minOffset)
  }

  /** The record starting at `offset`, or undefined when none does. */
  recordAt(offset: number): ModelRecord | undefined {
    const i = this.indexAtOrAfter(offset)
    return this.records[i]?.offset === offset ? this.records[i] : undefined
  }

  /** Records starting before `offset`. */
  countBefore(offset: number): number {
    return this.indexAtOrAfter(offset)
  }

  /** Offset of record number n from the start; the start for n <= 0, the end past the last. */
  offsetOfMessage(n: number): number {
    if (n >= this.records.length) return this.end
    if (n <= 0) return this.minOffset
    return this.records[n].offset
  }

  offsetForTimestamp(ms: number): number {
    return this.records.find((r) => r.ts >= ms)?.offset ?? this.end
  }

  offsetBeforeEnd(count: number): number {
    return this.offsetOfMessage(this.records.length - Math.max(0, count))
  }

  shiftOffset(offset: number, delta: number): number {
    const from = this.countBefore(offset)
    return this.offsetOfMessage(Math.min(this.records.length, Math.max(0, from + delta)))
  }

  countBetween(from: number, to: number): number {
    return to <= from ? 0 : this.countBefore(to) - this.countBefore(from)
  }

  nearestOffset(offset: number): number {
    if (offset < this.minOffset) return this.minOffset
    if (offset >= this.end) return this.end
    return this.segments.filter((start) => start <= offset).at(-1) as number
  }

  /** PartitionLog.removeSegmentsBefore: sealed segments that end at or before `offset`. */
  removeSegmentsBefore(offset: number): number {
    let removed = 0
    while (this.segments.length > 1 && this.segments[1] <= offset) {
      this.dropFirstSegment()
      removed += 1
    }
    return removed
  }

  /** Retention by size: the oldest sealed segments while the log holds more than `maxBytes`. */
  retainBytes(maxBytes: number): number[] {
    const removed: number[] = []
    while (this.segments.length > 1 && this.end - this.minOffset > maxBytes) {
      removed.push(this.minOffset)
      this.dropFirstSegment()
    }
    return removed
  }

  /** MessageStore.cutTail at a record boundary: later records and segments go (at the end: nothing changes). */
  cut(offset: number): void {
    if (offset === this.end) return
    this.records = this.records.filter((r) => r.offset < offset)
    const kept = this.segments.filter((start) => start < offset)
    this.segments = kept.length > 0 ? kept : [this.segments[0]]
    this.end = offset
    this.cache = undefined
  }

  /** Recovery after a torn last record: the log ends before it (its segment stays). */
  dropLastRecord(): void {
    const last = this.records.pop()
    assert.ok(last, 'a torn record needs a record')
    this.end = last.offset
    this.cache = undefined
  }

  private dropFirstSegment(): void {
    const next = this.segments[1]
    this.segments.shift()
    this.records = this.records.filter((r) => r.offset >= next)
    this.cache = undefined
  }

  /** Index of the first record starting at or after `offset`. */
  private indexAtOrAfter(offset: number): number {
    let lo = 0
    let hi = this.records.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.records[mid].offset < offset) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** A message with a time that mostly moves forwards (sometimes back, like a foreign clock) and a payload of 0..maxPayload bytes. */
export function randomMessage(random: Random, clock: {ms: number}, maxPayload: number): Message {
  clock.ms += random.chance(0.1) ? -random.int(0, 50) : random.int(0, 7)
  const size = random.chance(0.05) ? 0 : random.int(1, maxPayload)
  return {ts: clock.ms, flag: random.chance(0.2) ? random.int(0, 0x7fffffff) : 0, payload: random.bytes(size)}
}

/** How one turn's appends went: each unit's offset as append returned it, and each callback's outcome. */
export interface Turn {
  offsets: number[]
  /** Settles when every callback has been called: null for success, else the error's code. */
  outcomes: Promise<Array<string | null>>
}

/**
 * Append `units` to `log` in this event-loop turn (one message: append; several: one
 * appendRecords batch) and to `model`; checks that every offset append returns is the
 * model's. `onAck`, when given, runs in each callback (a throw there is the append's outcome).
 */
export function appendTurn(log: PartitionLog, model: LogModel, units: Message[][], onAck?: (err: Error | null) => void): Turn {
  const offsets: number[] = []
  const outcomes: Array<Promise<string | null>> = []
  for (const unit of units) {
    const records = unit.map((m) => ({...model.record(m), ts: m.ts}))
    let settle!: (outcome: string | null) => void
    outcomes.push(new Promise((resolve) => (settle = resolve)))
    const done = (err: Error | null) => {
      try {
        onAck?.(err)
      } catch (error) {
        // The log isolates its callbacks' throws: the failed check becomes this append's outcome.
        settle(`check failed: ${(error as Error).message}`)
        return
      }
      settle(err === null ? null : ((err as {code?: string}).code ?? err.message))
    }
    let offset: number
    if (unit.length === 1) {
      const [m] = unit
      offset = log.append(records[0].id, m.flag, m.payload, checksum(m.payload), done)
    } else {
      offset = log.appendRecords(Buffer.concat(records.map((r) => r.bytes)), records.length, done)
    }
    const expected = model.append(records)
    assert.equal(offset, expected, 'append returns the offset the model assigns')
    offsets.push(offset)
  }
  return {offsets, outcomes: Promise.all(outcomes)}
}

/** Every outcome of a turn is a success. */
export function assertStored(outcomes: Array<string | null>): void {
  assert.deepEqual(
    outcomes,
    outcomes.map(() => null),
    'every append is stored',
  )
}

/** info() and segmentInfos() agree with the model: bounds, counts, where segments start. */
export async function checkLayout(log: PartitionLog, model: LogModel): Promise<void> {
  const info = log.info()
  assert.deepEqual(
    {minOffset: info.minOffset, maxOffset: info.maxOffset, messageCount: info.messageCount, segmentCount: info.segmentCount},
    {minOffset: model.minOffset, maxOffset: model.end, messageCount: model.records.length, segmentCount: model.segments.length},
    "the log's bounds and counts are the model's",
  )
  const segments = await log.segmentInfos()
  assert.deepEqual(
    segments.map((s) => s.start),
    model.segments,
    'segments start where the model rolled',
  )
  for (const [i, s] of segments.entries()) {
    assert.equal(s.sizeBytes, (model.segments[i + 1] ?? model.end) - s.start, `segment ${s.start} holds the bytes up to the next`)
    assert.equal(s.sealed, i < segments.length - 1)
  }
}

/** One read of `log` holds the model's answer. */
export async function checkRead(log: PartitionLog, model: LogModel, offset: number, maxBytes: number): Promise<void> {
  const result = await log.read(offset, maxBytes)
  const what = `read(${offset}, ${maxBytes})`
  if (offset < model.minOffset) {
    assert.deepEqual(result, {kind: 'below', offset: model.minOffset}, what)
  } else if (offset >= model.end) {
    assert.deepEqual(result, {kind: 'end', end: model.end}, what)
  } else {
    assert.equal(result.kind, 'data', what)
    const to = Math.min(offset + maxBytes, model.segmentEnd(offset))
    if (result.kind === 'data') {
      assert.ok(result.data.equals(model.slice(offset, to)), `${what}: the bytes [${offset}, ${to}) of the log (got ${result.data.length} bytes)`)
      result.release?.()
    }
  }
}

/**
 * Reads at every record offset and at `inside` offsets inside records (or, with 'every byte',
 * at every offset of the log), each with a size drawn from small (part of a header) to past
 * the segment, and below and past the log.
 */
export async function checkReads(log: PartitionLog, model: LogModel, random: Random, inside: number | 'every byte' = 16): Promise<void> {
  const size = () => random.pick([1, 7, 20, 21, random.int(1, 300), 4096, 1 << 20])
  if (inside === 'every byte') {
    for (let offset = model.minOffset; offset < model.end; offset++) await checkRead(log, model, offset, size())
  } else {
    for (const r of model.records) await checkRead(log, model, r.offset, size())
    for (let i = 0; i < inside && model.end > model.minOffset; i++) await checkRead(log, model, random.int(model.minOffset, model.end - 1), size())
  }
  await checkRead(log, model, model.end, 100)
  await checkRead(log, model, model.end + random.int(1, 1000), 100)
  if (model.minOffset > 0) await checkRead(log, model, random.int(0, model.minOffset - 1), 100)
}

/** Seeks by time and by count, nearestOffset, and counts between offsets, at drawn points and the edges. */
export async function checkSeeks(log: PartitionLog, model: LogModel, random: Random, probes = 12): Promise<void> {
  const times = model.records.map((r) => r.ts)
  const edges = [0, BASE_MS - 1, Math.min(...times, BASE_MS), Math.max(...times, BASE_MS) + 1]
  for (const ms of [...edges, ...Array.from({length: probes}, () => (times.length > 0 ? random.pick(times) + random.int(-1, 1) : BASE_MS))]) {
    assert.equal(await log.offsetForTimestamp(ms), model.offsetForTimestamp(ms), `offsetForTimestamp(${ms})`)
  }
  const n = model.records.length
  for (const count of [0, 1, n - 1, n, n + 3, ...Array.from({length: probes}, () => random.int(0, n + 1))]) {
    assert.equal(await log.offsetBeforeEnd(count), model.offsetBeforeEnd(count), `offsetBeforeEnd(${count})`)
  }
  const boundary = () => (n === 0 || random.chance(0.2) ? model.end : random.pick(model.records).offset)
  const anywhere = () => random.int(Math.max(0, model.minOffset - 10), model.end + 10)
  for (let i = 0; i < probes; i++) {
    const from = boundary()
    const delta = random.pick([0, 1, -1, random.int(-n - 2, n + 2)])
    assert.equal(await log.shiftOffset(from, delta), model.shiftOffset(from, delta), `shiftOffset(${from}, ${delta})`)
    const [a, b] = [anywhere(), anywhere()]
    assert.equal(await log.countBetween(a, b), model.countBetween(a, b), `countBetween(${a}, ${b})`)
    const at = anywhere()
    assert.equal(log.nearestOffset(at), model.nearestOffset(at), `nearestOffset(${at})`)
  }
}
