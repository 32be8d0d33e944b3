/**
 * Message sets: MetaQ's stored record format (docs/protocol.md#stored-records), used on disk, in
 * every `value` body and in replication.
 *
 *   offset  size  field
 *   0       4     length    int32 BE, bytes of the encoded payload (header excluded)
 *   4       4     checksum  int32 BE, crc32(payload) & 0x7FFFFFFF
 *   8       8     id        int64 BE, message id (see message-id.ts)
 *   16      4     flag      int32 BE, bit 0 = payload starts with an attribute block
 *   20      len   payload   [int32 BE attrLen + attr UTF-8 bytes, if flag bit 0] + data
 *
 * Records are concatenated without padding. A set may end in a partial record (the broker
 * sends raw log bytes up to maxSize); decoders stop there and report how many bytes they
 * consumed, so a consumer advances its offset only past whole messages.
 */
import {checksum, checksumOfRangeWords} from './crc.js'
import {int32At} from './output-buffer.js'
import {MetaError} from './errors.js'

export const RECORD_HEADER_BYTES = 20
/** MetaQ clients reject payloads above 2 MiB (notify.remoting.max_read_buffer_size). */
export const MAX_PAYLOAD_BYTES_DEFAULT = 2 * 1024 * 1024
export const FLAG_HAS_ATTRIBUTE = 1

/** One message as read back from a message set. Buffers are views into the set. */
export interface StoredMessage {
  /** Byte position of the record's header in the partition log. */
  offset: number
  /** Bytes the record occupies (header + payload). */
  size: number
  id: bigint
  flag: number
  checksum: number
  /** The encoded payload (attribute block included). */
  payload: Buffer
  /** The attribute when flag bit 0 is set (the empty string counts as present). */
  attribute: string | undefined
  /** The message body without the attribute block. */
  data: Buffer
}

/**
 * Encode a message body and optional attribute into MetaQ's payload form
 * (docs/protocol.md#stored-records).
 */
export function encodePayload(data: Uint8Array, attribute?: string, flag = 0): {payload: Buffer; flag: number} {
  if (attribute === undefined) {
    return {payload: Buffer.from(data.buffer, data.byteOffset, data.byteLength), flag: flag & ~FLAG_HAS_ATTRIBUTE}
  }
  const attr = Buffer.from(attribute, 'utf8')
  const payload = Buffer.allocUnsafe(4 + attr.length + data.byteLength)
  payload.writeInt32BE(attr.length, 0)
  attr.copy(payload, 4)
  payload.set(data, 4 + attr.length)
  return {payload, flag: (flag & ~FLAG_HAS_ATTRIBUTE) | FLAG_HAS_ATTRIBUTE}
}

/**
 * Split an encoded payload into attribute and data. Throws INVALID_MESSAGE when the flag
 * says there is an attribute but the block does not fit.
 */
export function decodePayload(payload: Buffer, flag: number): {attribute: string | undefined; data: Buffer} {
  if ((flag & FLAG_HAS_ATTRIBUTE) === 0) return {attribute: undefined, data: payload}
  const problem = attributeBlockProblem(payload, 0, payload.length)
  if (problem !== undefined) throw new MetaError('INVALID_MESSAGE', problem)
  const attrLen = payload.readInt32BE(0)
  return {
    attribute: payload.toString('utf8', 4, 4 + attrLen),
    data: payload.subarray(4 + attrLen),
  }
}

/**
 * Why the attribute block of the payload buf[start, end) does not fit in it (a record whose
 * flag says it has one), or undefined when it does.
 */
function attributeBlockProblem(buf: Uint8Array, start: number, end: number): string | undefined {
  if (end - start < 4) return `attribute flag set but payload has only ${end - start} bytes`
  const attrLen = int32At(buf, start)
  if (attrLen < 0 || 4 + attrLen > end - start) return `invalid attribute length ${attrLen} in a payload of ${end - start} bytes`
  return undefined
}

/** Write a 20-byte record header at `pos`. `id` is written as a signed int64. */
export function writeRecordHeader(buf: Buffer, pos: number, length: number, crc: number, id: bigint, flag: number): void {
  buf.writeInt32BE(length, pos)
  buf.writeInt32BE(crc, pos + 4)
  buf.writeBigInt64BE(id, pos + 8)
  buf.writeInt32BE(flag | 0, pos + 16)
}

/** A whole stored record (header + payload) in a new buffer. */
export function encodeRecord(id: bigint, flag: number, payload: Uint8Array, crc = checksum(payload)): Buffer {
  const buf = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.byteLength)
  writeRecordHeader(buf, 0, payload.byteLength, crc, id, flag)
  buf.set(payload, RECORD_HEADER_BYTES)
  return buf
}

export interface DecodeOptions {
  /** Absolute log offset of `buf[0]` (the fetch offset). Default 0. */
  baseOffset?: number
  /** Verify each record's CRC (default true). */
  verifyChecksum?: boolean
  /** Reject payloads longer than this (default 2 MiB, as MetaQ clients do). */
  maxPayloadBytes?: number
}

export interface DecodedSet {
  messages: StoredMessage[]
  /** Bytes of whole records consumed; the next fetch offset is baseOffset + bytesConsumed. */
  bytesConsumed: number
  /**
   * Set when decoding stopped at a bad record (CRC mismatch, negative or oversize length).
   * `messages` holds the good records before it.
   */
  error?: MetaError
}

/**
 * Called for each whole, valid record: its position in the set, the position after it, its
 * flag, and for a record with an attribute block the attribute and the data after it (a view
 * into the set). A record without one has no attribute and its data is the whole payload,
 * set[pos + RECORD_HEADER_BYTES, next): `data` is then undefined.
 */
export type RecordVisitor = (pos: number, next: number, flag: number, attribute: string | undefined, data: Buffer | undefined) => void

/**
 * Walk a message set record by record with MetaQ's checks, calling `visit(pos, next)` for
 * each whole, valid record (its position in the set and the position after it); stops
 * silently at a partial trailing record and with an error at a bad one (negative or oversize
 * length, CRC mismatch, attribute block that does not fit). Nothing is decoded: the one loop
 * behind walkMessageSet and the consumer's fetched batches, which read fields on demand.
 */
export function walkRecords(buf: Buffer, options: DecodeOptions, visit: (pos: number, next: number) => void): {bytesConsumed: number; error?: MetaError} {
  const base = options.baseOffset ?? 0
  const verify = options.verifyChecksum ?? true
  const maxPayload = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES_DEFAULT
  const end = buf.length
  // One view for the whole walk: the CRC loop reads the records 4 bytes at a time (scanRecords).
  const words = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  let pos = 0
  while (end - pos >= RECORD_HEADER_BYTES) {
    // int32At, not Buffer#readInt32BE: see output-buffer.ts.
    const length = int32At(buf, pos)
    if (length < 0 || length > maxPayload) {
      return {bytesConsumed: pos, error: invalidRecord(`invalid message length ${length}`, base + pos)}
    }
    const next = pos + RECORD_HEADER_BYTES + length
    if (next > end) break
    if (verify && checksumOfRangeWords(buf, words, pos + RECORD_HEADER_BYTES, next) !== int32At(buf, pos + 4)) {
      return {bytesConsumed: pos, error: invalidRecord('checksum mismatch', base + pos)}
    }
    if ((int32At(buf, pos + 16) & FLAG_HAS_ATTRIBUTE) !== 0) {
      const problem = attributeBlockProblem(buf, pos + RECORD_HEADER_BYTES, next)
      if (problem !== undefined) return {bytesConsumed: pos, error: invalidRecord(problem, base + pos)}
    }
    visit(pos, next)
    pos = next
  }
  return {bytesConsumed: pos}
}

/** walkRecords, with each record's flag and its attribute block decoded for `visit`. */
export function walkMessageSet(buf: Buffer, options: DecodeOptions, visit: RecordVisitor): {bytesConsumed: number; error?: MetaError} {
  return walkRecords(buf, options, (pos, next) => {
    const flag = int32At(buf, pos + 16)
    if ((flag & FLAG_HAS_ATTRIBUTE) === 0) return visit(pos, next, flag, undefined, undefined)
    const {attribute, data} = decodePayload(buf.subarray(pos + RECORD_HEADER_BYTES, next), flag)
    visit(pos, next, flag, attribute, data)
  })
}

/**
 * Where the whole records of `buf` end, by their length fields alone (no checksum): what
 * walkMessageSet's bytesConsumed will be when every record checks out. -1 when a length is
 * negative or over `maxPayloadBytes` (walkMessageSet stops there with an error).
 */
export function wholeRecordsEnd(buf: Uint8Array, maxPayloadBytes = MAX_PAYLOAD_BYTES_DEFAULT): number {
  const end = buf.length
  let pos = 0
  while (end - pos >= RECORD_HEADER_BYTES) {
    const length = int32At(buf, pos)
    if (length < 0 || length > maxPayloadBytes) return -1
    const next = pos + RECORD_HEADER_BYTES + length
    if (next > end) break
    pos = next
  }
  return pos
}

/** Decode a message set, stopping silently at a partial trailing record. */
export function decodeMessageSet(buf: Buffer, options: DecodeOptions = {}): DecodedSet {
  const base = options.baseOffset ?? 0
  const messages: StoredMessage[] = []
  const {bytesConsumed, error} = walkMessageSet(buf, options, (pos, next, flag, attribute, data) => {
    const payload = buf.subarray(pos + RECORD_HEADER_BYTES, next)
    messages.push({
      offset: base + pos,
      size: next - pos,
      id: buf.readBigInt64BE(pos + 8),
      flag,
      checksum: buf.readInt32BE(pos + 4),
      payload,
      attribute,
      data: data ?? payload,
    })
  })
  return error === undefined ? {messages, bytesConsumed} : {messages, bytesConsumed, error}
}

function invalidRecord(reason: string, offset: number): MetaError {
  return new MetaError('INVALID_MESSAGE', `${reason} at offset ${offset}`, {details: {offset}})
}

/** Why {@link scanRecords} stopped. */
export type ScanStop = 'end' | 'partial' | 'bad-length' | 'bad-checksum'

/**
 * Walk whole, valid records from `start` without building objects (recovery, index
 * rebuilding). Calls `onRecord(pos, length)` for each valid record when given.
 * Returns the position after the last valid record and why the walk stopped.
 */
export function scanRecords(
  buf: Buffer,
  start = 0,
  onRecord?: (pos: number, length: number) => void,
  maxPayloadBytes = Number.MAX_SAFE_INTEGER,
): {end: number; stop: ScanStop} {
  let pos = start
  const end = buf.length
  const words = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  while (pos < end) {
    if (end - pos < RECORD_HEADER_BYTES) return {end: pos, stop: 'partial'}
    const length = int32At(buf, pos)
    if (length < 0 || length > maxPayloadBytes) return {end: pos, stop: 'bad-length'}
    if (end - pos - RECORD_HEADER_BYTES < length) return {end: pos, stop: 'partial'}
    const crc = int32At(buf, pos + 4)
    if (checksumOfRangeWords(buf, words, pos + RECORD_HEADER_BYTES, pos + RECORD_HEADER_BYTES + length) !== crc) {
      return {end: pos, stop: 'bad-checksum'}
    }
    onRecord?.(pos, length)
    pos += RECORD_HEADER_BYTES + length
  }
  return {end: pos, stop: 'end'}
}

/**
 * Throw unless `records` is exactly `count` whole records whose checksums verify (a batch
 * appended as is: replication, transaction commit, batched put): CHECKSUM_MISMATCH when a
 * record's checksum is wrong, INVALID_ARGUMENT for anything else.
 */
export function checkRecordBatch(records: Buffer, count: number): void {
  let seen = 0
  const {end, stop} = scanRecords(records, 0, () => (seen += 1))
  if (end !== records.length || seen !== count || count === 0) {
    throw new MetaError(
      stop === 'bad-checksum' ? 'CHECKSUM_MISMATCH' : 'INVALID_ARGUMENT',
      `invalid record batch: expected ${count} whole records in ${records.length} bytes, ` + `found ${seen} (${stop} at byte ${end})`,
    )
  }
}
