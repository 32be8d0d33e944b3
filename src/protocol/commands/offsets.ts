/**
 * Committed offsets kept by the broker — meta extensions for standalone mode. In ZooKeeper
 * mode MetaQ keeps them in znodes instead (`"<msgId>-<offset>"`); the values are the same.
 *
 *   offset-commit <group> <len> <opaque>\r\n<len bytes JSON CommittedOffset[]>
 *   offset-fetch <group> <len> <opaque>\r\n<len bytes JSON OffsetFetchRequest>   (len 0 = all)
 *
 * commit answers `result 200` (empty body) once the offsets are durable (fdatasynced);
 * fetch answers `result 200` with a JSON CommittedOffset[].
 */
import type {OutputBuffer} from '../output-buffer.js'
import {lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'
import {arrayOf, integerOf, invalidField, member, optional, parseJsonBody, stringOf, type JsonField} from '../json-body.js'
import {isValidTopicName} from '../names.js'

export interface CommittedOffset {
  topic: string
  partition: number
  /** The next byte offset to consume. */
  offset: number
  /** Id of the last consumed message as decimal text (MetaQ stores it beside the offset); "-1" if unknown. */
  msgId: string
  /** When it was committed (ms since the Unix epoch); set by the broker. */
  committedAtMs?: number
}

export interface OffsetFetchRequest {
  /** Only these topics (default: every topic the group committed). */
  topics?: string[]
}

export interface OffsetCommitCommand {
  readonly type: 'offset-commit'
  group: string
  opaque: number
  body: Buffer
}

export interface OffsetFetchCommand {
  readonly type: 'offset-fetch'
  group: string
  opaque: number
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parseOffsetCommit(tokens: string[]): {frame: OffsetCommitCommand; bodyLength: number} {
  tokenCount('offset-commit', tokens, [4])
  return {
    frame: {type: 'offset-commit', group: nameField('offset-commit', 'group', tokens[1]), opaque: opaqueField('offset-commit', tokens[3]), body: EMPTY},
    bodyLength: lengthField('offset-commit', 'length', tokens[2]),
  }
}

export function encodeOffsetCommit(out: OutputBuffer, group: string, offsets: CommittedOffset[], opaque: number): void {
  const body = Buffer.from(JSON.stringify(offsets))
  out.writeAscii(`offset-commit ${group} ${body.length} ${opaque}\r\n`)
  out.writeBytes(body)
}

export function parseOffsetFetch(tokens: string[]): {frame: OffsetFetchCommand; bodyLength: number} {
  tokenCount('offset-fetch', tokens, [4])
  return {
    frame: {type: 'offset-fetch', group: nameField('offset-fetch', 'group', tokens[1]), opaque: opaqueField('offset-fetch', tokens[3]), body: EMPTY},
    bodyLength: lengthField('offset-fetch', 'length', tokens[2]),
  }
}

export function encodeOffsetFetch(out: OutputBuffer, group: string, request: OffsetFetchRequest, opaque: number): void {
  const body = request.topics === undefined ? EMPTY : Buffer.from(JSON.stringify(request))
  out.writeAscii(`offset-fetch ${group} ${body.length} ${opaque}\r\n`)
  out.writeBytes(body)
}

const MSG_ID = /^-?\d{1,20}$/

/** One CommittedOffset of a JSON body. */
export function readCommittedOffset(field: JsonField): CommittedOffset {
  const topicField = member(field, 'topic')
  const topic = stringOf(topicField)
  if (!isValidTopicName(topic)) throw invalidField(topicField, 'a valid topic name')
  const msgIdField = member(field, 'msgId')
  // Absent: unknown ("-1"); a number is taken as its decimal text.
  const msgId = msgIdField.value === undefined ? '-1' : typeof msgIdField.value === 'number' ? String(integerOf(msgIdField)) : stringOf(msgIdField)
  if (!MSG_ID.test(msgId)) throw invalidField(msgIdField, 'a message id in decimal')
  const committedAtMs = optional(member(field, 'committedAtMs'), (f) => integerOf(f, 0))
  return {
    topic,
    partition: integerOf(member(field, 'partition'), 0),
    offset: integerOf(member(field, 'offset'), 0),
    msgId,
    ...(committedAtMs === undefined ? {} : {committedAtMs}),
  }
}

/**
 * A JSON CommittedOffset[]: the offset-commit request body and the offset-fetch reply body.
 * DECODE_ERROR naming the entry and field when it is not one.
 */
export function decodeCommittedOffsets(body: Buffer | string, name = 'offsets'): CommittedOffset[] {
  return arrayOf(parseJsonBody(body, name), readCommittedOffset)
}

/** The offset-fetch request body (empty = every topic); DECODE_ERROR when it is not one. */
export function decodeOffsetFetchRequest(body: Buffer | string): OffsetFetchRequest {
  if (body.length === 0) return {}
  const topics = optional(member(parseJsonBody(body, 'offset-fetch'), 'topics'), (f) => arrayOf(f, stringOf))
  return topics === undefined ? {} : {topics}
}
