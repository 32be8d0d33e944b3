/**
 * get — fetch raw log bytes (docs/protocol.md#get).
 *
 *   get <topic> <group> <partition> <offset> <maxSize> <opaque>[ <maxWaitMs>[ <filter>]]\r\n
 *
 * Reply: `value <n> <opaque>\r\n<n bytes of stored records>` (may end mid-record), or a
 * result: 301 (body = offset to retry from), 400 (maxSize <= 0), 403 (closed partition),
 * 404 (no such partition, or nothing at that offset yet).
 *
 * meta extension (docs/protocol.md#long-poll-get): an optional trailing `maxWaitMs` token asks the
 * broker to hold the request up to that long when the offset is at the end of the log, answering as
 * soon as data arrives (long poll). MetaQ clients never send it.
 *
 * meta extension (docs/protocol.md#filtered-get): an optional 9th token, a filter
 * expression (filter-expression.ts) percent-encoded, asks the broker to answer only with
 * messages that match it (maxWaitMs is then required; 0 = no wait).
 */
import type {OutputBuffer} from '../output-buffer.js'
import {decodeFilterToken, encodeFilterToken} from '../filter-expression.js'
import {badToken, canonicalIntField, LONG_MAX_TEXT, intField, lengthField, longField, nameField, opaqueField, tokenCount} from '../tokens.js'

export interface GetCommand {
  readonly type: 'get'
  topic: string
  group: string
  partition: number
  offset: number
  maxSize: number
  opaque: number
  /** Long-poll wait in ms (meta extension); 0 = answer at once, as MetaQ does. */
  maxWaitMs: number
  /** Filter expression (meta extension), decoded; undefined = every message. */
  filter?: string
}

export function parseGet(tokens: string[]): {frame: GetCommand; bodyLength: number} {
  tokenCount('get', tokens, [7, 8, 9])
  const filter = tokens.length === 9 ? decodeFilterToken(tokens[8]) : undefined
  if (tokens.length === 9 && filter === undefined) throw badToken('get', 'filter', tokens[8], 'a percent-encoded filter expression')
  return {
    frame: {
      type: 'get',
      topic: nameField('get', 'topic', tokens[1]),
      group: nameField('get', 'group', tokens[2]),
      partition: canonicalIntField('get', 'partition', tokens[3]),
      offset: longField('get', 'offset', tokens[4]),
      maxSize: intField('get', 'maxSize', tokens[5]),
      opaque: opaqueField('get', tokens[6]),
      maxWaitMs: tokens.length >= 8 ? lengthField('get', 'maxWaitMs', tokens[7]) : 0,
      ...(filter === undefined ? {} : {filter}),
    },
    bodyLength: 0,
  }
}

/** An offset of Number.MAX_SAFE_INTEGER or more is written as Long.MAX_VALUE ("the tail"). */
export function encodeGet(out: OutputBuffer, cmd: Omit<GetCommand, 'type'>): void {
  const offset = cmd.offset >= Number.MAX_SAFE_INTEGER ? LONG_MAX_TEXT : String(cmd.offset)
  const wait = cmd.filter !== undefined ? ` ${cmd.maxWaitMs} ${encodeFilterToken(cmd.filter)}` : cmd.maxWaitMs > 0 ? ` ${cmd.maxWaitMs}` : ''
  out.writeAscii(`get ${cmd.topic} ${cmd.group} ${cmd.partition} ${offset} ${cmd.maxSize} ${cmd.opaque}${wait}\r\n`)
}
