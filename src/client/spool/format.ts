/**
 * The on-disk format of a spool: names and the record layout, in one place.
 *
 * A spool is one directory per topic holding:
 *   - segment files `<20-digit start position>.spool`, each an append-only run of records;
 *     a position is a byte count over the whole spool (segment start + offset in the file);
 *   - `position`: the position before which every record was acknowledged, a fixed-width
 *     record overwritten in place (position-file.ts);
 *   - `destination`: the broker or cluster the records are for (destination.ts);
 *   - `lock`: the pid of the process using the spool;
 *   - `quarantine/`: damaged bytes found in segments, kept rather than deleted, one file per
 *     damaged range, `<segment name>.<from>-<to>.damaged` (offsets in the segment file).
 *
 * Record (big-endian):
 *   bodyBytes  u32   length of what follows the checksum
 *   checksum   u32   crc32 (protocol/crc.ts checksum) of the body
 *   body:
 *     partition     i32   partition chosen by the writer; -1 = the partitioner decides
 *     attributeLen  i32   byte length of the attribute; -1 = no attribute
 *     attribute     bytes UTF-8
 *     payload       bytes the rest of the body
 */
import {checksum} from '../../protocol/crc.js'

/** Suffix of a segment file. */
const SEGMENT_SUFFIX = '.spool'
/** Digits of the start position in a segment name (zero-padded so names sort by position). */
const SEGMENT_NAME_DIGITS = 20
/** The acknowledged position (position-file.ts). */
export const POSITION_FILE = 'position'
/** What spools wrote before the position was kept in place: removed when found. */
export const LEGACY_POSITION_TEMP_FILE = 'position.tmp'
/** The destination the records are for (destination.ts). */
export const DESTINATION_FILE = 'destination'
/** The pid of the process that has the spool open. */
export const LOCK_FILE = 'lock'
/** Damaged bytes moved out of the way (a directory in the spool). */
export const QUARANTINE_DIR = 'quarantine'
/** bodyBytes + checksum. */
export const RECORD_HEADER_BYTES = 8
/** partition + attributeLen. */
const BODY_FIXED_BYTES = 8
/** A body larger than this is damage, not a record (a message is at most a few MiB). */
export const MAX_BODY_BYTES = 256 * 1024 * 1024

export interface SpoolEntry {
  partition: number
  attribute: string | undefined
  payload: Buffer
}

export interface SpoolRecord extends SpoolEntry {
  /** Spool position of the record's first byte. */
  position: number
  /** Position right after it. */
  end: number
}

/** The quarantine file of damaged bytes [from, to) of a segment file. */
export function quarantineName(segment: string, from: number, to: number): string {
  return `${segment}.${from}-${to}.damaged`
}

export function segmentName(start: number): string {
  return `${String(start).padStart(SEGMENT_NAME_DIGITS, '0')}${SEGMENT_SUFFIX}`
}

/** The start position a segment name stands for; undefined for any other file. */
export function parseSegmentName(name: string): number | undefined {
  if (!name.endsWith(SEGMENT_SUFFIX)) return undefined
  const digits = name.slice(0, -SEGMENT_SUFFIX.length)
  if (!/^\d+$/.test(digits)) return undefined
  return Number(digits)
}

export function encodeRecord(entry: SpoolEntry): Buffer {
  const attribute = entry.attribute === undefined ? undefined : Buffer.from(entry.attribute, 'utf8')
  const bodyBytes = BODY_FIXED_BYTES + (attribute?.length ?? 0) + entry.payload.length
  const out = Buffer.allocUnsafe(RECORD_HEADER_BYTES + bodyBytes)
  out.writeUInt32BE(bodyBytes, 0)
  out.writeInt32BE(entry.partition, RECORD_HEADER_BYTES)
  out.writeInt32BE(attribute === undefined ? -1 : attribute.length, RECORD_HEADER_BYTES + 4)
  let at = RECORD_HEADER_BYTES + BODY_FIXED_BYTES
  if (attribute !== undefined) at += attribute.copy(out, at)
  out.set(entry.payload, at)
  out.writeUInt32BE(checksum(out.subarray(RECORD_HEADER_BYTES)), 4)
  return out
}

/** What parseRecord found at an offset of a buffer. */
type ParseOutcome =
  | {kind: 'record'; entry: SpoolEntry; bytes: number}
  /** The buffer ends before the record does: read `bytes` from here. */
  | {kind: 'short'; bytes: number}
  /** A bad length or checksum: a torn or damaged record. */
  | {kind: 'damaged'; reason: string}

export function parseRecord(buf: Buffer, at: number): ParseOutcome {
  if (buf.length - at < RECORD_HEADER_BYTES) return {kind: 'short', bytes: RECORD_HEADER_BYTES}
  const bodyBytes = buf.readUInt32BE(at)
  if (bodyBytes < BODY_FIXED_BYTES || bodyBytes > MAX_BODY_BYTES) return {kind: 'damaged', reason: `record length ${bodyBytes} out of range`}
  const total = RECORD_HEADER_BYTES + bodyBytes
  if (buf.length - at < total) return {kind: 'short', bytes: total}
  const body = buf.subarray(at + RECORD_HEADER_BYTES, at + total)
  if (checksum(body) !== buf.readUInt32BE(at + 4)) return {kind: 'damaged', reason: 'checksum mismatch'}
  const partition = body.readInt32BE(0)
  const attributeLen = body.readInt32BE(4)
  if (attributeLen < -1 || BODY_FIXED_BYTES + Math.max(attributeLen, 0) > bodyBytes) {
    return {kind: 'damaged', reason: `attribute length ${attributeLen} out of range`}
  }
  const payloadAt = BODY_FIXED_BYTES + Math.max(attributeLen, 0)
  return {
    kind: 'record',
    bytes: total,
    entry: {
      partition,
      attribute: attributeLen < 0 ? undefined : body.toString('utf8', BODY_FIXED_BYTES, payloadAt),
      // A view: the spool reads into a fresh buffer per read (spool.ts readAt), never reused.
      payload: body.subarray(payloadAt),
    },
  }
}
