/**
 * put — append one message (docs/protocol.md#put).
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
import {byteParse} from '../decoder.js'
import {messageIdOfHalves, writeMessageIdDecimal} from '../message-id.js'
import {DecimalText, intTextLength, setUint32Digits, setUint32Padded, uint32Digits, writeUint32Digits, type OutputBuffer} from '../output-buffer.js'
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
/** The five numbers of the header being read by parsePutBytes (module scratch: no array per put). */
const numbers = new Float64Array(5)

/** Longest header prefix remembered for the next put (`put <topic> <partition> <len> <flag> `). */
const PREFIX_BYTES_MAX = 128
/**
 * The last header read whole: its prefix up to the checksum as little-endian 32-bit words
 * (at 0, 4, 8, … and the last one ending at the prefix's end, overlapping the one before),
 * and what that prefix held. A producer's puts repeat it while topic, partition, length and
 * flag do; then only the checksum and the opaque are read.
 */
const prefixWords = new Int32Array(PREFIX_BYTES_MAX / 4)
let prefixBytes = 0
let prefixTopic = ''
let prefixPartition = 0
let prefixBodyLength = 0
let prefixFlag = 0
/** A DataView of the last buffer parsePutBytes compared words in (one per socket chunk). */
let viewBuf: Buffer = EMPTY
let view: DataView = new DataView(EMPTY.buffer, EMPTY.byteOffset, 0)

/**
 * The broker's hot path: the current non-transactional form
 * `put <topic> <partition> <len> <flag> <checksum> <opaque>` read from the bytes in place
 * (decoder.ts ByteParser) with no string but the topic's and no object but the frame. A
 * header whose bytes up to the checksum are the last whole one's is matched a word at a time
 * (in optimized code a DataView word costs little more than one typed-array byte);
 * otherwise it is read whole, in one pass. Numbers are read as
 * tokens.ts#parseIntToken reads them, up to 10 digits (an int32 or a uint32 opaque); any
 * other form, or any value the token parser would question, returns undefined, and parsePut,
 * the general parser, handles it (test/protocol/byte-parsers.test.ts compares the two on
 * random headers and on streams of them).
 */
export function parsePutBytes(buf: Buffer, start: number, eol: number): PutCommand | undefined {
  const n = prefixBytes
  if (n > 0 && eol - start > n && samePrefix(buf, start, n)) {
    const pos = readNumbers(buf, view, start + n, eol, 3)
    if (pos !== eol) return parseWhole(buf, start, eol)
    const checksum = numbers[3]
    const opaque = numbers[4]
    if (!(checksum >= INT32_MIN && checksum <= INT32_MAX && opaque >= INT32_MIN && opaque <= 4294967295)) return undefined
    byteParse.bodyLength = prefixBodyLength
    return putFrame(prefixTopic, prefixPartition, prefixFlag, checksum, opaque)
  }
  return parseWhole(buf, start, eol)
}

/** parsePutBytes for a header read whole, remembering its prefix for the next one. */
function parseWhole(buf: Buffer, start: number, eol: number): PutCommand | undefined {
  // "put " then the topic: a non-empty run of non-space bytes, then one space.
  if (eol - start < 15 || buf[start + 1] !== 0x75 || buf[start + 2] !== 0x74 || buf[start + 3] !== 0x20 || buf[start] !== 0x70) return undefined
  const topicStart = start + 4
  let topic: string | undefined
  let pos = topicStart
  const last = lastTopicBytes
  const lastLength = last.length
  if (topicStart + lastLength < eol && buf[topicStart + lastLength] === 0x20) {
    // Most likely the last topic again: compare while scanning (its bytes hold no space).
    while (pos - topicStart < lastLength && buf[pos] === last[pos - topicStart]) pos++
    if (pos - topicStart === lastLength) topic = lastTopic
  }
  while (pos < eol && buf[pos] !== 0x20) pos++
  const topicEnd = pos
  if (topicEnd === topicStart || topicEnd === eol) return undefined
  // The partition must be canonical (no leading zero, no "-0"): tokens.ts#canonicalIntField.
  pos = topicEnd + 1
  const first = buf[pos] === 0x2d ? pos + 1 : pos
  if (buf[first] === 0x30 && (first > pos || buf[first + 1] !== 0x20)) return undefined
  const v = buf === viewBuf ? view : viewOf(buf)
  const checksumStart = readNumbers(buf, v, pos, eol, 0)
  if (checksumStart < 0 || readNumbers(buf, v, checksumStart, eol, 3) !== eol) return undefined
  const partition = numbers[0]
  const bodyLength = numbers[1]
  const flag = numbers[2]
  const checksum = numbers[3]
  const opaque = numbers[4]
  if (!(partition >= INT32_MIN && partition <= INT32_MAX && flag >= INT32_MIN && flag <= INT32_MAX)) return undefined
  if (!(checksum >= INT32_MIN && checksum <= INT32_MAX && bodyLength >= 0 && bodyLength <= INT32_MAX)) return undefined
  if (!(opaque >= INT32_MIN && opaque <= 4294967295)) return undefined
  topic ??= newTopic(buf, topicStart, topicEnd)
  rememberPrefix(start, checksumStart - start, topic, partition, bodyLength, flag)
  byteParse.bodyLength = bodyLength
  return putFrame(topic, partition, flag, checksum, opaque)
}

/**
 * Read the header's numbers from buf[pos] (`v` is a DataView of buf) into `numbers`: from 0
 * the first three (partition, length, flag), from 3 the last two (checksum, opaque). Each is
 * an optional '-' and 1 to 10 digits followed by one space, but the opaque, which is followed
 * by nothing. Returns where they ended, or -1. Words are read only inside the line, and its
 * \r stops every byte loop, so nothing past the line is read.
 */
function readNumbers(buf: Buffer, v: DataView, pos: number, eol: number, from: number): number {
  const to = from === 0 ? 3 : 5
  for (let k = from; k < to; k++) {
    const negative = buf[pos] === 0x2d
    if (negative) pos++
    const digitsStart = pos
    let value = 0
    // Four digits per DataView word while there are four (little-endian: the first is the
    // low byte), then byte by byte. A byte is a digit when its high nibble is 3, and still 3
    // with 6 added (both tested: 0x2a-0x2f pass the second alone); the four digits d0..d3
    // combine as (d0·10 + d1)·100 + d2·10 + d3.
    while (pos + 4 <= eol) {
      const word = v.getInt32(pos, true)
      if ((((word & 0xf0f0f0f0) ^ 0x30303030) | (((word + 0x06060606) & 0xf0f0f0f0) ^ 0x30303030)) !== 0) break
      const digits = word - 0x30303030
      const pairs = (digits * 10 + (digits >>> 8)) & 0x00ff00ff
      value = value * 10000 + (pairs & 0xff) * 100 + (pairs >>> 16)
      pos += 4
    }
    let digit = buf[pos] - 48
    while (digit >= 0 && digit <= 9) {
      value = value * 10 + digit
      digit = buf[++pos] - 48
    }
    if (pos === digitsStart || pos - digitsStart > 10) return -1
    numbers[k] = negative ? -value : value
    // One space and a next token, or the line's end after the last number.
    if (k < 4 && buf[pos++] !== 0x20) return -1
  }
  return pos
}

function putFrame(topic: string, partition: number, flag: number, checksum: number, opaque: number): PutCommand {
  return {type: 'put', topic, partition, flag, checksum, txKey: null, opaque, body: EMPTY}
}

/** True when buf[start, start + n) is the remembered prefix (n > 4, within buf). */
function samePrefix(buf: Buffer, start: number, n: number): boolean {
  const v = buf === viewBuf ? view : viewOf(buf)
  const last = (n - 1) >> 2
  let i = 0
  while (i < last && v.getInt32(start + 4 * i, true) === prefixWords[i]) i++
  return i === last && v.getInt32(start + n - 4, true) === prefixWords[last]
}

function rememberPrefix(start: number, n: number, topic: string, partition: number, bodyLength: number, flag: number): void {
  if (n > PREFIX_BYTES_MAX) {
    prefixBytes = 0
    return
  }
  const v = view // buf's: parseWhole made it
  const last = (n - 1) >> 2
  for (let i = 0; i < last; i++) prefixWords[i] = v.getInt32(start + 4 * i, true)
  prefixWords[last] = v.getInt32(start + n - 4, true)
  prefixBytes = n
  prefixTopic = topic
  prefixPartition = partition
  prefixBodyLength = bodyLength
  prefixFlag = flag
}

function viewOf(buf: Buffer): DataView {
  viewBuf = buf
  view = new DataView(buf.buffer, buf.byteOffset, buf.length)
  return view
}

/** The topic token as a string, remembered (with its bytes) for the next put. */
function newTopic(buf: Buffer, start: number, end: number): string {
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
export function writePut(out: OutputBuffer, topic: string, partition: number, body: Uint8Array, flag: number, checksum: number, opaque: number): void {
  if ((partition | 0) !== partition || (flag | 0) !== flag || (checksum | 0) !== checksum || (opaque | 0) !== opaque) {
    writePutOfNumbers(out, topic, partition, body, flag, checksum, opaque)
    return
  }
  const prefix = putPrefix(topic)
  const prefixLength = prefix.length
  // body.length, not byteLength: optimized code on Node 20 inlines `length` but calls a getter for
  // byteLength.
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
  if (
    partition >>> 0 !== partition ||
    !(offset >= 0 && offset <= Number.MAX_SAFE_INTEGER && Math.floor(offset) === offset) ||
    !(opaque >= -0xffffffff && opaque <= 0xffffffff && Math.floor(opaque) === opaque)
  ) {
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
  // Room for the reply and for the up to 3 bytes past its end that a word store may write.
  const view = out.roomView(11 + 10 + 1 + 11 + 2 + bodyLength + 3)
  let pos = out.byteLength
  // "result 200 " in words (little-endian: the first character is the low byte).
  view.setUint32(pos, 0x75736572, true) // "resu"
  view.setUint32(pos + 4, 0x3220746c, true) // "lt 2"
  view.setUint16(pos + 8, 0x3030, true) // "00"
  pos += 10
  if (bodyLength >= 10 && bodyLength < 100) {
    // Always so for ids meta issues (19 digits): " <two digits> " in one store.
    const tens = (bodyLength / 10) | 0
    view.setUint32(pos, 0x20000020 | ((48 + tens) << 8) | ((48 + bodyLength - tens * 10) << 16), true)
    pos += 4
  } else {
    view.setUint8(pos, 0x20)
    pos = setUint32Digits(view, pos + 1, bodyLength)
    view.setUint8(pos++, 0x20)
  }
  if (opaque < 0) {
    view.setUint8(pos++, 0x2d)
    pos = setUint32Digits(view, pos, -opaque)
  } else {
    pos = setUint32Digits(view, pos, opaque)
  }
  view.setUint16(pos, 0x0a0d, true) // CRLF
  pos = ID_TEXT.setTo(view, pos + 2)
  // Digit counts are known from the body length: written at that width, not counted again.
  if (partition < 10) {
    // " <digit> " (the fourth byte is the offset's first, written next).
    view.setUint32(pos, 0x200020 | ((48 + partition) << 8), true)
    pos += 3
  } else {
    view.setUint8(pos, 0x20)
    pos = setUint32Padded(view, pos + 1, partition, partitionDigits)
    view.setUint8(pos++, 0x20)
  }
  if (offsetHigh > 0) {
    pos = setUint32Padded(view, pos, offsetHigh, offsetHighDigits)
    pos = setUint32Padded(view, pos, offsetLow, 8)
  } else {
    pos = setUint32Padded(view, pos, offsetLow, offsetDigits)
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
