/**
 * version — broker version; also the client heartbeat (docs/protocol.md#version).
 *
 *   version\r\n | version <opaque>\r\n
 *
 * Reply: `result 200` with the version string as body.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {NO_OPAQUE, opaqueField, tokenCount} from '../tokens.js'

export interface VersionCommand {
  readonly type: 'version'
  opaque: number
}

export function parseVersion(tokens: string[]): {frame: VersionCommand; bodyLength: number} {
  tokenCount('version', tokens, [1, 2])
  return {
    frame: {type: 'version', opaque: tokens.length === 2 ? opaqueField('version', tokens[1]) : NO_OPAQUE},
    bodyLength: 0,
  }
}

export function encodeVersion(out: OutputBuffer, cmd: Omit<VersionCommand, 'type'>): void {
  out.writeAscii(`version ${cmd.opaque}\r\n`)
}
