/**
 * Seeking by time and by message count, and counting messages — meta extensions backed by the side
 * index (docs/protocol.md#seeking-by-time-and-count). Offsets stay byte positions; these translate.
 *
 *   seek <topic> <partition> time <ms> <opaque>\r\n            first message stored at or after ms
 *   seek <topic> <partition> last <count> <opaque>\r\n         the message `count` before the end
 *   seek <topic> <partition> shift <offset> <delta> <opaque>\r\n  `delta` messages from a record boundary
 *   count <topic> <partition> <from> <to> <opaque>\r\n          whole messages in [from, to)
 *
 * Each answers `result 200` with a decimal number (an offset, or a count); results are
 * clamped to [first offset, end]. 404 when the partition does not exist.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, badToken, longField, nameField, opaqueField, tokenCount} from '../tokens.js'

export type SeekMode = 'time' | 'last' | 'shift'

export interface SeekCommand {
  readonly type: 'seek'
  topic: string
  partition: number
  mode: SeekMode
  /** time: ms since the epoch; last: a count; shift: the starting offset. */
  value: number
  /** shift only: messages to move (negative = back). */
  delta: number
  opaque: number
}

export interface CountCommand {
  readonly type: 'count'
  topic: string
  partition: number
  from: number
  to: number
  opaque: number
}

export function parseSeek(tokens: string[]): {frame: SeekCommand; bodyLength: number} {
  tokenCount('seek', tokens, [6, 7])
  const mode = tokens[3] as SeekMode
  if (mode !== 'time' && mode !== 'last' && mode !== 'shift') throw badToken('seek', 'mode', tokens[3], 'time, last or shift')
  if ((mode === 'shift') !== (tokens.length === 7)) {
    throw badToken('seek', 'arguments', tokens.slice(4, -1).join(' '), mode === 'shift' ? '<offset> <delta>' : 'one value')
  }
  return {
    frame: {
      type: 'seek',
      topic: nameField('seek', 'topic', tokens[1]),
      partition: canonicalIntField('seek', 'partition', tokens[2]),
      mode,
      value: longField('seek', 'value', tokens[4]),
      delta: mode === 'shift' ? longField('seek', 'delta', tokens[5]) : 0,
      opaque: opaqueField('seek', tokens[tokens.length - 1]),
    },
    bodyLength: 0,
  }
}

export function encodeSeek(out: OutputBuffer, cmd: Omit<SeekCommand, 'type'>): void {
  const args = cmd.mode === 'shift' ? `${cmd.value} ${cmd.delta}` : `${cmd.value}`
  out.writeAscii(`seek ${cmd.topic} ${cmd.partition} ${cmd.mode} ${args} ${cmd.opaque}\r\n`)
}

export function parseCount(tokens: string[]): {frame: CountCommand; bodyLength: number} {
  tokenCount('count', tokens, [6])
  return {
    frame: {
      type: 'count',
      topic: nameField('count', 'topic', tokens[1]),
      partition: canonicalIntField('count', 'partition', tokens[2]),
      from: longField('count', 'from', tokens[3]),
      to: longField('count', 'to', tokens[4]),
      opaque: opaqueField('count', tokens[5]),
    },
    bodyLength: 0,
  }
}

export function encodeCount(out: OutputBuffer, cmd: Omit<CountCommand, 'type'>): void {
  out.writeAscii(`count ${cmd.topic} ${cmd.partition} ${cmd.from} ${cmd.to} ${cmd.opaque}\r\n`)
}
