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
import {asciiBytes, HeaderCursor} from '../decoder.js'
import {messageIdOfHalves, writeMessageIdDecimal} from '../message-id.js'
import {DecimalText, intTextLength, uint32Digits, writeUint32Digits, type OutputBuffer} from '../output-buffer.js'
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
const PUT_SPACE = asciiBytes('put ')
const cursor = new HeaderCursor()
/** The last topic read by parsePutBytes, as bytes and as the string the token parser makes. */
let lastTopicBytes: Buffer = EMPTY
let lastTopic = ''

/**
 * The broker's hot path: the current non-transactional form
 * `put <topic> <partition> <len> <flag> <checksum> <opaque>` read from the bytes in place
 * (decoder.ts ByteParser). Any other form, or any value the token parser would question,
 * returns undefined, and parsePut handles it exactly as before.
 */
export function parsePutBytes(buf: Buffer, start: number, eol: number): {frame: PutCommand; bodyLength: number} | undefined {
  const c = cursor.reset(buf, start, eol)
  if (!c.expect(PUT_SPACE)) return undefined
  const topicStart = c.pos
  const topicEnd = c.word()
  if (topicEnd < 0 || !c.space()) return undefined
  const partition = c.canonicalInt()
  if (!c.space()) return undefined
  const bodyLength = c.int()
  if (!c.space()) return undefined
  const flag = c.int()
  if (!c.space()) return undefined
  const checksum = c.int()
  if (!c.space()) return undefined
  const opaque = c.int()
  if (!c.atEnd) return undefined
  // NaN fails every comparison below, so malformed numbers fall back too.
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

/** The topic token as a string, reusing the last one when the bytes are the same. */
function topicOf(buf: Buffer, start: number, end: number): string {
  const length = end - start
  if (length === lastTopicBytes.length) {
    let same = true
    for (let i = 0; i < length; i++) {
      if (buf[start + i] !== lastTopicBytes[i]) {
        same = false
        break
      }
    }
    if (same) return lastTopic
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

/**
 * The client's hot path: a non-transactional put in the current form, written straight into
 * the output buffer without building a command object (or a header string).
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
/** The last id, opaque and offset acknowledged, as text moved by their steps (DecimalText). */
const ID_TEXT = new DecimalText()
const OPAQUE_TEXT = new DecimalText()
const OFFSET_TEXT = new DecimalText()

/**
 * The same reply for the id with these int64 halves (MessageIdGenerator#nextHalves), written
 * in one go without a bigint or a string: the broker's put path. Consecutive acks differ by
 * small steps (id + 1, opaque + 1, offset + record size), so their numbers are updated in
 * place rather than formatted again.
 */
export function encodePutResultOfHalves(out: OutputBuffer, opaque: number, idHigh: number, idLow: number, partition: number, offset: number): void {
  if ((partition >>> 0) !== partition || !Number.isSafeInteger(offset) || !Number.isSafeInteger(opaque)) {
    encodePutResult(out, opaque, messageIdOfHalves(idHigh, idLow), partition, offset)
    return
  }
  ID_TEXT.setIdHalves(idHigh, idLow, writeMessageIdDecimal)
  OPAQUE_TEXT.set(opaque)
  OFFSET_TEXT.set(offset)
  const bodyLength = ID_TEXT.byteLength + 2 + uint32Digits(partition) + OFFSET_TEXT.byteLength
  const buf = out.room(RESULT_200.length + 10 + 1 + OPAQUE_TEXT.byteLength + 2 + bodyLength)
  let pos = out.byteLength
  for (let i = 0; i < RESULT_200.length; i++) buf[pos++] = RESULT_200[i]
  pos = writeUint32Digits(buf, pos, bodyLength)
  buf[pos++] = 0x20
  pos = OPAQUE_TEXT.writeTo(buf, pos)
  buf[pos++] = 0x0d
  buf[pos++] = 0x0a
  pos = ID_TEXT.writeTo(buf, pos)
  buf[pos++] = 0x20
  pos = writeUint32Digits(buf, pos, partition)
  buf[pos++] = 0x20
  pos = OFFSET_TEXT.writeTo(buf, pos)
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
