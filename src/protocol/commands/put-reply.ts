/**
 * The put reply (docs/protocol.md#put): the body of a put's `result 200`.
 *
 *   result 200 <len> <opaque>\r\n<msgId> <partition> <offset>
 *
 *   msgId      signed 64-bit decimal, up to 19 digits and an optional '-'
 *   partition  non-negative int32 decimal
 *   offset     byte position of the message's header in the partition log (a safe integer),
 *              or -1 for a transactional put (known only at commit)
 *
 * Single spaces, nothing before or after. The broker writes it with encodePutResult /
 * encodePutResultOfHalves (put.ts); every reader (producer, transactions, the HTTP gateway)
 * reads it here.
 */
import {INT32_MAX} from '../tokens.js'

/** A parsed put reply. */
export interface PutReply {
  /** The message id the broker assigned. */
  id: bigint
  /** The partition the message went to (the broker's numbering). */
  partition: number
  /** Byte offset of the message in the partition log; -1 for a transactional put. */
  offset: number
}

/** The slow path's grammar: up to 19 id digits, an int32 partition, a safe-integer offset or -1. */
const PUT_REPLY = /^(-?\d{1,19}) (\d{1,10}) (-1|\d{1,16})$/

/**
 * Reads put reply bodies straight from their bytes. The common form (up to 15 digits of
 * partition and offset) is read without a string and with two bigint allocations at most:
 * the producer keeps one reader and reads every reply with it. Anything else goes through
 * the grammar above as text. `read()` fills `id`, `partition` and `offset` of the reply it
 * accepted.
 */
export class PutReplyReader implements PutReply {
  id = 0n
  partition = 0
  offset = 0
  /** Where the last digitsAt() stopped. */
  private scanEnd = 0
  /** The id's digits before its last nine, as read last, and that number × 10^9 as a bigint. */
  private lastHigh = 0
  private lastHighPart = 0n

  /** True when `body` is a well-formed put reply (the fields are then set); false for anything else. */
  read(body: Buffer): boolean {
    return this.readDigits(body) || this.readText(body)
  }

  /** The fast path: "<id> <partition> <offset>" with 1–15 digits of partition and offset. */
  private readDigits(body: Buffer): boolean {
    const end = body.length
    let pos = 0
    const negative = end > 0 && body[0] === 0x2d
    if (negative) pos = 1
    const idStart = pos
    while (pos < end && body[pos] >= 0x30 && body[pos] <= 0x39) pos++
    const idDigits = pos - idStart
    if (idDigits === 0 || idDigits > 19 || pos >= end || body[pos] !== 0x20) return false
    const idEnd = pos
    const partition = this.digitsAt(body, pos + 1)
    if (partition < 0 || partition > INT32_MAX || this.scanEnd >= end || body[this.scanEnd] !== 0x20) return false
    const offset = this.digitsAt(body, this.scanEnd + 1)
    if (offset < 0 || this.scanEnd !== end) return false
    // Up to 19 digits: the leading ones and the last 9 each fit a double exactly.
    const split = Math.max(idStart, idEnd - 9)
    let high = 0
    for (let i = idStart; i < split; i++) high = high * 10 + body[i] - 0x30
    let low = 0
    for (let i = split; i < idEnd; i++) low = low * 10 + body[i] - 0x30
    // The leading digits repeat from one id to the next: their bigint is kept (two bigint
    // allocations per reply instead of four).
    if (high !== this.lastHigh) {
      this.lastHigh = high
      this.lastHighPart = BigInt(high) * 1_000_000_000n
    }
    const id = high === 0 ? BigInt(low) : this.lastHighPart + BigInt(low)
    this.id = negative ? -id : id
    this.partition = partition
    this.offset = offset
    return true
  }

  /** The slow path: the whole grammar (offset -1, 16-digit offsets) as text. */
  private readText(body: Buffer): boolean {
    if (body.length > 48) return false
    const match = PUT_REPLY.exec(body.toString('latin1'))
    if (match === null) return false
    const partition = Number(match[2])
    const offset = Number(match[3])
    if (partition > INT32_MAX || !Number.isSafeInteger(offset)) return false
    this.id = BigInt(match[1])
    this.partition = partition
    this.offset = offset
    return true
  }

  /** The value of 1 to 15 decimal digits at `pos` (scanEnd = the position after them), or -1. */
  private digitsAt(buf: Buffer, pos: number): number {
    const start = pos
    let value = 0
    while (pos < buf.length && buf[pos] >= 0x30 && buf[pos] <= 0x39) value = value * 10 + buf[pos++] - 0x30
    this.scanEnd = pos
    return pos === start || pos - start > 15 ? -1 : value
  }
}

const reader = new PutReplyReader()

/**
 * Parse a put reply body (the grammar above); undefined when it is not one. Callers that
 * read replies in a loop keep a {@link PutReplyReader} instead (no object per reply).
 */
export function parsePutReply(body: Buffer | string): PutReply | undefined {
  if (!reader.read(typeof body === 'string' ? Buffer.from(body, 'latin1') : body)) return undefined
  return {id: reader.id, partition: reader.partition, offset: reader.offset}
}
