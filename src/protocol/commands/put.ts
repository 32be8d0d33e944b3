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
import type {OutputBuffer} from '../output-buffer.js'
import {intField, lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'

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
    partition: intField('put', 'partition', tokens[2]),
    flag: intField('put', 'flag', tokens[4]),
    checksum,
    txKey,
    opaque: opaqueField('put', tokens[tokens.length - 1]),
    body: EMPTY,
  }
  return {frame, bodyLength}
}

const EMPTY = Buffer.alloc(0)

/**
 * The client's hot path: a non-transactional put in the current form, written straight into
 * the output buffer without building a command object.
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
  out.writeAscii(`put ${topic} ${partition} ${body.byteLength} ${flag} ${checksum} ${opaque}\r\n`)
  out.writeBytes(body)
}

/** Encode in the current form (with checksum; with txKey when given). */
export function encodePut(out: OutputBuffer, cmd: Omit<PutCommand, 'type'>): void {
  const checksum = cmd.checksum
  const tx = cmd.txKey === null ? '' : ` ${cmd.txKey}`
  out.writeAscii(`put ${cmd.topic} ${cmd.partition} ${cmd.body.length} ${cmd.flag} ${checksum}${tx} ${cmd.opaque}\r\n`)
  out.writeBytes(cmd.body)
}
