/**
 * stats — broker statistics (docs/protocol.md#stats).
 *
 *   stats\r\n                   item "" (system stats), no opaque
 *   stats <item>\r\n            one argument token is the item
 *   stats <item> <opaque>\r\n   the Java client sends `stats  <opaque>` (two spaces: empty item)
 *
 * Reply: `result 200` with `STATS\r\n<lines>END\r\n` (or the raw server.ini for `config`).
 */
import type {OutputBuffer} from '../output-buffer.js'
import {NO_OPAQUE, opaqueField, tokenCount} from '../tokens.js'

export interface StatsCommand {
  readonly type: 'stats'
  /** "" = system stats. */
  item: string
  opaque: number
}

export function parseStats(tokens: string[]): {frame: StatsCommand; bodyLength: number} {
  tokenCount('stats', tokens, [1, 2, 3])
  return {
    frame: {
      type: 'stats',
      item: tokens.length >= 2 ? tokens[1] : '',
      opaque: tokens.length === 3 ? opaqueField('stats', tokens[2]) : NO_OPAQUE,
    },
    bodyLength: 0,
  }
}

/** Encodes as the Java client does: `stats <item> <opaque>` (two spaces when item is ""). */
export function encodeStats(out: OutputBuffer, cmd: Omit<StatsCommand, 'type'>): void {
  out.writeAscii(`stats ${cmd.item} ${cmd.opaque}\r\n`)
}
