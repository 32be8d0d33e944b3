/**
 * result — the broker's ACK/error response (docs/protocol.md#responses).
 *
 *   result <code> <bodyLen> <opaque>\r\n<bodyLen bytes of UTF-8 text>
 *
 * 200 = success; any other code is an error whose body is the message. A meta broker ends
 * an error body with ` [code=<WIRE_CODE>]` (errors.ts, formatErrorBody), except where the body
 * has a fixed meaning (the 301 offset, `XAException:code=…`). Like the Java client, the decoder
 * ignores tokens after the opaque.
 */
import {asciiBytes, byteParse, HeaderCursor} from '../decoder.js'
import type {OutputBuffer} from '../output-buffer.js'
import {INT32_MAX, INT32_MIN, intField, lengthField, opaqueField} from '../tokens.js'
import {errorStatus, formatErrorBody, MetaError, type ErrorCode} from '../errors.js'

export interface ResultResponse {
  readonly type: 'result'
  code: number
  opaque: number
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parseResult(tokens: string[]): {frame: ResultResponse; bodyLength: number} {
  if (tokens.length < 4) {
    throw new MetaError('DECODE_ERROR', `"result" response has ${tokens.length} tokens: expected 4`)
  }
  return {
    frame: {type: 'result', code: intField('result', 'code', tokens[1]), opaque: opaqueField('result', tokens[3]), body: EMPTY},
    bodyLength: lengthField('result', 'length', tokens[2]),
  }
}

const RESULT_SPACE = asciiBytes('result ')
const cursor = new HeaderCursor()

/**
 * The client's hot path: `result <code> <bodyLen> <opaque>` read from the bytes in place
 * (decoder.ts ByteParser); any other form (extra tokens, odd numbers) returns undefined and
 * goes through parseResult, which reads every form.
 */
export function parseResultBytes(buf: Buffer, start: number, eol: number): ResultResponse | undefined {
  const c = cursor.reset(buf, start, eol)
  if (!c.expect(RESULT_SPACE)) return undefined
  const code = c.int()
  if (!c.space()) return undefined
  const bodyLength = c.int()
  if (!c.space()) return undefined
  const opaque = c.int()
  if (!c.atEnd) return undefined
  if (!(code >= INT32_MIN && code <= INT32_MAX && bodyLength >= 0 && bodyLength <= INT32_MAX)) return undefined
  if (!(opaque >= INT32_MIN && opaque <= 4294967295)) return undefined
  byteParse.bodyLength = bodyLength
  return {type: 'result', code, opaque, body: EMPTY}
}

const RESULT_PREFIX = Buffer.from('result ', 'latin1')

/** Header and body go into the same buffer, so they leave in one socket write. */
export function encodeResult(out: OutputBuffer, code: number, opaque: number, body: string | Uint8Array = ''): void {
  const text = typeof body === 'string'
  const bytes = text ? Buffer.byteLength(body) : body.byteLength
  out.writeBytes(RESULT_PREFIX)
  out.writeInt(code)
  out.writeByte(0x20)
  out.writeInt(bytes)
  out.writeByte(0x20)
  out.writeInt(opaque)
  out.writeCrlf()
  if (!text) out.writeBytes(body)
  else if (bytes === body.length) out.writeAscii(body)
  else out.writeUtf8(body)
}

/**
 * An error result: the catalogue's status for `code` (or `status` where a command documents
 * another, e.g. put answers every refusal but a closed partition with 500, as MetaQ does) and
 * the body `<text> [code=<wireCode>]`.
 */
export function encodeErrorResult(out: OutputBuffer, code: ErrorCode, opaque: number, text: string, status = errorStatus(code)): void {
  encodeResult(out, status, opaque, formatErrorBody(code, text))
}
