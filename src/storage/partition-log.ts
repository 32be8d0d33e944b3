/**
 * One partition's log: segments `<dir>/<20-digit start>.meta` holding MetaQ records back to
 * back (see protocol/message-set.ts for the record layout and layout.ts for names).
 *
 * Append path (the performance story, see DESIGN §3.2 and docs/architecture.md):
 *   append() assigns the offset synchronously and copies header + payload into the tail
 *   block (tail-cache.ts) → the store calls writePending() once at the end of the event-loop
 *   turn → one gather write per segment touched (normally exactly one) → the bytes are
 *   readable ("written means visible") → callbacks fire now (threshold mode) or after the
 *   fdatasync that covers them (group commit, flusher.ts).
 *
 * Rolling: when the segment the next record goes to holds >= maxSegmentBytes, that record
 * starts a new segment at `start + size` (checked per record while the batch is built, so a
 * segment exceeds the limit by at most one record, or one appendRecords batch, which is never
 * split). The old segment is sealed and fdatasynced.
 *
 * Failure (write-failure.ts): a failed write fails every callback of its batch, truncates the
 * log back to where the batch started (removing segments the batch created), and resets the
 * pending state; the log keeps serving reads and later appends. fdatasync: unsynced-files.ts.
 *
 * Damage (damage.ts): reads (read-path.ts) step over a segment's holes, and reads of a sealed
 * segment the scrub has not verified yet check their records first (verify.ts). With no damage and every
 * segment verified, the read path pays two field checks.
 */
import assert from 'node:assert'
import {MetaError} from '../protocol/errors.js'
import {messageIdTimestampOfHalves} from '../protocol/message-id.js'
import {int32At} from '../protocol/output-buffer.js'
import {checkRecordBatch, RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {StoreContext} from './context.js'
import {Flusher, type FlushHost} from './flusher.js'
import {damagedRangesOf, damageTotals, holeAt, type DamagedRange} from './damage.js'
import {countBefore, offsetForTimestamp, offsetOfMessage, viewOf, type LogView} from './index-queries.js'
import {ioError} from './io-error.js'
import type {RecoveredPartition} from './recovery.js'
import {
  applyRetentionRule,
  describeSegments,
  detachSealedPrefix,
  disposeSegments,
  type RetentionAction,
  type RetentionOutcome,
  type RetentionRule,
  type SegmentInfo,
} from './retention.js'
import {findSegmentIndex, Segment} from './segment.js'
import {createSegmentFile, writeSegment} from './segment-io.js'
import {readSlice} from './read-path.js'
import {commitEntries, IndexCursor, recordTimestamp} from './side-index.js'
import {PartitionTail} from './tail-cache.js'
import type {AppendCallback, PartitionInfo, ReadResult, TopicStorageConfig} from './types.js'
import {UnsyncedFiles} from './unsynced-files.js'
import {checkOffsetIn, verifySegment} from './verify.js'
import {checkpointOf, fireCallbacks, rollBackFiles, type LogCheckpoint} from './write-failure.js'

/**
 * An empty array for append callbacks that already holds objects in V8's terms: a fresh `[]`
 * holds small integers, so its first push of a function changes its kind, and optimized code
 * that has seen that change calls the generic push builtin for every push (~140 Ir per put)
 * instead of storing inline.
 */
function callbackList(): AppendCallback[] {
  const list: AppendCallback[] = [NO_CALLBACK]
  list.length = 0
  return list
}
const NO_CALLBACK: AppendCallback = () => {}

/** TypedArray#set, called directly (see appendOfHalves). */
const copyBytes = Uint8Array.prototype.set

/** Everything a log is built from (a recovered or freshly created directory). */
interface PartitionLogInit extends RecoveredPartition {
  topic: string
  partition: number
  dir: string
  config: TopicStorageConfig
  /** Directories whose entries must be fdatasynced with the first sync (a new partition). */
  newDirs?: string[]
}

/**
 * The log of one (topic, partition): append (offsets assigned at once, bytes written at the
 * end of the turn), read raw slices, MetaQ's nearest-offset, seeks by time and count, flush.
 * Obtained from {@link MessageStore}; never constructed directly.
 */
export class PartitionLog {
  readonly topic: string
  readonly partition: number
  /** The partition's directory. */
  readonly dir: string
  private config: TopicStorageConfig
  private readonly ctx: StoreContext
  private readonly segments: Segment[]
  private readonly tail: PartitionTail
  private readonly flusher: Flusher<LogCheckpoint>
  /** End of the bytes written to segment files (readable). */
  private writtenEnd: number
  /** End including pending bytes: the offset the next append gets. */
  private appendEnd: number
  /** Start of the segment the next appended record goes to. */
  private tailSegmentStart: number
  /** Offsets inside the pending range where a new segment starts. */
  private rollPoints: number[] = []
  private pendingCount = 0
  private pendingCallbacks = callbackList()
  /** Side index state of the segment the next record goes to (pending records included). */
  private cursor: IndexCursor
  /** Index state of segments sealed by the pending batch, by segment start. */
  private sealedCursors: Array<{start: number; cursor: IndexCursor}> = []
  private queued = false
  /** Segments and directories to fdatasync with the next sync. */
  private readonly unsynced: UnsyncedFiles
  private lastAppendMs: number
  private closed = false

  /** @internal Built by MessageStore. */
  constructor(init: PartitionLogInit, ctx: StoreContext) {
    this.topic = init.topic
    this.partition = init.partition
    this.dir = init.dir
    this.config = init.config
    this.ctx = ctx
    this.segments = init.segments
    assert(this.segments.length > 0, 'a log has at least one segment')
    for (let i = 1; i < this.segments.length; i++) {
      assert(this.segments[i].start === this.segments[i - 1].end, 'segments are contiguous: each starts where the previous ends')
    }
    this.tail = new PartitionTail(ctx.tailCache)
    const active = this.active
    this.writtenEnd = active.end
    this.appendEnd = active.end
    this.tailSegmentStart = active.start
    this.cursor = IndexCursor.of(active)
    this.lastAppendMs = init.lastModifiedMs
    this.unsynced = new UnsyncedFiles(init.newDirs ?? [])
    this.flusher = new Flusher(this.flushHost())
  }

  /** First readable offset: the start of the first segment. */
  get minOffset(): number {
    return this.segments[0].start
  }

  /**
   * End of the written log: every byte below it is readable. Appends made in the current
   * event-loop turn get offsets from here on and become readable at the end of the turn.
   */
  get maxOffset(): number {
    return this.writtenEnd
  }

  /**
   * The offset the next append gets: {@link maxOffset} plus the bytes appended in this turn
   * and not written yet.
   */
  get appendOffset(): number {
    return this.appendEnd
  }

  /** Start of the segment the last appended record went to (where the next one goes unless it rolls). */
  get appendSegmentStart(): number {
    return this.tailSegmentStart
  }

  /** The latest time stamped in a record's id (side index), 0 for an empty log. */
  get maxTimestamp(): number {
    let max = 0
    for (const segment of this.segments) max = Math.max(max, segment.maxTimestamp)
    return max
  }

  /** The flush policy and segment size in force. */
  get storageConfig(): TopicStorageConfig {
    return this.config
  }

  /** Point-in-time facts (stats, admin); `messageCount` is exact (side index). */
  info(): PartitionInfo {
    let messageCount = 0
    for (const segment of this.segments) messageCount += segment.messageCount
    return {
      topic: this.topic,
      partition: this.partition,
      minOffset: this.minOffset,
      maxOffset: this.writtenEnd,
      sizeBytes: this.writtenEnd - this.minOffset,
      messageCount,
      segmentCount: this.segments.length,
      unflushedCount: this.flusher.unflushedCount,
      lastAppendMs: this.lastAppendMs,
      ...damageTotals(this.segments),
    }
  }

  /** Every damaged range readers step over, oldest first (stats, admin). */
  damagedRanges(): DamagedRange[] {
    return this.segments.flatMap(damagedRangesOf)
  }

  /**
   * Append one message and return its offset (assigned now). The record is
   * `length | crc | id | flag | payload` (20-byte header, protocol/message-set.ts); it is
   * written with this turn's batch and `done` is called per the topic's flush policy.
   * Throws STORAGE_ERROR when the store is closed.
   */
  append(id: bigint, flag: number, payload: Uint8Array, crc: number, done: AppendCallback): number {
    return this.appendOfHalves(Number(BigInt.asIntN(32, id >> 32n)), Number(BigInt.asUintN(32, id)), flag, payload, crc, done)
  }

  /**
   * append() for the id whose big-endian int64 halves are `idHigh` (signed) and `idLow`
   * (unsigned), as MessageIdGenerator#nextHalves issues them: no bigint on the put path.
   */
  appendOfHalves(idHigh: number, idLow: number, flag: number, payload: Uint8Array, crc: number, done: AppendCallback): number {
    // payload.length, not byteLength, and set through copyBytes, not block.buf.set: in
    // optimized code on Node 20 those two were calls to V8's generic LoadIC per put (the
    // byteLength getter is not inlined there; `length` is).
    const length = payload.length
    const size = RECORD_HEADER_BYTES + length
    const offset = this.startRecords()
    const block = this.tail.reserve(offset, size)
    const pos = block.filled
    // The header of protocol/message-set.ts (length, crc, id, flag; big-endian).
    const view = block.view
    view.setInt32(pos, length)
    view.setInt32(pos + 4, crc)
    view.setInt32(pos + 8, idHigh)
    view.setUint32(pos + 12, idLow)
    view.setInt32(pos + 16, flag)
    copyBytes.call(block.buf, payload, pos + RECORD_HEADER_BYTES)
    block.filled = pos + size
    this.cursor.record(offset - this.tailSegmentStart, Math.max(0, messageIdTimestampOfHalves(idHigh, idLow)))
    this.endRecords(size, 1, done)
    return offset
  }

  /**
   * Append `count` whole, already formatted records (replication, transaction commit) as one
   * contiguous batch in one segment; returns the offset of its first byte. Throws
   * CHECKSUM_MISMATCH when a record's checksum is wrong, INVALID_ARGUMENT when `records` is
   * not exactly `count` whole records.
   */
  appendRecords(records: Buffer, count: number, done: AppendCallback): number {
    return this.appendBatch(records, count, undefined, done)
  }

  /**
   * Replication (src/broker/replication): append records fetched from a master at the
   * master's offsets, as {@link appendRecords} does, except that segments follow the
   * master's: a new segment starts here exactly when `segmentStarts` is true (the master's
   * segment begins at this offset) and never because of this log's maxSegmentBytes.
   */
  appendReplica(records: Buffer, count: number, segmentStarts: boolean, done: AppendCallback): number {
    return this.appendBatch(records, count, segmentStarts, done)
  }

  /**
   * Close the log and release its files for good (the directory is about to be renamed or
   * removed, e.g. a replica setting its log aside); reads and appends fail from now on.
   */
  async closeAndRelease(): Promise<void> {
    await this.close()
    for (const segment of this.segments) {
      this.ctx.fds.retire(segment.file)
      this.ctx.fds.retire(segment.indexFile)
    }
  }

  private appendBatch(records: Buffer, count: number, roll: boolean | undefined, done: AppendCallback): number {
    checkRecordBatch(records, count)
    const offset = this.startRecords(roll)
    const block = this.tail.reserve(offset, records.length)
    records.copy(block.buf, block.filled)
    block.filled += records.length
    const rel = offset - this.tailSegmentStart
    let pos = 0
    for (; pos < records.length; pos += RECORD_HEADER_BYTES + int32At(records, pos)) {
      this.cursor.record(rel + pos, recordTimestamp(records, pos))
    }
    assert(pos === records.length, 'a checked batch is whole records')
    this.endRecords(records.length, count, done)
    return offset
  }

  /**
   * Raw log bytes [offset, min(offset + maxBytes, end of the segment holding offset, start of
   * the next damaged range, end of the written log)). Never crosses a segment boundary or a
   * damaged range; may end mid-record. `below` when offset < minOffset, `end` when offset >=
   * maxOffset, `damaged` when offset lies in a damaged range (the next record is at its
   * `offset`). Rejects with STORAGE_ERROR on I/O failure or when the store is closed.
   */
  async read(offset: number, maxBytes: number): Promise<ReadResult> {
    this.checkOpen()
    if (!(maxBytes > 0)) throw MetaError.invalidArgument(`invalid read size "${maxBytes}": expected a positive number`)
    if (offset < this.minOffset) return {kind: 'below', offset: this.minOffset}
    if (offset >= this.writtenEnd) return {kind: 'end', end: this.writtenEnd}
    const segment = this.segments[findSegmentIndex(this.segments, offset)]
    const result = await readSlice(this.ctx, this, this.tail, segment, offset, maxBytes)
    return result.kind === 'again' ? this.read(offset, maxBytes) : result
  }

  /**
   * MetaQ's `offset` command: the start of the segment holding `offset`; minOffset below the
   * log; maxOffset at or after its end; the end of a damaged range inside one.
   */
  nearestOffset(offset: number): number {
    if (offset < this.minOffset) return this.minOffset
    if (offset >= this.writtenEnd) return this.writtenEnd
    const segment = this.segments[findSegmentIndex(this.segments, offset)]
    const hole = holeAt(segment.holes, offset - segment.start)
    if (hole !== undefined && segment.start + hole.from <= offset) return segment.start + hole.to
    return segment.start
  }

  /**
   * The `offset` command after a reader's checksum failure at or after `offset`: check the
   * records of the window a fetch from there returned (`windowBytes`), recording any damage,
   * then answer where to fetch from: past the damage when `offset` is in it, `offset` itself
   * when it is a record boundary (the next fetch stops at the damage), else
   * {@link nearestOffset}.
   */
  async checkOffset(offset: number, windowBytes: number): Promise<number> {
    this.checkOpen()
    if (offset < this.minOffset || offset >= this.writtenEnd) return this.nearestOffset(offset)
    return checkOffsetIn(this.ctx, this, this.segments[findSegmentIndex(this.segments, offset)], offset, windowBytes)
  }

  /** Offset of the first message whose timestamp (from its id) is >= `ms`; maxOffset when none. */
  offsetForTimestamp(ms: number): Promise<number> {
    return offsetForTimestamp(this.view(), ms)
  }

  /** Offset of the message `count` messages before the end; minOffset when fewer exist. */
  async offsetBeforeEnd(count: number): Promise<number> {
    const log = this.view()
    return offsetOfMessage(log, log.total - Math.max(0, count))
  }

  /**
   * Move from the record boundary `offset` by `delta` messages (negative: back), clamped to
   * [minOffset, maxOffset].
   */
  async shiftOffset(offset: number, delta: number): Promise<number> {
    const log = this.view()
    const from = await countBefore(log, offset)
    return offsetOfMessage(log, Math.min(log.total, Math.max(0, from + delta)))
  }

  /** Whole messages starting in [from, to) (consumer lag in messages); 0 when to <= from. */
  async countBetween(from: number, to: number): Promise<number> {
    if (to <= from) return 0
    const log = this.view()
    return (await countBefore(log, to)) - (await countBefore(log, from))
  }

  /** Every segment, oldest first, with its file's modification time (retention, admin). */
  segmentInfos(): Promise<SegmentInfo[]> {
    return describeSegments(this.segments)
  }

  /**
   * Retention: remove the sealed segments that end at or before `offset`, oldest first,
   * deleting each (or archiving it: `.meta.arc`, or `.meta.zip` with `archive-zip`) with its
   * side index. The active segment always stays. The log start moves at once; the files are
   * handled asynchronously before this resolves. Resolves to how many were removed.
   */
  async removeSegmentsBefore(offset: number, action: RetentionAction = 'delete'): Promise<number> {
    this.checkOpen()
    const detached = detachSealedPrefix(this.ctx, this.segments, offset)
    await disposeSegments(this.ctx, detached, action)
    return detached.length
  }

  /**
   * One retention pass: remove the oldest sealed segments that `rule` selects (older than its
   * age, or beyond its size bound) with `action`. Resolves once their files are handled.
   */
  async applyRetention(rule: RetentionRule, action: RetentionAction): Promise<RetentionOutcome> {
    this.checkOpen()
    return applyRetentionRule(this.ctx, this.segments, rule, action, () => !this.closed)
  }

  /** Bytes the log holds (end minus start). */
  get sizeBytes(): number {
    return this.writtenEnd - this.minOffset
  }

  /** Write what is pending, then fdatasync everything written. Rejects with the sync's MetaError. */
  async flush(): Promise<void> {
    if (this.appendEnd > this.writtenEnd) await this.ctx.nextWrite()
    return this.flusher.flush()
  }

  /** @internal Apply a reloaded topic config (flush policy, segment size). */
  updateConfig(config: TopicStorageConfig): void {
    this.config = config
    this.flusher.policyChanged()
  }

  /** @internal Periodic timer (threshold mode): fdatasync when anything is unflushed. */
  flushIfDirty(): void {
    if (!this.flusher.groupCommit && this.flusher.unflushedCount > 0) this.flusher.requestSync()
  }

  /** @internal Sealed segments whose records the scrub has not checked yet. */
  unverifiedSegments(): Segment[] {
    return this.segments.filter((segment) => !segment.verified && segment !== this.active)
  }

  /** @internal The scrub of one sealed segment (verify.ts); a no-op once it left the log. */
  async verify(segment: Segment, pace: (bytes: number) => Promise<void>): Promise<void> {
    if (this.closed || segment.verified || !this.segments.includes(segment)) return
    try {
      await verifySegment(this.ctx, this, segment, pace)
    } catch (error) {
      // Retention removed it meanwhile: nothing left to check.
      if (this.segments.includes(segment)) throw error
    }
  }

  /**
   * @internal The end-of-turn write: send the pending batch to the segment files. Returns
   * true when bytes became readable.
   */
  writePending(): boolean {
    this.queued = false
    if (this.appendEnd === this.writtenEnd) return false
    assert(this.appendEnd > this.writtenEnd, 'the append end never falls behind the written end')
    const checkpoint = this.checkpoint()
    const callbacks = this.pendingCallbacks
    const count = this.pendingCount
    this.pendingCallbacks = callbackList()
    this.pendingCount = 0
    const rolled = this.rollPoints.length > 0
    try {
      this.writeRange(this.writtenEnd, this.appendEnd)
    } catch (error) {
      const err = ioError(error, 'write', this.dir)
      this.ctx.log.limited('append-failed').error('append failed', {topic: this.topic, partition: this.partition, error: err.message})
      this.restore(checkpoint)
      this.fire(callbacks, err)
      return false
    }
    this.tail.commit()
    this.commitIndex()
    this.lastAppendMs = Date.now()
    this.flusher.written(count, callbacks)
    if (rolled) this.flusher.requestSync()
    return true
  }

  /** @internal Write what is pending, fdatasync, and stop accepting appends and reads. */
  async close(): Promise<void> {
    if (this.closed) return
    this.writePending()
    this.closed = true
    try {
      await this.flusher.flush()
    } catch (error) {
      this.ctx.log.error('final flush failed', {topic: this.topic, partition: this.partition, error: String(error)})
    }
    this.tail.clear()
  }

  /** The written state, for a side index query. */
  private view(): LogView {
    this.checkOpen()
    return viewOf(this.ctx, this.segments)
  }

  private get active(): Segment {
    return this.segments[this.segments.length - 1]
  }

  /**
   * Checks before appending records at the append end; returns their offset. A new segment
   * starts there when the active one reached maxSegmentBytes, or, when `roll` is given
   * (replication), exactly when `roll` is true.
   */
  private startRecords(roll?: boolean): number {
    this.checkOpen()
    const offset = this.appendEnd
    const full = roll ?? offset - this.tailSegmentStart >= this.config.maxSegmentBytes
    if (full && offset > this.tailSegmentStart) {
      this.cursor.seal(offset - this.tailSegmentStart)
      this.sealedCursors.push({start: this.tailSegmentStart, cursor: this.cursor})
      this.cursor = new IndexCursor()
      this.rollPoints.push(offset)
      this.tailSegmentStart = offset
    }
    return offset
  }

  private endRecords(bytes: number, count: number, done: AppendCallback): void {
    this.appendEnd += bytes
    this.pendingCount += count
    this.pendingCallbacks.push(done)
    if (!this.queued) {
      this.queued = true
      this.ctx.queueWrite(this)
    }
  }

  private checkOpen(): void {
    if (this.closed) {
      throw new MetaError('STORAGE_ERROR', `partition "${this.topic}-${this.partition}" is closed`)
    }
  }

  /** Write pending bytes [from, to), starting new segments at the roll points. */
  private writeRange(from: number, to: number): void {
    assert(from === this.writtenEnd && to > from, 'a write continues the log at its written end')
    let pos = from
    for (const rollAt of this.rollPoints) {
      assert(rollAt >= pos && rollAt < to, 'roll points are ascending and inside the pending range')
      if (rollAt > pos) this.writeSegment(this.active, pos, rollAt)
      this.roll(rollAt)
      pos = rollAt
    }
    this.rollPoints = []
    this.writeSegment(this.active, pos, to)
    assert(this.active.end === to, 'the written end is the end of the last segment')
    this.writtenEnd = to
  }

  private writeSegment(segment: Segment, from: number, to: number): void {
    assert(from === segment.end && to > from, 'a write lands at the end of the segment')
    writeSegment(this.ctx, segment, this.tail.pending(from, to), from)
    segment.size = to - segment.start
    this.unsynced.written(segment)
  }

  /** Seal the active segment and start a new one at `start` (its end). */
  private roll(start: number): void {
    assert(start === this.active.end && start > this.active.start, 'a new segment starts at the end of a non-empty one')
    const next = new Segment(start, this.dir, 0)
    createSegmentFile(this.ctx.fds, next)
    this.segments.push(next)
    this.unsynced.dirChanged(this.dir)
    this.ctx.rolled(this)
  }

  /** Write the pending batch's side index entries (after its data) and take its totals. */
  private commitIndex(): void {
    for (const {start, cursor} of this.sealedCursors) {
      commitEntries(this.ctx, this.segments[findSegmentIndex(this.segments, start)], cursor)
    }
    this.sealedCursors = []
    commitEntries(this.ctx, this.active, this.cursor)
  }

  private checkpoint(): LogCheckpoint {
    return checkpointOf(this.active, this.writtenEnd)
  }

  /** Drop everything after `to`: segments created since, bytes past it, pending appends. */
  private restore(to: LogCheckpoint): void {
    const active = rollBackFiles(this.ctx, this.segments, to, this.writtenEnd)
    this.unsynced.dropRetired()
    this.writtenEnd = to.end
    this.appendEnd = to.end
    this.tailSegmentStart = active.start
    this.rollPoints = []
    this.cursor = IndexCursor.of(active)
    this.sealedCursors = []
    this.tail.clear()
  }

  private fire(callbacks: readonly AppendCallback[], err: MetaError | null): void {
    fireCallbacks(this.ctx.log, this, callbacks, err)
  }

  private flushHost(): FlushHost<LogCheckpoint> {
    return {
      policy: () => this.config,
      checkpoint: () => this.checkpoint(),
      syncFiles: () => this.unsynced.sync(this.ctx),
      syncFailed: (err) => {
        this.ctx.log.error('fdatasync failed', {topic: this.topic, partition: this.partition, error: err.message})
      },
      rollBack: (to, err) => {
        this.ctx.log.error('fdatasync failed, rolling back unacknowledged appends', {
          topic: this.topic,
          partition: this.partition,
          offset: to.end,
          error: err.message,
        })
        const pending = this.pendingCallbacks
        this.pendingCallbacks = callbackList()
        this.pendingCount = 0
        this.restore(to)
        this.fire(pending, err)
      },
      fire: (callbacks, err) => this.fire(callbacks, err),
    }
  }
}
