/**
 * Scanning a segment through damage: where valid records resume after a bad one.
 *
 * MetaQ offsets are byte positions, and consumers' committed offsets point into the files, so
 * a damaged record is never cut out of a segment: the valid records after it stay at their
 * offsets, and the damaged bytes become a *hole* ([from, to), relative to the segment start)
 * that readers step over (damage.ts). This module finds holes:
 *
 *   scan records from `from` (scan.ts) ─ end of range ──────────────→ done
 *        │ stops at a bad record at p (bad length, checksum, a record past the end, zero fill)
 *        ▼
 *   try every position q > p: a plausible header (0 <= length <= maxRecordBytes, the record
 *   fits, non-negative checksum as MetaQ writes it, not an all-zero header), a plausible
 *   header after it, then a checksum match, confirmed by the records that follow
 *   (RESYNC_CONFIRM_RECORDS with a payload, or a clean run to the end of the range)
 *        │ found q: hole [p, q), scan on from q        │ none: the damage runs to the end
 *        ▼                                             ▼
 *   (loop)                                  `tail` = p (the caller truncates a last segment
 *                                           or makes [p, end) a hole of a sealed one)
 *
 * Message ids are not used: they are not a sequence across restarts, brokers or
 * transactions. The cheap header checks make a checksum computation rare on random bytes
 * (about one in two million positions), so a scan through a damaged megabyte costs a few
 * milliseconds. A record with an empty payload is never enough on its own (eight zero bytes
 * are a valid empty record's length and checksum), and records longer than maxRecordBytes
 * after the damage are lost with it.
 */
import {checksum} from '../protocol/crc.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {FileOps} from './file-ops.js'
import {RESYNC_CONFIRM_RECORDS, SCAN_CHUNK_BYTES} from './layout.js'
import {readFully, scanFile, type RecordVisitor, type ScanStopReason} from './scan.js'

/** Why a range is damaged: the first bad record's fault. */
type DamageReason = Exclude<ScanStopReason, 'end'> | 'gap'

/** A damaged range of a segment, relative to its start: [from, to). */
export interface Hole {
  from: number
  to: number
  reason: DamageReason
}

interface SegmentScanOptions {
  /** Longest record (header included) a resynchronisation point may start. */
  maxRecordBytes: number
  /** Known holes to step over without looking (sorted, non-overlapping). */
  skip?: readonly Hole[]
  /** Stop (without damage) at the first record starting at or after this position. */
  until?: number
  /** Called after each chunk read, with its size (a scrub paces itself here). */
  pace?: (bytes: number) => Promise<void>
}

export interface SegmentScan {
  /** New holes found, in order; valid records resume at each one's end. */
  holes: Hole[]
  /** Where damage that no valid record follows begins, or undefined when the range is whole. */
  tail?: {from: number; reason: DamageReason}
}

/** Thrown by the visitor to end a scan at `until`; never escapes this file. */
class Until {}

/**
 * Walk the records of file range [from, to) of `fd`, calling `visit` for each valid one,
 * stepping over `skip` holes and resynchronising past damage (see the top of this file).
 */
export async function scanSegment(
  ops: FileOps,
  fd: number,
  from: number,
  to: number,
  visit: RecordVisitor | undefined,
  options: SegmentScanOptions,
): Promise<SegmentScan> {
  const holes: Hole[] = []
  const until = options.until ?? Number.POSITIVE_INFINITY
  const onRecord: RecordVisitor = (chunk, pos, length, filePos) => {
    if (filePos >= until) throw new Until()
    visit?.(chunk, pos, length, filePos)
  }
  const skip = options.skip ?? []
  let k = 0
  let pos = from
  try {
    while (pos < to && pos < until) {
      while (k < skip.length && skip[k].to <= pos) k += 1
      if (k < skip.length && skip[k].from <= pos) {
        pos = skip[k].to
        continue
      }
      // Scan up to the next known hole; its start is a record boundary.
      const end = k < skip.length ? Math.min(skip[k].from, to) : to
      const scanned = await scanFile(ops, fd, pos, end, onRecord, options.pace)
      if (scanned.stop === 'end' || scanned.end >= end) {
        pos = end
        continue
      }
      const resume = await findResync(ops, fd, scanned.end, end, options.maxRecordBytes)
      if (resume === undefined) {
        if (end === to) return {holes, tail: {from: scanned.end, reason: scanned.stop}}
        holes.push({from: scanned.end, to: end, reason: scanned.stop})
        pos = end
        continue
      }
      holes.push({from: scanned.end, to: resume, reason: scanned.stop})
      pos = resume
    }
  } catch (error) {
    if (!(error instanceof Until)) throw error
  }
  return {holes}
}

/**
 * The first position q in (from, to) where a confirmed run of valid records starts, or
 * undefined when there is none.
 */
async function findResync(ops: FileOps, fd: number, from: number, to: number, maxRecordBytes: number): Promise<number | undefined> {
  const maxLength = maxRecordBytes - RECORD_HEADER_BYTES
  const buf = Buffer.allocUnsafe(SCAN_CHUNK_BYTES + 2 * RECORD_HEADER_BYTES)
  let base = from + 1
  while (to - base >= RECORD_HEADER_BYTES) {
    const want = Math.min(buf.length, to - base)
    const got = await readFully(ops, fd, buf, 0, want, base)
    const candidates = Math.min(SCAN_CHUNK_BYTES, got - RECORD_HEADER_BYTES + 1)
    for (let i = 0; i < candidates; i += 1) {
      const length = buf.readInt32BE(i)
      if (length < 0 || length > maxLength) continue
      const q = base + i
      const next = q + RECORD_HEADER_BYTES + length
      if (next > to || !plausibleHeader(buf, i, length)) continue
      if (!(await plausibleNext(ops, fd, buf, base, got, next, to, maxLength))) continue
      if (await confirmed(ops, fd, q, to, maxLength)) return q
    }
    if (got < want || candidates <= 0) return undefined
    base += candidates
  }
  return undefined
}

/** Checksum sign and the empty-record rules, on the header at `buf[i]` (length checked). */
function plausibleHeader(buf: Buffer, i: number, length: number): boolean {
  const crc = buf.readInt32BE(i + 4)
  if (crc < 0) return false
  if (length > 0) return true
  // An empty payload's checksum is 0; an all-zero header is unwritten space, not a record.
  return crc === 0 && (buf.readInt32BE(i + 8) !== 0 || buf.readInt32BE(i + 12) !== 0)
}

/** The header after a candidate ending at `next` looks like one (or the range ends there). */
async function plausibleNext(ops: FileOps, fd: number, buf: Buffer, base: number, got: number, next: number, to: number, maxLength: number): Promise<boolean> {
  if (to - next < RECORD_HEADER_BYTES) return true
  let header: Buffer
  let at: number
  if (next - base + RECORD_HEADER_BYTES <= got) {
    header = buf
    at = next - base
  } else {
    header = Buffer.allocUnsafe(RECORD_HEADER_BYTES)
    at = 0
    if ((await readFully(ops, fd, header, 0, RECORD_HEADER_BYTES, next)) < RECORD_HEADER_BYTES) return false
  }
  const length = header.readInt32BE(at)
  // A next record torn by the end of the range is still a record start (a torn tail).
  return length >= 0 && length <= maxLength && plausibleHeader(header, at, length)
}

/** Most records a confirmation reads (empty records add nothing to it). */
const CONFIRM_MAX_RECORDS = 64

/**
 * The records from `q` verify: RESYNC_CONFIRM_RECORDS records with a payload, or at least
 * one and then exactly the end of the range (or a record torn by it).
 */
async function confirmed(ops: FileOps, fd: number, q: number, to: number, maxLength: number): Promise<boolean> {
  const header = Buffer.allocUnsafe(RECORD_HEADER_BYTES)
  let withPayload = 0
  let pos = q
  for (let n = 0; n < CONFIRM_MAX_RECORDS; n += 1) {
    if (to - pos < RECORD_HEADER_BYTES) return withPayload > 0
    if ((await readFully(ops, fd, header, 0, RECORD_HEADER_BYTES, pos)) < RECORD_HEADER_BYTES) return withPayload > 0
    const length = header.readInt32BE(0)
    if (length < 0 || length > maxLength || !plausibleHeader(header, 0, length)) return false
    if (pos + RECORD_HEADER_BYTES + length > to) return withPayload > 0
    const payload = Buffer.allocUnsafe(length)
    if ((await readFully(ops, fd, payload, 0, length, pos + RECORD_HEADER_BYTES)) < length) return false
    if (checksum(payload) !== header.readInt32BE(4)) return false
    if (length > 0) withPayload += 1
    if (withPayload >= RESYNC_CONFIRM_RECORDS) return true
    pos += RECORD_HEADER_BYTES + length
    if (pos === to) return withPayload > 0
  }
  return false
}
