/**
 * result — the broker's ACK/error response (spec §1.3, Appendix A.2.4).
 *
 *   result <code> <bodyLen> <opaque>\r\n<bodyLen bytes of UTF-8 text>
 *
 * 200 = success; any other code is an error whose body is the message (errors.ts). Like the
 * Java client, the decoder ignores tokens after the opaque.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {intField, lengthField, opaqueField} from '../tokens.js'
import {MetaError} from '../errors.js'

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

/** Header and body go into the same buffer, so they leave in one socket write. */
export function encodeResult(out: OutputBuffer, code: number, opaque: number, body: string | Uint8Array = ''): void {
  if (typeof body === 'string') {
    const bytes = Buffer.byteLength(body)
    out.writeAscii(`result ${code} ${bytes} ${opaque}\r\n`)
    if (bytes === body.length) out.writeAscii(body)
    else out.writeUtf8(body)
  } else {
    out.writeAscii(`result ${code} ${body.byteLength} ${opaque}\r\n`)
    out.writeBytes(body)
  }
}
