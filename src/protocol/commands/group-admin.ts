/**
 * Group administration — meta extensions for standalone mode.
 *
 *   group-list <opaque>\r\n              → JSON GroupSummary[]
 *   group-describe <group> <opaque>\r\n  → JSON GroupDescription (404 if the group has neither members nor offsets)
 *   group-delete <group> <opaque>\r\n    → 200 once the group's committed offsets are deleted (durable);
 *                                         404 unknown group, 400 while it has live members
 */
import type {OutputBuffer} from '../output-buffer.js'
import {nameField, opaqueField, tokenCount} from '../tokens.js'
import {readTopicPartition, type TopicPartition} from './group.js'
import {readCommittedOffset, type CommittedOffset} from './offsets.js'
import {arrayOf, integerOf, member, parseJsonBody, stringOf} from '../json-body.js'

export interface GroupSummary {
  group: string
  generation: number
  members: number
  /** Topics with committed offsets or subscribed by a member. */
  topics: string[]
}

export interface MemberDescription {
  id: string
  topics: string[]
  /** host:port the member connected from. */
  host: string
  /** ms since its last heartbeat (0 while one is held). */
  idleMs: number
  sessionTimeoutMs: number
  owned: TopicPartition[]
}

export interface GroupDescription {
  group: string
  generation: number
  members: MemberDescription[]
  offsets: CommittedOffset[]
}

export interface GroupListCommand {
  readonly type: 'group-list'
  opaque: number
}

export interface GroupDescribeCommand {
  readonly type: 'group-describe'
  group: string
  opaque: number
}

export interface GroupDeleteCommand {
  readonly type: 'group-delete'
  group: string
  opaque: number
}

export function parseGroupList(tokens: string[]): {frame: GroupListCommand; bodyLength: number} {
  tokenCount('group-list', tokens, [2])
  return {frame: {type: 'group-list', opaque: opaqueField('group-list', tokens[1])}, bodyLength: 0}
}

export function encodeGroupList(out: OutputBuffer, opaque: number): void {
  out.writeAscii(`group-list ${opaque}\r\n`)
}

export function parseGroupDescribe(tokens: string[]): {frame: GroupDescribeCommand; bodyLength: number} {
  tokenCount('group-describe', tokens, [3])
  return {
    frame: {type: 'group-describe', group: nameField('group-describe', 'group', tokens[1]), opaque: opaqueField('group-describe', tokens[2])},
    bodyLength: 0,
  }
}

export function encodeGroupDescribe(out: OutputBuffer, group: string, opaque: number): void {
  out.writeAscii(`group-describe ${group} ${opaque}\r\n`)
}

export function parseGroupDelete(tokens: string[]): {frame: GroupDeleteCommand; bodyLength: number} {
  tokenCount('group-delete', tokens, [3])
  return {
    frame: {type: 'group-delete', group: nameField('group-delete', 'group', tokens[1]), opaque: opaqueField('group-delete', tokens[2])},
    bodyLength: 0,
  }
}

export function encodeGroupDelete(out: OutputBuffer, group: string, opaque: number): void {
  out.writeAscii(`group-delete ${group} ${opaque}\r\n`)
}

/** The group-list reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeGroupSummaries(body: Buffer | string): GroupSummary[] {
  return arrayOf(parseJsonBody(body, 'group-list reply'), (g) => ({
    group: stringOf(member(g, 'group')),
    generation: integerOf(member(g, 'generation'), 0),
    members: integerOf(member(g, 'members'), 0),
    topics: arrayOf(member(g, 'topics'), stringOf),
  }))
}

/** The group-describe reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeGroupDescription(body: Buffer | string): GroupDescription {
  const root = parseJsonBody(body, 'group-describe reply')
  return {
    group: stringOf(member(root, 'group')),
    generation: integerOf(member(root, 'generation'), 0),
    members: arrayOf(member(root, 'members'), (m) => ({
      id: stringOf(member(m, 'id')),
      topics: arrayOf(member(m, 'topics'), stringOf),
      host: stringOf(member(m, 'host')),
      idleMs: integerOf(member(m, 'idleMs'), 0),
      sessionTimeoutMs: integerOf(member(m, 'sessionTimeoutMs'), 0),
      owned: arrayOf(member(m, 'owned'), readTopicPartition),
    })),
    offsets: arrayOf(member(root, 'offsets'), readCommittedOffset),
  }
}
