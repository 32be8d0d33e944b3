/**
 * Seeking by message count and by time with the side index (format in side-index.ts).
 *
 * Every query works on a {@link LogView} taken when it starts (appends may continue) and
 * has the same shape: pick the segment (by running message counts or maximum timestamps),
 * binary-search its index file for the last entry before the target, then walk the records
 * from that entry to the next one (at most one index interval). A walk that cannot reach its
 * target means the index disagrees with the segment: it is marked broken and the segment
 * is walked from its start instead. Walks step over the segment's known damaged ranges.
 */
import type {StoreContext} from './context.js'
import {INDEX_ENTRY_BYTES} from './layout.js'
import {readFully, scanAround} from './scan.js'
import {findSegmentIndex, type Segment} from './segment.js'
import {withFile} from './segment-io.js'
import {decodeEntry, entryOffset, markBroken, recordTimestamp, START_ENTRY, type IndexEntry} from './side-index.js'

/** A segment as it was when the query started. */
interface SegmentView {
  segment: Segment
  start: number
  size: number
  count: number
  maxTs: number
  entries: number
}

/** A partition log as it was when the query started. */
export interface LogView {
  ctx: StoreContext
  segments: SegmentView[]
  /** End of the written log. */
  end: number
  /** Messages in the log. */
  total: number
}

/** Snapshot one segment (written state) for a query. */
function segmentView(segment: Segment): SegmentView {
  return {
    segment,
    start: segment.start,
    size: segment.size,
    count: segment.messageCount,
    maxTs: segment.maxTimestamp,
    entries: segment.indexEntries,
  }
}

/** Snapshot `segments` (written state) for a query. */
export function viewOf(ctx: StoreContext, segments: readonly Segment[]): LogView {
  const views = segments.map(segmentView)
  const last = views[views.length - 1]
  return {ctx, segments: views, end: last.start + last.size, total: views.reduce((n, v) => n + v.count, 0)}
}

/** Messages that start before `offset` (clamped to the log). */
export async function countBefore(log: LogView, offset: number): Promise<number> {
  if (offset >= log.end) return log.total
  const first = log.segments[0]
  if (offset <= first.start) return 0
  const i = findSegmentIndex(log.segments, offset)
  const view = log.segments[i]
  let base = 0
  for (let j = 0; j < i; j += 1) base += log.segments[j].count
  const rel = offset - view.start
  if (rel === 0) return base
  return base + (await seek(log.ctx, view, (e) => e.pos <= rel, countUntil(rel)))
}

/** Offset of message number `n` (0-based from the first message); the end when n >= total. */
export async function offsetOfMessage(log: LogView, n: number): Promise<number> {
  if (n >= log.total) return log.end
  if (n <= 0) return log.segments[0].start
  let base = 0
  for (const view of log.segments) {
    if (n < base + view.count) {
      const local = n - base
      return view.start + (await seek(log.ctx, view, (e) => e.count <= local, nth(local)))
    }
    base += view.count
  }
  return log.end
}

/** Offset of the first message whose timestamp is >= ms; the end when none. */
export async function offsetForTimestamp(log: LogView, ms: number): Promise<number> {
  for (const view of log.segments) {
    if (view.count === 0 || view.maxTs < ms) continue
    return view.start + (await seek(log.ctx, view, (e) => e.maxTs < ms, firstAtOrAfter(ms)))
  }
  return log.end
}

/**
 * A walker visits records (relative position, timestamp, number within the segment) and
 * returns the answer once it has one.
 */
type Walker = (pos: number, ts: number, n: number) => number | undefined
/** What a walker answers when the walk ends without an answer (undefined: index broken). */
type WalkEnd = (reached: number, n: number) => number | undefined

interface Goal {
  walker: Walker
  atEnd: WalkEnd
}

/** Count records starting before `rel`. */
function countUntil(rel: number): Goal {
  return {walker: (pos, _ts, n) => (pos >= rel ? n : undefined), atEnd: (reached, n) => (reached >= rel ? n : undefined)}
}

/** The position of record number `local`. */
function nth(local: number): Goal {
  return {walker: (pos, _ts, n) => (n === local ? pos : undefined), atEnd: () => undefined}
}

/** The position of the first record with timestamp >= ms. */
function firstAtOrAfter(ms: number): Goal {
  return {walker: (pos, ts) => (ts >= ms ? pos : undefined), atEnd: () => undefined}
}

/** Thrown by a walker's visitor to stop the scan once it has its answer. */
class Found {
  constructor(readonly value: number) {}
}

/**
 * Find the last index entry matching `before` (a prefix of the entries does), walk from it
 * to the next entry with `goal`, and return the walker's answer (a relative position or a
 * count). Falls back to walking the whole segment when the index is unusable.
 */
async function seek(ctx: StoreContext, view: SegmentView, before: (e: IndexEntry) => boolean, goal: Goal): Promise<number> {
  const segment = view.segment
  if (segment.indexState === 'ok' && view.entries > 0) {
    const {from, to} = await bracket(ctx, view, before)
    const answer = await walk(ctx, view, from, to, goal)
    if (answer !== undefined) return answer
    markBroken(ctx, segment, new Error('an entry does not match the records of the segment'))
  }
  const answer = await walk(ctx, view, START_ENTRY, view.size, goal)
  if (answer !== undefined) return answer
  // The segment itself ends early (concurrently truncated): answer its end.
  return view.size
}

/** The last entry matching `before` (or the first entry) and the position of the next one. */
async function bracket(ctx: StoreContext, view: SegmentView, before: (e: IndexEntry) => boolean): Promise<{from: IndexEntry; to: number}> {
  let lo = 0
  let hi = view.entries - 1
  const entries = new Map<number, IndexEntry>()
  const entry = async (i: number): Promise<IndexEntry> => {
    let e = entries.get(i)
    if (e === undefined) {
      e = await readEntry(ctx, view.segment, i)
      entries.set(i, e)
    }
    return e
  }
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1
    if (before(await entry(mid))) lo = mid
    else hi = mid - 1
  }
  const from = await entry(lo)
  const to = lo + 1 < view.entries ? (await entry(lo + 1)).pos : view.size
  return {from, to: Math.min(to, view.size)}
}

function readEntry(ctx: StoreContext, segment: Segment, i: number): Promise<IndexEntry> {
  return withFile(ctx, segment.indexFile, 'read', async (fd) => {
    const buf = Buffer.allocUnsafe(INDEX_ENTRY_BYTES)
    const got = await readFully(ctx.ops, fd, buf, 0, buf.length, entryOffset(i))
    if (got < buf.length) throw new Error(`index entry ${i} is missing`)
    return decodeEntry(buf, 0)
  })
}

/** Walk records of `view` in [from.pos, to) with `goal`; undefined when it found nothing. */
async function walk(ctx: StoreContext, view: SegmentView, from: IndexEntry, to: number, goal: Goal): Promise<number | undefined> {
  let n = from.count
  const visit = (chunk: Buffer, pos: number, _length: number, filePos: number): void => {
    const answer = goal.walker(filePos, recordTimestamp(chunk, pos), n)
    if (answer !== undefined) throw new Found(answer)
    n += 1
  }
  return withFile(ctx, view.segment.file, 'read', async (fd) => {
    try {
      const {end} = await scanAround(ctx.ops, fd, from.pos, to, view.segment.holes, visit)
      return goal.atEnd(end, n)
    } catch (error) {
      if (error instanceof Found) return error.value
      throw error
    }
  })
}

/**
 * The last index entry at or before relative position `rel` of `segment` (a record boundary
 * when the index is right), or START_ENTRY without a usable index.
 */
export async function entryAtOrBefore(ctx: StoreContext, segment: Segment, rel: number): Promise<IndexEntry> {
  if (segment.indexState !== 'ok' || segment.indexEntries === 0) return START_ENTRY
  try {
    const {from} = await bracket(ctx, segmentView(segment), (e) => e.pos <= rel)
    return from.pos <= rel ? from : START_ENTRY
  } catch (error) {
    ctx.log.debug('cannot read side index entry, walking from the segment start', {file: segment.indexFile.path, error: String(error)})
    return START_ENTRY
  }
}
