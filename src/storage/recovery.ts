/**
 * Opening a partition directory (spec §2.6, DESIGN §6, STYLE 23).
 *
 * 1. List `*.meta` segments, sorted by start offset.
 * 2. Check contiguity: `prev.start + prev.size == next.start`. A gap or an overlap is damage
 *    that is not at the tail, so it is STORAGE_CORRUPT naming the directory and both files.
 * 3. Take every non-last segment at its file size (MetaQ does not validate them either).
 * 4. Scan the last segment from byte 0 and truncate it after its last valid record (short
 *    header, negative or oversize length, record past EOF, CRC mismatch), logging what was
 *    dropped. An empty directory gets a first segment at offset 0.
 * 5. Bring every segment's side index up to date (index-recovery.ts).
 */
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import type {StoreContext} from './context.js'
import {loadSealedIndex, reconcileTailIndex} from './index-recovery.js'
import {ioError} from './io-error.js'
import {parseSegmentFileName, segmentFileName} from './layout.js'
import {scanFile} from './scan.js'
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
}

/** The segment files of `dir`, sorted and checked for contiguity. */
export async function listSegments(dir: string): Promise<ListedSegment[]> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch (error) {
    throw ioError(error, 'list', dir)
  }
  const starts = names.map(parseSegmentFileName).filter((start): start is number => start !== undefined)
  const listed = await Promise.all(
    starts.map(async (start) => {
      const path = join(dir, segmentFileName(start))
      try {
        const info = await stat(path)
        return {start, size: info.size, mtimeMs: info.mtimeMs}
      } catch (error) {
        throw ioError(error, 'stat', path)
      }
    }),
  )
  listed.sort((a, b) => a.start - b.start)
  checkContiguous(dir, listed)
  return listed
}

function checkContiguous(dir: string, listed: readonly ListedSegment[]): void {
  for (let i = 1; i < listed.length; i += 1) {
    const prev = listed[i - 1]
    const next = listed[i]
    if (prev.start + prev.size === next.start) continue
    const prevName = segmentFileName(prev.start)
    const nextName = segmentFileName(next.start)
    throw new MetaError(
      'STORAGE_CORRUPT',
      `segments of "${dir}" are not contiguous: "${prevName}" ends at ${prev.start + prev.size} ` +
        `but "${nextName}" starts at ${next.start}`,
      {details: {dir, files: [prevName, nextName]}},
    )
  }
}

export interface RecoverOptions {
  dir: string
  topic: string
  partition: number
}

/** Recover one partition directory as described at the top of this file. */
export async function recoverPartition(ctx: StoreContext, options: RecoverOptions): Promise<RecoveredPartition> {
  const {dir} = options
  const listed = await listSegments(dir)
  if (listed.length === 0) {
    const first = new Segment(0, dir, 0)
    createSegmentFile(ctx.fds, first)
    return {segments: [first], lastModifiedMs: Date.now()}
  }
  const segments = listed.map(({start, size}) => new Segment(start, dir, size))
  const last = segments[segments.length - 1]
  const cursor = await recoverTail(ctx, options, last)
  await reconcileTailIndex(ctx, last, cursor)
  for (const segment of segments.slice(0, -1)) await loadSealedIndex(ctx, segment)
  return {segments, lastModifiedMs: Math.max(...listed.map((s) => s.mtimeMs))}
}

/** Scan `segment` from byte 0, truncate a torn tail, and return the index state it built. */
async function recoverTail(ctx: StoreContext, options: RecoverOptions, segment: Segment): Promise<IndexCursor> {
  const {ops, fds, log} = ctx
  const path = segment.file.path
  const cursor = new IndexCursor()
  await withFile(ctx, segment.file, 'recover', async (fd) => {
    const {end, stop} = await scanFile(ctx.ops, fd, 0, segment.size, (chunk, pos, _length, filePos) => {
      cursor.record(filePos, recordTimestamp(chunk, pos))
    })
    if (end === segment.size) return
    ctx.ops.ftruncateSync(fd, end)
    ctx.log.warn('truncated torn tail', {
      topic: options.topic,
      partition: options.partition,
      offset: segment.start + end,
      droppedBytes: segment.size - end,
      reason: stop,
      file: segment.file.path,
    })
    segment.size = end
  })
  return cursor
}
