/**
 * Checking records that were not written by this process: the reads of sealed segments the
 * scrub has not reached yet, the `offset` command (a client saw a bad record), and the scrub
 * itself. Every check walks from a known record boundary — the segment start, an index entry
 * whose record verifies, or the end of a known hole — so that a reader's misaligned offset is
 * never taken for damage.
 */
import {checksum} from '../protocol/crc.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {StoreContext} from './context.js'
import {holeAt, recordHoles, type DamageSource, type PartitionRef} from './damage.js'
import {entryAtOrBefore} from './index-queries.js'
import {scanSealed, writeSealedIndex} from './index-recovery.js'
import {scanSegment, type Hole} from './resync.js'
import {readFully} from './scan.js'
import type {Segment} from './segment.js'
import {withFile} from './segment-io.js'
import {encodeEntries, encodeHeader, IndexCursor} from './side-index.js'

/**
 * Position in `data` (raw log bytes read at relative position `rel` of a segment of
 * `segmentSize` bytes) of the first whole record that fails its checks — a negative length,
 * a record past the segment's end, a checksum mismatch, a header torn by the segment's end —
 * or -1 when every whole record checks out (a partial last record is fine: the reader asks
 * for more).
 */
function firstBadRecord(data: Buffer, rel: number, segmentSize: number): number {
  let pos = 0
  while (data.length - pos >= RECORD_HEADER_BYTES) {
    const length = data.readInt32BE(pos)
    if (length < 0 || rel + pos + RECORD_HEADER_BYTES + length > segmentSize) return pos
    const next = pos + RECORD_HEADER_BYTES + length
    if (next > data.length) return -1
    if (checksum(data.subarray(pos + RECORD_HEADER_BYTES, next)) !== data.readInt32BE(pos + 4)) return pos
    pos = next
  }
  return pos < data.length && rel + data.length === segmentSize ? pos : -1
}

/**
 * PartitionLog#read of an unverified sealed segment returned `data` at `offset`: true when a
 * record in it is damaged and a hole now covers it (read again: the read stops before it or
 * answers `damaged`); false to serve `data` as it is — its records check out, or `offset` is
 * not a record boundary (a reader's misaligned offset is not damage: its own checks send it
 * to `offset`).
 */
export async function damageBeforeServing(ctx: StoreContext, owner: PartitionRef, segment: Segment, offset: number, data: Buffer): Promise<boolean> {
  const rel = offset - segment.start
  const bad = firstBadRecord(data, rel, segment.size)
  if (bad < 0) return false
  const at = rel + bad
  const aligned = await ctx.damage.once(`${segment.file.path}:${rel}:${at}`, () => locateDamage(ctx, owner, segment, rel, at + 1, 'read'))
  const hole = holeAt(segment.holes, at)
  return aligned && hole !== undefined && hole.from <= at
}

/**
 * PartitionLog#checkOffset for `offset` inside `segment`: check the window a fetch from there
 * returned, then answer past a hole holding `offset`, `offset` itself when it is a record
 * boundary, else the segment start (MetaQ's answer).
 */
export async function checkOffsetIn(ctx: StoreContext, owner: PartitionRef, segment: Segment, offset: number, windowBytes: number): Promise<number> {
  const rel = offset - segment.start
  const pastHole = (): number | undefined => {
    const hole = holeAt(segment.holes, rel)
    return hole !== undefined && hole.from <= rel ? segment.start + hole.to : undefined
  }
  const known = pastHole()
  if (known !== undefined) return known
  const until = Math.min(rel + Math.max(1, windowBytes), segment.size)
  const aligned = await ctx.damage.once(`${segment.file.path}:${rel}:${until}`, () => locateDamage(ctx, owner, segment, rel, until, 'offset'))
  return pastHole() ?? (aligned ? offset : segment.start)
}

/**
 * Walk `segment` from a known boundary at or before `rel` until the first record at or
 * after `until`, recording the holes it finds. Resolves whether `rel` is a record boundary.
 */
async function locateDamage(ctx: StoreContext, owner: PartitionRef, segment: Segment, rel: number, until: number, source: DamageSource): Promise<boolean> {
  const start = await boundaryAtOrBefore(ctx, segment, rel)
  const size = segment.size
  let aligned = start === rel
  const scan = await withFile(ctx, segment.file, 'read', (fd) =>
    scanSegment(
      ctx.ops,
      fd,
      start,
      size,
      (_chunk, _pos, _length, filePos) => {
        if (filePos === rel) aligned = true
      },
      {maxRecordBytes: ctx.maxRecordBytes, skip: segment.holes, until},
    ),
  )
  const holes: Hole[] = scan.holes
  if (scan.tail !== undefined) holes.push({from: scan.tail.from, to: size, reason: scan.tail.reason})
  await recordHoles(ctx, owner, segment, holes, source)
  // Holes start and end at record boundaries: a walk that reached one at `rel` reached `rel`.
  return aligned || (segment.holes?.some((h) => h.from === rel || h.to === rel) ?? false)
}

/** The nearest position at or before `rel` known to start a record. */
async function boundaryAtOrBefore(ctx: StoreContext, segment: Segment, rel: number): Promise<number> {
  let best = 0
  for (const hole of segment.holes ?? []) if (hole.to <= rel) best = Math.max(best, hole.to)
  const entry = await entryAtOrBefore(ctx, segment, rel)
  // An index entry is trusted only when a record with a payload verifies there: a damaged
  // index must not make a walk start mid-record.
  if (entry.pos > best && (await recordVerifiesAt(ctx, segment, entry.pos))) best = entry.pos
  return best
}

async function recordVerifiesAt(ctx: StoreContext, segment: Segment, pos: number): Promise<boolean> {
  return withFile(ctx, segment.file, 'read', async (fd) => {
    const header = Buffer.allocUnsafe(RECORD_HEADER_BYTES)
    if ((await readFully(ctx.ops, fd, header, 0, header.length, pos)) < header.length) return false
    const length = header.readInt32BE(0)
    if (length <= 0 || length > ctx.maxRecordBytes || pos + RECORD_HEADER_BYTES + length > segment.size) return false
    const payload = Buffer.allocUnsafe(length)
    if ((await readFully(ctx.ops, fd, payload, 0, length, pos + RECORD_HEADER_BYTES)) < length) return false
    return checksum(payload) === header.readInt32BE(4)
  })
}

/**
 * The scrub of one sealed segment: check every record, record the holes, make the side
 * index match what was found, and mark the segment verified.
 */
export async function verifySegment(ctx: StoreContext, owner: PartitionRef, segment: Segment, pace: (bytes: number) => Promise<void>): Promise<void> {
  const cursor = new IndexCursor()
  await scanSealed(ctx, owner, segment, 0, cursor, 'scrub', pace)
  const totals = encodeEntries([segment.size, cursor.count, cursor.maxTs])
  const expected = Buffer.concat([encodeHeader(), encodeEntries(cursor.out), totals])
  if (segment.indexState !== 'ok' || cursor.count !== segment.messageCount || !(await indexEquals(ctx, segment, expected))) {
    ctx.log.info('rewrote side index after a scrub', {file: segment.indexFile.path, messages: cursor.count})
    await writeSealedIndex(ctx, segment, cursor, 0)
  }
  segment.verified = true
}

async function indexEquals(ctx: StoreContext, segment: Segment, expected: Buffer): Promise<boolean> {
  try {
    return await withFile(ctx, segment.indexFile, 'read', async (fd) => {
      const have = Buffer.allocUnsafe(expected.length + 1)
      const got = await readFully(ctx.ops, fd, have, 0, have.length, 0)
      return got === expected.length && have.subarray(0, got).equals(expected)
    })
  } catch {
    // Unreadable or missing: it does not match, and is rewritten.
    return false
  }
}
