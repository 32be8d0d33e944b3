/**
 * Reading a spool segment through damage (format.ts has the record layout).
 *
 * A damaged record loses only itself: its bytes become a hole and the scan resynchronises on
 * the next whole record, the way the broker's storage recovers a segment. Records keep their
 * positions (the spool's position counts bytes), so a hole is stepped over, never closed up.
 *
 *   scan records from `from` ─ end of range ───────────────────────────────→ done
 *        │ a bad record at p (length out of range, checksum, zeroed bytes, one that runs
 *        ▼ past the range)
 *   try every q > p: a plausible header (length in range, the record fits, a 31-bit
 *   checksum as protocol/crc.ts makes them, a partition and attribute length in range), its
 *   checksum matches, and the records after it verify too (RESYNC_CONFIRM_RECORDS of them, or
 *   fewer then exactly the end of the range)
 *        │ found q: hole [p, q), scan on from q      │ none
 *        ▼                                           ▼
 *   (loop)                           the last segment's bytes from p are one record that
 *                                    the end of the file cut short: a torn tail (what a
 *                                    killed writer leaves); anything else: a hole to the end
 */
import {readSync} from 'node:fs'
import {checksum} from '../../protocol/crc.js'
import {MAX_BODY_BYTES, parseRecord, RECORD_HEADER_BYTES} from './format.js'

/** Records after a resynchronisation point that must verify (or the range ends first). */
const RESYNC_CONFIRM_RECORDS = 3
/**
 * Longest body a resynchronisation point may start (a message is at most a few MiB): a record
 * longer than this right after damage is lost with it, and garbage is never read through in
 * search of a checksum.
 */
const RESYNC_MAX_BODY_BYTES = 16 * 1024 * 1024
/** Partitions are numbered below this (a broker serves at most a million). */
const PARTITION_LIMIT = 1_000_000
/** How much a scan reads per system call. */
const SCAN_CHUNK_BYTES = 1024 * 1024

/** A damaged range of a segment file: [from, to), offsets in the file. */
interface SegmentHole {
  from: number
  to: number
  reason: string
}

interface SegmentScan {
  /** Whole records found. */
  records: number
  /** Where the last whole record (or hole) ends, as a file offset. */
  end: number
  holes: SegmentHole[]
  /** An incomplete last record, from this offset to the end of the file (only with `last`). */
  torn?: number
}

/**
 * Scan file range [from, to) of `fd`. `last`: the range ends at the end of the spool's last
 * segment, so an incomplete record there is a torn tail rather than damage.
 */
export function scanSegmentFile(fd: number, from: number, to: number, last: boolean): SegmentScan {
  const holes: SegmentHole[] = []
  let records = 0
  let offset = from
  while (offset < to) {
    const chunk = readAt(fd, offset, Math.min(SCAN_CHUNK_BYTES, to - offset))
    let at = 0
    let bad: {at: number; reason: string; short: boolean} | undefined
    while (at < chunk.length) {
      const outcome = parseRecord(chunk, at)
      if (outcome.kind === 'record') {
        records += 1
        at += outcome.bytes
        continue
      }
      if (outcome.kind === 'damaged') {
        bad = {at, reason: zeroed(chunk, at) ? 'zeroed bytes' : outcome.reason, short: false}
        break
      }
      // Short: the chunk ends inside this record.
      if (offset + at + outcome.bytes > to) {
        bad = {at, reason: `record of ${outcome.bytes} bytes runs past the end of its segment`, short: true}
        break
      }
      if (at > 0) break // read the rest from this record on
      const whole = readAt(fd, offset, outcome.bytes)
      const again = parseRecord(whole, 0)
      if (again.kind === 'record') {
        records += 1
        at = outcome.bytes
      } else {
        bad = {at: 0, reason: again.kind === 'damaged' ? again.reason : 'short read', short: false}
      }
      break
    }
    if (bad === undefined) {
      offset += at
      continue
    }
    const p = offset + bad.at
    const resume = findResync(fd, p, to)
    if (resume !== undefined) {
      holes.push({from: p, to: resume, reason: bad.reason})
      offset = resume
      continue
    }
    if (last && bad.short && plausibleStart(fd, p, to)) return {records, end: p, holes, torn: p}
    holes.push({from: p, to, reason: bad.reason})
    return {records, end: to, holes}
  }
  return {records, end: offset, holes}
}

/**
 * The first position q in (p, to) where a confirmed run of whole records starts; undefined
 * when there is none.
 */
function findResync(fd: number, p: number, to: number): number | undefined {
  let base = p + 1
  while (to - base >= RECORD_HEADER_BYTES) {
    const buf = readAt(fd, base, Math.min(SCAN_CHUNK_BYTES + RECORD_HEADER_BYTES, to - base))
    const candidates = Math.min(SCAN_CHUNK_BYTES, buf.length - RECORD_HEADER_BYTES + 1)
    for (let i = 0; i < candidates; i += 1) {
      const bodyBytes = buf.readUInt32BE(i)
      if (bodyBytes < 8 || bodyBytes > RESYNC_MAX_BODY_BYTES || buf.readInt32BE(i + 4) < 0) continue
      const q = base + i
      if (q + RECORD_HEADER_BYTES + bodyBytes > to) continue
      // The body's fixed fields before any checksum: a partition and an attribute length in range.
      const fixed = i + 16 <= buf.length ? buf.subarray(i + 8, i + 16) : readAt(fd, q + RECORD_HEADER_BYTES, 8)
      const partition = fixed.readInt32BE(0)
      const attributeLen = fixed.readInt32BE(4)
      if (partition < -1 || partition >= PARTITION_LIMIT || attributeLen < -1 || attributeLen > bodyBytes - 8) continue
      if (confirmed(fd, q, to)) return q
    }
    if (candidates <= 0 || buf.length < RECORD_HEADER_BYTES) return undefined
    base += candidates
  }
  return undefined
}

/** The records from `q` verify: RESYNC_CONFIRM_RECORDS of them, or at least one and then the end of the range. */
function confirmed(fd: number, q: number, to: number): boolean {
  let pos = q
  for (let n = 0; n < RESYNC_CONFIRM_RECORDS; n += 1) {
    if (pos === to) return n > 0
    const header = readAt(fd, pos, Math.min(RECORD_HEADER_BYTES, to - pos))
    if (header.length < RECORD_HEADER_BYTES) return false
    const bodyBytes = header.readUInt32BE(0)
    if (bodyBytes < 8 || bodyBytes > (n === 0 ? RESYNC_MAX_BODY_BYTES : MAX_BODY_BYTES) || pos + RECORD_HEADER_BYTES + bodyBytes > to) return false
    const body = readAt(fd, pos + RECORD_HEADER_BYTES, bodyBytes)
    if (body.length < bodyBytes || checksum(body) !== header.readUInt32BE(4)) return false
    pos += RECORD_HEADER_BYTES + bodyBytes
  }
  return true
}

/**
 * The bytes from p look like the start of one record a write did not finish: a length in
 * range (fewer than its four bytes: anything, a short record's length starts with zeroes).
 */
function plausibleStart(fd: number, p: number, to: number): boolean {
  const header = readAt(fd, p, Math.min(RECORD_HEADER_BYTES, to - p))
  if (header.length < 4) return true
  const bodyBytes = header.readUInt32BE(0)
  return bodyBytes >= 8 && bodyBytes <= MAX_BODY_BYTES && (header.length < RECORD_HEADER_BYTES || header.readInt32BE(4) >= 0)
}

function zeroed(buf: Buffer, at: number): boolean {
  const end = Math.min(buf.length, at + RECORD_HEADER_BYTES)
  for (let i = at; i < end; i++) if (buf[i] !== 0) return false
  return end > at
}

/** `bytes` from `offset` into a new buffer (shorter at the end of the file); records parsed from it keep views of it. */
export function readAt(fd: number, offset: number, bytes: number): Buffer {
  const buf = Buffer.allocUnsafe(bytes)
  let got = 0
  while (got < bytes) {
    const n = readSync(fd, buf, got, bytes - got, offset + got)
    if (n === 0) break
    got += n
  }
  return got === bytes ? buf : buf.subarray(0, got)
}
