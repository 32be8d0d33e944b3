/**
 * put — append one message (spec §1.2, §1.5, Appendix A.2.1).
 *
 *   put <topic> <partition> <len> <flag> <opaque>\r\n<body>                      legacy (< 1.4.4)
 *   put <topic> <partition> <len> <flag> <checksum> <opaque>\r\n<body>           current
 *   put <topic> <partition> <len> <flag> <txKey> <opaque>\r\n<body>              legacy transactional
 *   put <topic> <partition> <len> <flag> <checksum> <txKey> <opaque>\r\n<body>   current transactional
 *
 * 7 tokens are told apart by the first character of token 5: a digit or '-' is a checksum,
 * anything else a transaction key. `checksum` -1 = not supplied; txKey "null" = none.
 * partition -1 = the broker picks one. The body is the encoded payload (message-set.ts).
 * Reply: `result 200` with body "<msgId> <partition> <offset>", or an error result.
 */
import {decimalAt, decimalScan} from '../decoder.js'
import {messageIdOfHalves, writeMessageIdDecimal} from '../message-id.js'
import {DecimalText, intTextLength, uint32Digits, writeUint32Digits, writeUint32Padded, type OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, INT32_MAX, INT32_MIN, intField, lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'

export interface PutCommand {
  readonly type: 'put'
  topic: string
  partition: number
  flag: number
  /** CRC of the body as sent, or -1 when the client supplied none. */
  checksum: number
  /** Transaction key (`TX:…`, `XID:…`) or null outside a transaction. */
  txKey: string | null
  opaque: number
  body: Buffer
}

export const NO_CHECKSUM = -1

export function parsePut(tokens: string[]): {frame: PutCommand; bodyLength: number} {
  tokenCount('put', tokens, [6, 7, 8])
  let checksum = NO_CHECKSUM
  let txKey: string | null = null
  if (tokens.length === 7) {
    const c = tokens[5].charCodeAt(0)
    if ((c >= 48 && c <= 57) || c === 45) checksum = intField('put', 'checksum', tokens[5])
    else txKey = tokens[5]
  } else if (tokens.length === 8) {
    checksum = intField('put', 'checksum', tokens[5])
    txKey = tokens[6]
  }
  if (txKey === 'null') txKey = null
  const bodyLength = lengthField('put', 'length', tokens[3])
  const frame: PutCommand = {
    type: 'put',
    topic: nameField('put', 'topic', tokens[1]),
    partition: canonicalIntField('put', 'partition', tokens[2]),
    flag: intField('put', 'flag', tokens[4]),
    checksum,
    txKey,
    opaque: opaqueField('put', tokens[tokens.length - 1]),
    body: EMPTY,
  }
  return {frame, bodyLength}
}

const EMPTY = Buffer.alloc(0)
/** The last topic read by parsePutBytes, as bytes and as the string the token parser makes. */
let lastTopicBytes: Buffer = EMPTY
let lastTopic = ''
/** Where the number read by {@link intAt} ended (module state: no result object per number). */
let intEnd = 0

/**
 * The broker's hot path: the current non-transactional form
 * `put <topic> <partition> <len> <flag> <checksum> <opaque>` read from the bytes in place
 * (decoder.ts ByteParser), in one pass with no string but the topic's (reused while the
 * topic's bytes repeat) and no object but the frame. Any other form, or any value the token
 * parser would question, returns undefined, and parsePut handles it exactly as before
 * (test/protocol/byte-parsers.test.ts compares the two on random headers).
 */
export function parsePutBytes(buf: Buffer, start: number, eol: number): {frame: PutCommand; bodyLength: number} | undefined {
  // "put " then the topic: a non-empty run of non-space bytes, then one space.
  if (eol - start < 15 || buf[start + 1] !== 0x75 || buf[start + 2] !== 0x74 || buf[start + 3] !== 0x20 || buf[start] !== 0x70) return undefined
  const topicStart = start + 4
  let pos = topicStart
  while (pos < eol && buf[pos] !== 0x20) pos++
  const topicEnd = pos
  if (topicEnd === topicStart || topicEnd === eol) return undefined
  // Five numbers, each after exactly one space; the last one ends the line.
  // The partition must be canonical (no leading zero, no "-0"): tokens.ts#canonicalIntField.
  pos = topicEnd + 1
  const first = buf[pos] === 0x2d ? pos + 1 : pos
  if (buf[first] === 0x30 && (first > pos || buf[first + 1] !== 0x20)) return undefined
  const partition = intAt(buf, pos, eol)
  pos = intEnd + 1
  const bodyLength = intAt(buf, pos, eol)
  pos = intEnd + 1
  const flag = intAt(buf, pos, eol)
  pos = intEnd + 1
  const checksum = intAt(buf, pos, eol)
  pos = intEnd + 1
  const opaque = intAt(buf, pos, eol)
  if (intEnd !== eol) return undefined
  // NaN (not a number, or no space after it) fails every comparison below, so those fall back too.
  if (!(partition >= INT32_MIN && partition <= INT32_MAX && flag >= INT32_MIN && flag <= INT32_MAX)) return undefined
  if (!(checksum >= INT32_MIN && checksum <= INT32_MAX && bodyLength >= 0 && bodyLength <= INT32_MAX)) return undefined
  if (!(opaque >= INT32_MIN && opaque <= 4294967295)) return undefined
  const frame: PutCommand = {
    type: 'put',
    topic: topicOf(buf, topicStart, topicEnd),
    partition,
    flag,
    checksum,
    txKey: null,
    opaque,
    body: EMPTY,
  }
  return {frame, bodyLength}
}

/**
 * The decimal integer token at buf[pos] (decoder.ts decimalAt) that ends at `eol` or at a
 * space followed by more: its value, with {@link intEnd} set to where it ended; NaN for
 * anything else.
 */
function intAt(buf: Buffer, pos: number, eol: number): number {
  const value = decimalAt(buf, pos, eol)
  const end = (intEnd = decimalScan.end)
  // At the line's end, or one space followed by a byte that is not another space.
  if (end < eol && (buf[end] !== 0x20 || end + 1 >= eol || buf[end + 1] === 0x20)) return Number.NaN
  return value
}

/** The topic token as a string, reusing the last one when the bytes are the same. */
function topicOf(buf: Buffer, start: number, end: number): string {
  const length = end - start
  const last = lastTopicBytes
  if (length === last.length) {
    let i = 0
    while (i < length && buf[start + i] === last[i]) i++
    if (i === length) return lastTopic
  }
  lastTopic = buf.toString('utf8', start, end)
  lastTopicBytes = Buffer.from(buf.subarray(start, end))
  return lastTopic
}

const PREFIX_CACHE_MAX = 1024
const putPrefixes = new Map<string, Buffer>()

/** `put <topic> ` as bytes, cached per topic. */
function putPrefix(topic: string): Buffer {
  let prefix = putPrefixes.get(topic)
  if (prefix === undefined) {
    if (putPrefixes.size >= PREFIX_CACHE_MAX) putPrefixes.clear()
    prefix = Buffer.from(`put ${topic} `, 'latin1')
    putPrefixes.set(topic, prefix)
  }
  return prefix
}

/** Room a put's header needs besides its topic: five numbers of up to 11 characters, four spaces, CRLF. */
const PUT_NUMBERS_BYTES = 5 * 11 + 4 + 2
const copyBytes = Uint8Array.prototype.set

/**
 * The client's hot path: a non-transactional put in the current form, written straight into
 * the output buffer without building a command object (or a header string). When every
 * number is an int32 (always, from the producer) the line is written in one go into the
 * buffer's room: no bounds check or call per token.
 */
export function writePut(
  out: OutputBuffer,
  topic: string,
  partition: number,
  body: Uint8Array,
  flag: number,
  checksum: number,
  opaque: number,
): void {
  if ((partition | 0) !== partition || (flag | 0) !== flag || (checksum | 0) !== checksum || (opaque | 0) !== opaque) {
    writePutOfNumbers(out, topic, partition, body, flag, checksum, opaque)
    return
  }
  const prefix = putPrefix(topic)
  const prefixLength = prefix.length
  // body.length, not byteLength: V8 inlines the former (perf3's note in partition-log.ts).
  const length = body.length
  const buf = out.room(prefixLength + PUT_NUMBERS_BYTES + length)
  let pos = out.byteLength
  for (let i = 0; i < prefixLength; i++) buf[pos++] = prefix[i]
  pos = writeInt32(buf, pos, partition)
  buf[pos++] = 0x20
  pos = writeUint32Digits(buf, pos, length)
  buf[pos++] = 0x20
  pos = writeInt32(buf, pos, flag)
  buf[pos++] = 0x20
  pos = writeInt32(buf, pos, checksum)
  buf[pos++] = 0x20
  pos = writeInt32(buf, pos, opaque)
  buf[pos++] = 0x0d
  buf[pos++] = 0x0a
  copyBytes.call(buf, body, pos)
  out.advance(pos + length)
}

/** The decimal text of an int32 at buf[pos]; returns where it ends. */
function writeInt32(buf: Uint8Array, pos: number, n: number): number {
  if (n < 0) {
    buf[pos++] = 0x2d
    n = -n // at most 2^31: still a uint32
  }
  return writeUint32Digits(buf, pos, n)
}

/** writePut for numbers outside int32 (any safe integer, as String(n) writes it). */
function writePutOfNumbers(out: OutputBuffer, topic: string, partition: number, body: Uint8Array, flag: number, checksum: number, opaque: number): void {
  out.writeBytes(putPrefix(topic))
  out.writeInt(partition)
  out.writeByte(0x20)
  out.writeInt(body.byteLength)
  out.writeByte(0x20)
  out.writeInt(flag)
  out.writeByte(0x20)
  out.writeInt(checksum)
  out.writeByte(0x20)
  out.writeInt(opaque)
  out.writeCrlf()
  out.writeBytes(body)
}

const RESULT_200 = Buffer.from('result 200 ', 'latin1')
/** The last id acknowledged, as text moved by its step (DecimalText): ids are 19 digits. */
const ID_TEXT = new DecimalText()
const TEN_POW_8 = 100_000_000

/**
 * The same reply for the id with these int64 halves (MessageIdGenerator#nextHalves), written
 * in one go without a bigint or a string: the broker's put path. Consecutive ids differ by
 * small steps, so the id's 19 digits are updated in place (DecimalText) rather than formatted
 * again; the opaque, partition and offset (uint32 arithmetic, two digits per division) are
 * formatted directly, which costs less than stepping them.
 */
export function encodePutResultOfHalves(out: OutputBuffer, opaque: number, idHigh: number, idLow: number, partition: number, offset: number): void {
  if ((partition >>> 0) !== partition || !(offset >= 0 && offset <= Number.MAX_SAFE_INTEGER && Math.floor(offset) === offset) || !(opaque >= -0xffffffff && opaque <= 0xffffffff && Math.floor(opaque) === opaque)) {
    encodePutResult(out, opaque, messageIdOfHalves(idHigh, idLow), partition, offset)
    return
  }
  ID_TEXT.setIdHalves(idHigh, idLow, writeMessageIdDecimal)
  // An offset of 2^32 or more is written as its two parts: offset = high·10^8 + low.
  const offsetHigh = offset > 0xffffffff ? Math.floor(offset / TEN_POW_8) : 0
  const offsetLow = offset - offsetHigh * TEN_POW_8
  const offsetHighDigits = offsetHigh > 0 ? uint32Digits(offsetHigh) : 0
  const offsetDigits = offsetHigh > 0 ? offsetHighDigits + 8 : uint32Digits(offsetLow)
  const partitionDigits = uint32Digits(partition)
  const bodyLength = ID_TEXT.byteLength + 2 + partitionDigits + offsetDigits
  const buf = out.room(11 + 10 + 1 + 11 + 2 + bodyLength)
  let pos = out.byteLength
  // "result 200 " as constant stores (no loop over a constant buffer).
  buf[pos] = 0x72 // r
  buf[pos + 1] = 0x65 // e
  buf[pos + 2] = 0x73 // s
  buf[pos + 3] = 0x75 // u
  buf[pos + 4] = 0x6c // l
  buf[pos + 5] = 0x74 // t
  buf[pos + 6] = 0x20
  buf[pos + 7] = 0x32 // 2
  buf[pos + 8] = 0x30 // 0
  buf[pos + 9] = 0x30 // 0
  buf[pos + 10] = 0x20
  pos += 11
  if (bodyLength >= 10 && bodyLength < 100) {
    // Always so for ids meta issues (19 digits): two digits without a call.
    const tens = (bodyLength / 10) | 0
    buf[pos++] = 48 + tens
    buf[pos++] = 48 + bodyLength - tens * 10
  } else {
    pos = writeUint32Digits(buf, pos, bodyLength)
  }
  buf[pos++] = 0x20
  if (opaque < 0) {
    buf[pos++] = 0x2d
    pos = writeUint32Digits(buf, pos, -opaque)
  } else {
    pos = writeUint32Digits(buf, pos, opaque)
  }
  buf[pos++] = 0x0d
  buf[pos++] = 0x0a
  pos = ID_TEXT.writeTo(buf, pos)
  buf[pos++] = 0x20
  // Digit counts are known from the body length: written at that width, not counted again.
  if (partition < 10) buf[pos++] = 48 + partition
  else pos = writeUint32Padded(buf, pos, partition, partitionDigits)
  buf[pos++] = 0x20
  if (offsetHigh > 0) {
    pos = writeUint32Padded(buf, pos, offsetHigh, offsetHighDigits)
    pos = writeUint32Padded(buf, pos, offsetLow, 8)
  } else {
    pos = writeUint32Padded(buf, pos, offsetLow, offsetDigits)
  }
  out.advance(pos)
}

/** A successful put's reply: `result 200 <len> <opaque>` with body "<msgId> <partition> <offset>". */
export function encodePutResult(out: OutputBuffer, opaque: number, id: bigint, partition: number, offset: number): void {
  const idText = id.toString()
  out.writeBytes(RESULT_200)
  out.writeInt(idText.length + 2 + intTextLength(partition) + intTextLength(offset))
  out.writeByte(0x20)
  out.writeInt(opaque)
  out.writeCrlf()
  out.writeAscii(idText)
  out.writeByte(0x20)
  out.writeInt(partition)
  out.writeByte(0x20)
  out.writeInt(offset)
}

/** Encode in the current form (with checksum; with txKey when given). */
export function encodePut(out: OutputBuffer, cmd: Omit<PutCommand, 'type'>): void {
  const checksum = cmd.checksum
  const tx = cmd.txKey === null ? '' : ` ${cmd.txKey}`
  out.writeAscii(`put ${cmd.topic} ${cmd.partition} ${cmd.body.length} ${cmd.flag} ${checksum}${tx} ${cmd.opaque}\r\n`)
  out.writeBytes(cmd.body)
}
