/**
 * Bringing side indexes up to date when a partition opens (format in side-index.ts).
 *
 * - Last segment: recovery scans it from byte 0 anyway, building the entries it should have;
 *   the file keeps its matching prefix and gets the rest appended (stale: the common case
 *   after a crash), or is rewritten when it disagrees (damaged) or is missing.
 * - Sealed segments: the header and last entry are read. A last entry at the segment size
 *   gives the totals; one before it means the index is stale (a crash between roll and index
 *   write), so the segment is scanned from that entry and the index extended; anything else
 *   (missing, bad magic or version, a truncated entry, an entry past the segment end) means
 *   a rebuild from a full scan. Damage a scan meets becomes a hole (damage.ts), up to the
 *   segment's end when no valid record follows it; a segment scanned whole is verified.
 */
import assert from 'node:assert'
import {stat} from 'node:fs/promises'
import type {StoreContext} from './context.js'
import {recordHoles, type PartitionRef} from './damage.js'
import {writeFullySync} from './file-ops.js'
import {ioError} from './io-error.js'
import {INDEX_ENTRY_BYTES, INDEX_HEADER_BYTES} from './layout.js'
import {scanSegment, type Hole} from './resync.js'
import {readFully} from './scan.js'
import type {Segment} from './segment.js'
import {withFile} from './segment-io.js'
import {decodeEntry, encodeEntries, encodeHeader, entryOffset, IndexCursor, isValidHeader, markBroken, recordTimestamp, type IndexEntry} from './side-index.js'

/** Make the last segment's index hold exactly the entries of `built` (from the recovery scan). */
export async function reconcileTailIndex(ctx: StoreContext, segment: Segment, built: IndexCursor): Promise<void> {
  const expected = Buffer.concat([encodeHeader(), encodeEntries(built.out)])
  const entries = built.out.length / 3
  assert(entries === 0 || built.out[built.out.length - 3] < segment.size, 'index entries of the tail point at records inside it')
  built.out = []
  built.applyTo(segment)
  segment.indexEntries = entries
  segment.indexState = 'ok'
  try {
    const fd = await openIndex(ctx, segment, entries > 0)
    if (fd === undefined) {
      segment.indexState = 'none'
      return
    }
    try {
      const have = Buffer.allocUnsafe(expected.length + INDEX_ENTRY_BYTES)
      const got = await readFully(ctx.ops, fd, have, 0, have.length, 0)
      const keep = matchingEntries(have.subarray(0, got), expected, entries)
      if (keep === entries && got === expected.length) return
      const from = keep < 0 ? 0 : entryOffset(keep)
      writeFullySync(ctx.ops, fd, [expected.subarray(from)], from)
      ctx.ops.ftruncateSync(fd, expected.length)
      if (keep < 0 || keep < Math.floor((got - INDEX_HEADER_BYTES) / INDEX_ENTRY_BYTES)) {
        ctx.log.warn('rewrote side index', {file: segment.indexFile.path, keptEntries: Math.max(keep, 0), entries})
      }
    } finally {
      ctx.fds.release(segment.indexFile)
    }
  } catch (error) {
    markBroken(ctx, segment, ioError(error, 'write', segment.indexFile.path))
  }
}

/** Load a sealed segment's totals from its index, extending or rebuilding the index as needed. */
export async function loadSealedIndex(ctx: StoreContext, owner: PartitionRef, segment: Segment): Promise<void> {
  const last = await readLastEntry(ctx, segment)
  if (last !== undefined && last.entry.pos === segment.size) {
    new IndexCursor(last.entry.count, last.entry.maxTs, last.entry.pos).applyTo(segment)
    segment.indexEntries = last.entries
    segment.indexState = 'ok'
    // Taken at its index's word: the scrub (or a read) checks its records later.
    segment.verified = false
    return
  }
  const extend = last !== undefined && last.entry.pos < segment.size
  const cursor = extend ? new IndexCursor(last.entry.count, last.entry.maxTs, last.entry.pos) : new IndexCursor()
  const from = extend ? last.entry.pos : 0
  await scanSealed(ctx, owner, segment, from, cursor, 'index')
  segment.verified = !extend
  if (!extend) ctx.log.info('rebuilt side index', {file: segment.indexFile.path})
  await writeSealedIndex(ctx, segment, cursor, extend ? last.entries : 0)
}

/**
 * Seal `cursor` at the segment's size, take its totals, and write its entries to the index
 * file from entry `first` (0: the whole file, header included).
 */
export async function writeSealedIndex(ctx: StoreContext, segment: Segment, cursor: IndexCursor, first: number): Promise<void> {
  cursor.seal(segment.size)
  assert(cursor.out.length % 3 === 0 && cursor.out[cursor.out.length - 3] === segment.size, 'a sealed index ends with the totals entry at the segment size')
  cursor.applyTo(segment)
  const bytes = first > 0 ? encodeEntries(cursor.out) : Buffer.concat([encodeHeader(), encodeEntries(cursor.out)])
  segment.indexEntries = first + cursor.out.length / 3
  segment.indexState = 'ok'
  cursor.out = []
  try {
    const fd = (await openIndex(ctx, segment, true)) as number
    try {
      const at = first > 0 ? entryOffset(first) : 0
      writeFullySync(ctx.ops, fd, [bytes], at)
      ctx.ops.ftruncateSync(fd, at + bytes.length)
    } finally {
      ctx.fds.release(segment.indexFile)
    }
  } catch (error) {
    markBroken(ctx, segment, ioError(error, 'write', segment.indexFile.path))
  }
}

/** Entries of `have` equal to those of `expected` (a prefix), or -1 when its header is bad. */
function matchingEntries(have: Buffer, expected: Buffer, entries: number): number {
  if (!isValidHeader(have)) return -1
  let keep = 0
  while (keep < entries && entryOffset(keep + 1) <= have.length) {
    const from = entryOffset(keep)
    const to = from + INDEX_ENTRY_BYTES
    if (have.compare(expected, from, to, from, to) !== 0) break
    keep += 1
  }
  return keep
}

/** Pin the segment's index file open; create it when missing and `create`, else undefined. */
async function openIndex(ctx: StoreContext, segment: Segment, create: boolean): Promise<number | undefined> {
  try {
    return await ctx.fds.acquireAsync(segment.indexFile)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    return create ? ctx.fds.create(segment.indexFile) : undefined
  }
}

/** The header-checked last entry of a sealed segment's index, or undefined when unusable. */
async function readLastEntry(ctx: StoreContext, segment: Segment): Promise<{entry: IndexEntry; entries: number} | undefined> {
  let size: number
  try {
    size = (await stat(segment.indexFile.path)).size
  } catch {
    // Missing (MetaQ data, or never written) or unreadable: rebuilt from the segment.
    return undefined
  }
  const entries = (size - INDEX_HEADER_BYTES) / INDEX_ENTRY_BYTES
  if (!Number.isInteger(entries) || entries < 1) return undefined
  try {
    return await withFile(ctx, segment.indexFile, 'read', async (fd) => {
      const header = Buffer.allocUnsafe(INDEX_HEADER_BYTES)
      const last = Buffer.allocUnsafe(INDEX_ENTRY_BYTES)
      const gotHeader = await readFully(ctx.ops, fd, header, 0, header.length, 0)
      const gotLast = await readFully(ctx.ops, fd, last, 0, last.length, entryOffset(entries - 1))
      if (gotHeader < header.length || gotLast < last.length || !isValidHeader(header)) return undefined
      const entry = decodeEntry(last, 0)
      return entry.pos > segment.size ? undefined : {entry, entries}
    })
  } catch (error) {
    ctx.log.warn('cannot read side index, rebuilding it', {file: segment.indexFile.path, error: (error as Error).message})
    return undefined
  }
}

/**
 * Feed the records of sealed `segment` from `from` to its end into `cursor`, taking the holes
 * the scan finds (damage with no valid record after it runs to the segment's end).
 */
export async function scanSealed(
  ctx: StoreContext,
  owner: PartitionRef,
  segment: Segment,
  from: number,
  cursor: IndexCursor,
  source: 'index' | 'scrub',
  pace?: (bytes: number) => Promise<void>,
): Promise<void> {
  const scan = await withFile(ctx, segment.file, 'read', (fd) =>
    scanSegment(ctx.ops, fd, from, segment.size, (chunk, pos, _length, filePos) => cursor.record(filePos, recordTimestamp(chunk, pos)), {
      maxRecordBytes: ctx.maxRecordBytes,
      skip: segment.holes,
      pace,
    }),
  )
  const holes: Hole[] = scan.holes
  if (scan.tail !== undefined) holes.push({from: scan.tail.from, to: segment.size, reason: scan.tail.reason})
  await recordHoles(ctx, owner, segment, holes, source)
}
