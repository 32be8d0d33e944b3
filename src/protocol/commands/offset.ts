/**
 * offset — ask for the nearest valid offset (docs/protocol.md#offset).
 *
 *   offset <topic> <group> <partition> <offset> <opaque>\r\n
 *
 * Reply: `result 200` with the offset as decimal text: the start of the segment holding
 * `offset`, the first offset if below, the end of the log if at/after it; 404 if no such
 * partition.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, longField, nameField, opaqueField, tokenCount} from '../tokens.js'

export interface OffsetCommand {
  readonly type: 'offset'
  topic: string
  group: string
  partition: number
  offset: number
  opaque: number
}

export function parseOffset(tokens: string[]): {frame: OffsetCommand; bodyLength: number} {
  tokenCount('offset', tokens, [6])
  return {
    frame: {
      type: 'offset',
      topic: nameField('offset', 'topic', tokens[1]),
      group: nameField('offset', 'group', tokens[2]),
      partition: canonicalIntField('offset', 'partition', tokens[3]),
      offset: longField('offset', 'offset', tokens[4]),
      opaque: opaqueField('offset', tokens[5]),
    },
    bodyLength: 0,
  }
}

export function encodeOffset(out: OutputBuffer, cmd: Omit<OffsetCommand, 'type'>): void {
  out.writeAscii(`offset ${cmd.topic} ${cmd.group} ${cmd.partition} ${cmd.offset} ${cmd.opaque}\r\n`)
}
