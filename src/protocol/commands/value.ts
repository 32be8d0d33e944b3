/**
 * value — a get's data response (docs/protocol.md#responses, docs/protocol.md#get).
 *
 *   value <totalLen> <opaque>\r\n<totalLen raw bytes of stored records>
 */
import type {OutputBuffer} from '../output-buffer.js'
import {lengthField, opaqueField, tokenCount} from '../tokens.js'

export interface ValueResponse {
  readonly type: 'value'
  opaque: number
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parseValue(tokens: string[]): {frame: ValueResponse; bodyLength: number} {
  tokenCount('value', tokens, [3])
  return {
    frame: {type: 'value', opaque: opaqueField('value', tokens[2]), body: EMPTY},
    bodyLength: lengthField('value', 'length', tokens[1]),
  }
}

/** The header line alone (the body, a log slice, is written right after it). */
export function valueHeader(length: number, opaque: number): string {
  return `value ${length} ${opaque}\r\n`
}

export function encodeValue(out: OutputBuffer, opaque: number, body: Uint8Array): void {
  out.writeAscii(valueHeader(body.byteLength, opaque))
  out.writeBytes(body)
}
