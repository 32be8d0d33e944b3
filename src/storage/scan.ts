/**
 * Walking the valid records of a segment file in large chunks (recovery, index rebuild).
 *
 * Reads SCAN_CHUNK_BYTES at a time and walks them with `scanRecords` (length, CRC), carrying
 * a partial record over to the next chunk; a record larger than the chunk grows the buffer
 * (up to SCAN_MAX_RECORD_BYTES: anything longer is damage, not a record). Stops at the first
 * short, oversize or corrupt record, or at the end of the range.
 *
 * It also stops at an all-zero header: zero length, CRC 0 (the CRC of nothing), id 0, flag 0
 * passes `scanRecords`' checks, but it is what a file extended and never written looks like
 * after a crash, and no broker assigns id 0.
 */
import {RECORD_HEADER_BYTES, scanRecords, type ScanStop} from '../protocol/message-set.js'
import type {FileOps} from './file-ops.js'
import {SCAN_CHUNK_BYTES, SCAN_MAX_RECORD_BYTES} from './layout.js'

/** Called per valid record: `chunk[pos]` is its header, `filePos` its position in the file. */
export type RecordVisitor = (chunk: Buffer, pos: number, length: number, filePos: number) => void

/** Why a scan stopped: `scanRecords`' reasons, or an all-zero header. */
export type ScanStopReason = ScanStop | 'zero-fill'

interface ScanResult {
  /** File position after the last valid record. */
  end: number
  stop: ScanStopReason
}

/** Thrown out of `scanRecords` by the visitor at an all-zero header; never escapes this file. */
class ZeroFill {
  constructor(readonly pos: number) {}
}

function isZeroHeader(chunk: Buffer, pos: number, length: number): boolean {
  return (
    length === 0 &&
    chunk.readInt32BE(pos + 4) === 0 &&
    chunk.readInt32BE(pos + 8) === 0 &&
    chunk.readInt32BE(pos + 12) === 0 &&
    chunk.readInt32BE(pos + 16) === 0
  )
}

/** Read `length` bytes at `position` into `buf[offset..]`, looping over short reads. */
export async function readFully(ops: FileOps, fd: number, buf: Buffer, offset: number, length: number, position: number): Promise<number> {
  let done = 0
  while (done < length) {
    const n = await ops.read(fd, buf, offset + done, length - done, position + done)
    if (n === 0) break
    done += n
  }
  return done
}

/** Walk the valid records of file range [from, to) of `fd`; `pace` is awaited after each read. */
export async function scanFile(
  ops: FileOps,
  fd: number,
  from: number,
  to: number,
  visit?: RecordVisitor,
  pace?: (bytes: number) => Promise<void>,
): Promise<ScanResult> {
  let buf: Buffer = Buffer.allocUnsafe(Math.max(RECORD_HEADER_BYTES, Math.min(SCAN_CHUNK_BYTES, to - from)))
  let base = from
  let held = 0
  for (;;) {
    const want = Math.min(buf.length - held, to - base - held)
    const got = await readFully(ops, fd, buf, held, want, base + held)
    if (pace !== undefined) await pace(got)
    held += got
    if (got < want) to = base + held
    const chunk = buf.subarray(0, held)
    const chunkBase = base
    const onRecord = (pos: number, length: number): void => {
      if (isZeroHeader(chunk, pos, length)) throw new ZeroFill(pos)
      visit?.(chunk, pos, length, chunkBase + pos)
    }
    let scanned: {end: number; stop: ScanStop}
    try {
      scanned = scanRecords(chunk, 0, onRecord, SCAN_MAX_RECORD_BYTES - RECORD_HEADER_BYTES)
    } catch (error) {
      if (error instanceof ZeroFill) return {end: base + error.pos, stop: 'zero-fill'}
      throw error
    }
    const {end, stop} = scanned
    // 'end' only means this chunk ended on a record boundary: the range may go on.
    if ((stop !== 'partial' && stop !== 'end') || base + held >= to) return {end: base + end, stop}
    const rest = held - end
    const need = rest < RECORD_HEADER_BYTES ? 0 : RECORD_HEADER_BYTES + chunk.readInt32BE(end)
    if (base + end + need > to) return {end: base + end, stop: 'partial'}
    buf = carry(buf, end, held, need)
    base += end
    held = rest
  }
}

/** Move the partial record [end, held) to the front, in a buffer big enough for `need` bytes. */
function carry(buf: Buffer, end: number, held: number, need: number): Buffer {
  if (need <= buf.length) {
    buf.copyWithin(0, end, held)
    return buf
  }
  const bigger = Buffer.allocUnsafe(need)
  buf.copy(bigger, 0, end, held)
  return bigger
}

/**
 * Walk the valid records of file range [from, to), stepping over `holes` (known damaged
 * ranges, sorted; see damage.ts) without looking at them. Stops at the first unknown damage.
 */
export async function scanAround(
  ops: FileOps,
  fd: number,
  from: number,
  to: number,
  holes: ReadonlyArray<{readonly from: number; readonly to: number}> | undefined,
  visit?: RecordVisitor,
): Promise<ScanResult> {
  if (holes === undefined) return scanFile(ops, fd, from, to, visit)
  let pos = from
  for (const hole of holes) {
    if (hole.to <= pos) continue
    if (hole.from >= to) break
    if (hole.from > pos) {
      const scanned = await scanFile(ops, fd, pos, hole.from, visit)
      if (scanned.end < hole.from) return scanned
    }
    pos = hole.to
  }
  return pos >= to ? {end: pos, stop: 'end'} : scanFile(ops, fd, pos, to, visit)
}
