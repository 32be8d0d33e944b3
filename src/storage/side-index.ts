/**
 * The side index of a segment (docs/protocol.md#side-index): `<20-digit start>.idx` beside the
 * `.meta` file, which stays exactly MetaQ's format. Byte layout (see layout.ts):
 *
 *   header  16 bytes: magic "MQIX" | version 1 | interval bytes | entry bytes   (u32 BE each)
 *   entry   24 bytes: position u64 | count u64 | max timestamp u64            (BE)
 *
 * An entry at relative record boundary `position` says: `count` messages of the segment lie
 * before it, and the largest timestamp among them is `max timestamp` (0 when none). The
 * first record gets an entry, then the first record at least INDEX_INTERVAL_BYTES after the
 * previous entry; a sealed segment ends with an entry at its size (its totals). Every field
 * is non-decreasing along the file, so each query is a binary search plus a walk of at most
 * one interval of records. Timestamps come from message ids (`messageIdTimestampAt`); ids
 * from other brokers need not be ordered, which the running maximum absorbs.
 *
 * The index is written with each batch (not fdatasynced: it is rebuilt from the segment when
 * missing, damaged or stale), and a failure to write it never fails a put: the segment's
 * index is marked broken, queries on it scan the segment, and the next open rebuilds it.
 */
import assert from 'node:assert'
import {messageIdTimestampAt} from '../protocol/message-id.js'
import {putInt32BE} from '../protocol/output-buffer.js'
import type {StoreContext} from './context.js'
import {writeFullySync} from './file-ops.js'
import {INDEX_ENTRY_BYTES, INDEX_HEADER_BYTES, INDEX_INTERVAL_BYTES, INDEX_MAGIC, INDEX_VERSION} from './layout.js'
import type {Segment} from './segment.js'
import {withFileSync} from './segment-io.js'

const TWO_POW_32 = 2 ** 32

/** One decoded index entry. */
export interface IndexEntry {
  /** Record boundary, relative to the segment start. */
  pos: number
  /** Messages of the segment before `pos`. */
  count: number
  /** Largest timestamp of those messages (0 when none). */
  maxTs: number
}

/** The entry every segment implicitly starts with. */
export const START_ENTRY: IndexEntry = {pos: 0, count: 0, maxTs: 0}

/** The timestamp the index uses for the record whose header is at `buf[pos]` (>= 0). */
export function recordTimestamp(buf: Buffer, pos: number): number {
  return Math.max(0, messageIdTimestampAt(buf, pos + 8))
}

/**
 * The running index state of one segment as records are appended or scanned: counts,
 * maximum timestamp, and the entries not yet written (flat position/count/maxTs triples).
 */
export class IndexCursor {
  out: number[] = []

  constructor(
    public count = 0,
    public maxTs = 0,
    /** Relative position of the last entry, -1 when none. */
    public lastEntryPos = -1,
  ) {}

  /** Resume after what `segment` has written. */
  static of(segment: Segment): IndexCursor {
    return new IndexCursor(segment.messageCount, segment.maxTimestamp, segment.lastEntryPos)
  }

  /** A record at relative `pos` with timestamp `ts`. */
  record(pos: number, ts: number): void {
    if (this.lastEntryPos < 0 || pos - this.lastEntryPos >= INDEX_INTERVAL_BYTES) {
      this.out.push(pos, this.count, this.maxTs)
      this.lastEntryPos = pos
    }
    this.count += 1
    if (ts > this.maxTs) this.maxTs = ts
  }

  /** The segment is sealed at `size`: add its totals entry. */
  seal(size: number): void {
    assert(size > this.lastEntryPos, 'a segment is sealed past its last index entry')
    this.out.push(size, this.count, this.maxTs)
    this.lastEntryPos = size
  }

  /** Copy the totals into `segment` (after its entries were written). */
  applyTo(segment: Segment): void {
    segment.messageCount = this.count
    segment.maxTimestamp = this.maxTs
    segment.lastEntryPos = this.lastEntryPos
  }
}

/** The 16-byte header of a version-1 index. */
export function encodeHeader(): Buffer {
  const header = Buffer.alloc(INDEX_HEADER_BYTES)
  header.writeUInt32BE(INDEX_MAGIC, 0)
  header.writeUInt32BE(INDEX_VERSION, 4)
  header.writeUInt32BE(INDEX_INTERVAL_BYTES, 8)
  header.writeUInt32BE(INDEX_ENTRY_BYTES, 12)
  return header
}

/** True when `buf` starts with a header this code can read. */
export function isValidHeader(buf: Buffer): boolean {
  return (
    buf.length >= INDEX_HEADER_BYTES &&
    buf.readUInt32BE(0) === INDEX_MAGIC &&
    buf.readUInt32BE(4) === INDEX_VERSION &&
    buf.readUInt32BE(12) === INDEX_ENTRY_BYTES
  )
}

/** Entries (flat triples, from triple `first`) as bytes. */
export function encodeEntries(out: readonly number[], first = 0): Buffer {
  const buf = Buffer.allocUnsafe(((out.length - first * 3) / 3) * INDEX_ENTRY_BYTES)
  // putInt32BE, not Buffer#writeUInt32BE: that one goes through V8's generic LoadIC on every
  // call, and this runs for every batch a put path writes.
  for (let i = first * 3, pos = 0; i < out.length; i += 1, pos += 8) {
    const value = out[i]
    putInt32BE(buf, pos, Math.floor(value / TWO_POW_32))
    putInt32BE(buf, pos + 4, value >>> 0)
  }
  return buf
}

/** Decode the entry at `buf[pos]`. */
export function decodeEntry(buf: Buffer, pos: number): IndexEntry {
  const u64 = (at: number): number => buf.readUInt32BE(at) * TWO_POW_32 + buf.readUInt32BE(at + 4)
  return {pos: u64(pos), count: u64(pos + 8), maxTs: u64(pos + 16)}
}

/** Byte position of entry `i` in the index file. */
export function entryOffset(i: number): number {
  return INDEX_HEADER_BYTES + i * INDEX_ENTRY_BYTES
}

/**
 * Append `cursor`'s pending entries to `segment`'s index (part of the end-of-turn batch) and
 * take its totals. Index trouble is logged and marks the index broken; it never throws.
 */
export function commitEntries(ctx: StoreContext, segment: Segment, cursor: IndexCursor): void {
  const out = cursor.out
  assert(cursor.count >= segment.messageCount, 'a segment never loses messages by an append')
  assert(
    out.length === 0 || (out[0] > segment.lastEntryPos && out[out.length - 3] <= segment.size),
    'new index entries lie after the last one and inside the segment',
  )
  cursor.out = []
  cursor.applyTo(segment)
  if (out.length === 0 || segment.indexState === 'broken') return
  const {fds, ops} = ctx
  const file = segment.indexFile
  try {
    const fresh = segment.indexState === 'none'
    const fd = fresh ? fds.create(file) : fds.acquire(file)
    try {
      const body = encodeEntries(out)
      if (fresh) writeFullySync(ops, fd, [encodeHeader(), body], 0)
      else writeFullySync(ops, fd, [body], entryOffset(segment.indexEntries))
    } finally {
      fds.release(file)
    }
    segment.indexState = 'ok'
    segment.indexEntries += out.length / 3
  } catch (error) {
    markBroken(ctx, segment, error)
  }
}

/** Cut `segment`'s index back to `entries` entries (a rolled-back batch). */
export function truncateEntries(ctx: StoreContext, segment: Segment, entries: number): void {
  assert(entries >= 0 && entries <= segment.indexEntries, 'an index is cut to at most the entries it has')
  if (segment.indexState !== 'ok' || segment.indexEntries === entries) {
    segment.indexEntries = Math.min(segment.indexEntries, entries)
    return
  }
  try {
    withFileSync(ctx, segment.indexFile, 'truncate', (fd) => ctx.ops.ftruncateSync(fd, entryOffset(entries)))
    segment.indexEntries = entries
  } catch (error) {
    markBroken(ctx, segment, error)
  }
}

/** Give up on `segment`'s index until the next open rebuilds it; queries scan meanwhile. */
export function markBroken(ctx: StoreContext, segment: Segment, error: unknown): void {
  if (segment.indexState === 'broken') return
  segment.indexState = 'broken'
  ctx.log.warn('side index unusable, it is rebuilt at the next open', {
    file: segment.indexFile.path,
    error: error instanceof Error ? error.message : String(error),
  })
}
