/**
 * Opening a partition directory (docs/protocol.md#recovery, docs/invariants.md#recovery).
 *
 * 1. List the directory and classify every entry (layout.ts `classifyPartitionFile`):
 *    `<20 digits>.meta` segments sorted by start offset; files meta writes beside them; and
 *    anything else, which is reported once (warn) and left alone.
 * 2. Check the layout: a `.meta` file that is not a segment name, two names for one
 *    segment, or segments that are not contiguous (`prev.start + prev.size == next.start`:
 *    a sealed segment truncated or missing, or an overlap) are damage that is not at the
 *    tail. Loading around it could serve wrong data or reuse its offsets, so the partition
 *    fails with STORAGE_CORRUPT naming every problem and file; the store quarantines it
 *    (message-store.ts) and keeps serving the others. `meta repair` fixes such layouts.
 * 3. Take every non-last segment at its file size; its side index gives its totals
 *    (index-recovery.ts). Its records are checked later, in the background (scrub.ts).
 * 4. Scan the last segment from byte 0 (resync.ts). A damaged record that valid records
 *    follow becomes a hole readers step over (damage.ts), the later records keep their
 *    offsets; damage that runs to the end of the file is a torn tail: the file is truncated
 *    after its last valid record, the cut bytes kept aside in `<offset>.damaged`, and both
 *    are logged with offsets and sizes. An empty directory gets a first segment at offset 0.
 * 5. Bring every segment's side index up to date (index-recovery.ts).
 */
import assert from 'node:assert'
import type {Dirent} from 'node:fs'
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import type {StoreContext} from './context.js'
import {keepAside, readDamageMap, recordHoles, type PartitionRef} from './damage.js'
import {loadSealedIndex, reconcileTailIndex} from './index-recovery.js'
import {ioError} from './io-error.js'
import {classifyPartitionFile, damageMapFileName, segmentFileName, type PartitionFile} from './layout.js'
import {scanSegment, type Hole, type SegmentScan} from './resync.js'
import {Segment} from './segment.js'
import {createSegmentFile, withFile} from './segment-io.js'
import {IndexCursor, recordTimestamp} from './side-index.js'

export interface RecoveredPartition {
  /** Segments sorted by start, with their index totals; the last one holds only valid records. */
  segments: Segment[]
  /** Modification time of the newest segment file (ms since the Unix epoch). */
  lastModifiedMs: number
}

interface ListedSegment {
  start: number
  size: number
  mtimeMs: number
  /** The file name (canonical: `segmentFileName(start)`). */
  name: string
}

/** Why the segments of a directory do not form a log. */
type LayoutProblem =
  /** A `.meta` file that is not a segment name (`start`: what its digits say, if any). */
  | {readonly kind: 'bad-segment-name'; readonly file: string; readonly start?: number}
  /** A non-canonical name for the start of an existing segment (`000…0.meta` with 21 digits). */
  | {readonly kind: 'duplicate-segment'; readonly file: string; readonly other: string; readonly start: number}
  /** `before` ends at `end` but `after` starts at `start` (gap: end < start; overlap: end > start). */
  | {readonly kind: 'gap' | 'overlap'; readonly before: string; readonly after: string; readonly end: number; readonly start: number}

/** One directory entry and what it is. */
interface ListedEntry {
  name: string
  file: PartitionFile
  directory: boolean
}

/** Everything in a partition directory, classified, with the layout problems found. */
interface PartitionListing {
  dir: string
  entries: ListedEntry[]
  /** Canonical segments, sorted by start. */
  segments: ListedSegment[]
  /** Entries meta does not know (sorted names; directories included). */
  unknown: string[]
  problems: LayoutProblem[]
}

/** List and classify `dir` and check its segments form one contiguous log. */
export async function listPartition(dir: string): Promise<PartitionListing> {
  let dirents: Dirent[]
  try {
    dirents = await readdir(dir, {withFileTypes: true})
  } catch (error) {
    throw ioError(error, 'list', dir)
  }
  const entries = dirents
    .map((d) => ({name: d.name, file: classifyPartitionFile(d.name), directory: d.isDirectory()}))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const unknown = entries.filter((e) => e.directory || e.file.kind === 'unknown').map((e) => e.name)
  const names = entries.filter((e) => !e.directory && e.file.kind === 'segment').map((e) => e.name)
  const segments = await Promise.all(
    names.map(async (name) => {
      const path = join(dir, name)
      try {
        const info = await stat(path)
        return {start: Number(name.slice(0, -'.meta'.length)), size: info.size, mtimeMs: info.mtimeMs, name}
      } catch (error) {
        throw ioError(error, 'stat', path)
      }
    }),
  )
  segments.sort((a, b) => a.start - b.start)
  return {dir, entries, segments, unknown, problems: layoutProblems(entries, segments)}
}

function layoutProblems(entries: readonly ListedEntry[], segments: readonly ListedSegment[]): LayoutProblem[] {
  const problems: LayoutProblem[] = []
  const byStart = new Map(segments.map((s) => [s.start, s.name]))
  for (const {name, file, directory} of entries) {
    if (directory || file.kind !== 'bad-segment-name') continue
    const other = file.start === undefined ? undefined : byStart.get(file.start)
    if (other !== undefined) problems.push({kind: 'duplicate-segment', file: name, other, start: file.start as number})
    else problems.push(file.start === undefined ? {kind: 'bad-segment-name', file: name} : {kind: 'bad-segment-name', file: name, start: file.start})
  }
  for (let i = 1; i < segments.length; i += 1) {
    const prev = segments[i - 1]
    const next = segments[i]
    const end = prev.start + prev.size
    if (end === next.start) continue
    problems.push({kind: end < next.start ? 'gap' : 'overlap', before: prev.name, after: next.name, end, start: next.start})
  }
  return problems
}

/** One line per problem, naming the files and offsets (quarantine reasons, `meta repair`). */
function describeProblem(dir: string, problem: LayoutProblem): string {
  switch (problem.kind) {
    case 'bad-segment-name': {
      const expected = problem.start === undefined ? '<20-digit start offset>.meta' : segmentFileName(problem.start)
      return `"${problem.file}" in "${dir}" is not a segment name (expected "${expected}")`
    }
    case 'duplicate-segment':
      return `"${problem.file}" and "${problem.other}" in "${dir}" both name the segment starting at offset ${problem.start}`
    case 'gap':
    case 'overlap':
      return (
        `segments of "${dir}" are not contiguous: "${problem.before}" ends at ${problem.end} ` +
        `but "${problem.after}" starts at ${problem.start} (${problem.kind === 'gap' ? `${problem.start - problem.end} bytes missing` : `${problem.end - problem.start} bytes claimed twice`})`
      )
  }
}

/** The files a problem concerns. */
function problemFiles(problem: LayoutProblem): string[] {
  return problem.kind === 'bad-segment-name'
    ? [problem.file]
    : problem.kind === 'duplicate-segment'
      ? [problem.file, problem.other]
      : [problem.before, problem.after]
}

interface RecoverOptions extends PartitionRef {
  dir: string
}

/** Recover one partition directory as described at the top of this file. */
export async function recoverPartition(ctx: StoreContext, options: RecoverOptions): Promise<RecoveredPartition> {
  const {dir} = options
  const listing = await listPartition(dir)
  if (listing.unknown.length > 0) {
    ctx.log.warn('unrecognised files in partition directory (left alone)', {
      topic: options.topic,
      partition: options.partition,
      dir,
      files: listing.unknown,
    })
  }
  if (listing.problems.length > 0) {
    throw new MetaError('STORAGE_CORRUPT', listing.problems.map((p) => describeProblem(dir, p)).join('; '), {
      details: {dir, files: listing.problems.flatMap(problemFiles)},
    })
  }
  if (listing.segments.length === 0) {
    const first = new Segment(0, dir, 0)
    createSegmentFile(ctx.fds, first)
    return {segments: [first], lastModifiedMs: Date.now()}
  }
  const maps = new Set(listing.entries.flatMap((e) => (e.file.kind === 'damage-map' ? [e.file.start] : [])))
  const segments = listing.segments.map(({start, size}) => {
    const segment = new Segment(start, dir, size)
    if (maps.has(start)) segment.acknowledged = readDamageMap(join(dir, damageMapFileName(start)), start)
    return segment
  })
  for (let i = 1; i < segments.length; i++) assert(segments[i].start === segments[i - 1].end, 'a listed log is contiguous (checked above)')
  const last = segments[segments.length - 1]
  const cursor = await recoverTail(ctx, options, last)
  await reconcileTailIndex(ctx, last, cursor)
  for (const segment of segments.slice(0, -1)) await loadSealedIndex(ctx, options, segment)
  return {segments, lastModifiedMs: Math.max(...listing.segments.map((s) => s.mtimeMs))}
}

/**
 * Scan `segment` from byte 0: holes for damage that valid records follow, a truncated tail
 * (kept aside) for damage that runs to the end. Returns the index state it built.
 */
async function recoverTail(ctx: StoreContext, options: RecoverOptions, segment: Segment): Promise<IndexCursor> {
  const cursor = new IndexCursor()
  const scan: SegmentScan = await withFile(ctx, segment.file, 'recover', (fd) =>
    scanSegment(ctx.ops, fd, 0, segment.size, (chunk, pos, _length, filePos) => cursor.record(filePos, recordTimestamp(chunk, pos)), {
      maxRecordBytes: ctx.maxRecordBytes,
    }),
  )
  await recordHoles(ctx, options, segment, scan.holes, 'recovery')
  if (scan.tail !== undefined) await truncateTail(ctx, options, segment, scan.tail)
  return cursor
}

async function truncateTail(ctx: StoreContext, owner: PartitionRef, segment: Segment, tail: {from: number; reason: Hole['reason']}): Promise<void> {
  assert(tail.from >= 0 && tail.from < segment.size, 'a torn tail is cut inside the segment, never past its end')
  const keptAside = await keepAside(ctx, segment, tail.from, segment.size)
  await withFile(ctx, segment.file, 'truncate', async (fd) => ctx.ops.ftruncateSync(fd, tail.from))
  ctx.log.warn('truncated torn tail', {
    topic: owner.topic,
    partition: owner.partition,
    file: segment.file.path,
    offset: segment.start + tail.from,
    droppedBytes: segment.size - tail.from,
    reason: tail.reason,
    keptAside,
  })
  segment.size = tail.from
}
