/**
 * What a partition log does when a write or a group-commit fdatasync fails: the written state
 * it rolls back to (a checkpoint taken before the batch), the files cut back to it, and the
 * batch's callbacks failed one by one. The log itself (partition-log.ts) resets its pending
 * state around these.
 */
import assert from 'node:assert'
import type {MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import type {StoreContext} from './context.js'
import type {Checkpoint} from './flusher.js'
import {removeSegmentFiles, truncateSegment} from './segment-io.js'
import type {Segment} from './segment.js'
import {IndexCursor, truncateEntries} from './side-index.js'
import type {AppendCallback} from './types.js'

/** The written state to roll back to after a failed write or group-commit fdatasync. */
export interface LogCheckpoint extends Checkpoint {
  /** Start of the segment that was active, and its index state then. */
  readonly activeStart: number
  readonly messageCount: number
  readonly maxTimestamp: number
  readonly lastEntryPos: number
  readonly indexEntries: number
}

/** The checkpoint of a log whose written end is `end` and whose last segment is `active`. */
export function checkpointOf(active: Segment, end: number): LogCheckpoint {
  assert(end === active.end, 'the written end of a log is the end of its last segment')
  return {
    end,
    activeStart: active.start,
    messageCount: active.messageCount,
    maxTimestamp: active.maxTimestamp,
    lastEntryPos: active.lastEntryPos,
    indexEntries: active.indexEntries,
  }
}

/**
 * Cut `segments` back to `to`: remove the segments created since, truncate the one that was
 * active (data and side index) and restore its index totals. Returns the active segment.
 */
export function rollBackFiles(ctx: StoreContext, segments: Segment[], to: LogCheckpoint, writtenEnd: number): Segment {
  assert(to.end <= writtenEnd, 'a rollback never moves the log end forward')
  while (segments.length > 1 && segments[segments.length - 1].start > to.activeStart) {
    removeSegmentFiles(ctx, segments.pop() as Segment)
  }
  const active = segments[segments.length - 1]
  assert(active.start === to.activeStart && to.end >= active.start, 'the checkpoint lies in the segment that was active')
  // Always truncate: a failed write may have left bytes past the size we recorded.
  truncateSegment(ctx, active, to.end - active.start)
  truncateEntries(ctx, active, to.indexEntries)
  new IndexCursor(to.messageCount, to.maxTimestamp, to.lastEntryPos).applyTo(active)
  return active
}

/** Call each callback with `err`, isolating throws (logged). */
export function fireCallbacks(log: Logger, where: {topic: string; partition: number}, callbacks: readonly AppendCallback[], err: MetaError | null): void {
  for (const callback of callbacks) {
    try {
      callback(err)
    } catch (error) {
      log.error('append callback threw', {topic: where.topic, partition: where.partition, error: String(error)})
    }
  }
}
