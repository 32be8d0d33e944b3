/**
 * quit — the broker closes the connection, no reply (docs/protocol.md#quit).
 *
 *   quit\r\n
 */
import type {OutputBuffer} from '../output-buffer.js'
import {tokenCount} from '../tokens.js'

export interface QuitCommand {
  readonly type: 'quit'
}

export function parseQuit(tokens: string[]): {frame: QuitCommand; bodyLength: number} {
  tokenCount('quit', tokens, [1])
  return {frame: {type: 'quit'}, bodyLength: 0}
}

export function encodeQuit(out: OutputBuffer): void {
  out.writeAscii('quit\r\n')
}
