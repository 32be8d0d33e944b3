/**
 * Consumer-group membership — meta extensions for standalone mode
 * (docs/protocol.md#standalone-consumer-groups). The broker keeps the member list and a generation;
 * every member computes its own partitions from it with MetaQ's DEFAULT strategy (the same
 * computation as in ZooKeeper mode), then claims them. A claim is granted only when no other live
 * member owns the partition, which is what MetaQ's ZooKeeper owner nodes do: a partition is never
 * fetched by two members at once.
 *
 *   group-join <group> <memberId> <sessionTimeoutMs> <topic,topic…> <opaque>\r\n
 *   group-heartbeat <group> <memberId> <generation> <maxWaitMs> <opaque>\r\n
 *   group-leave <group> <memberId> <opaque>\r\n
 *   group-claim <group> <memberId> <generation> <maxWaitMs> <len> <opaque>\r\n<len bytes JSON ClaimRequest>
 *
 * join and heartbeat answer `result 200` with a JSON {@link GroupView}. A heartbeat is held
 * (long poll) until the generation differs from the one it carries or maxWaitMs passes, so
 * members hear about a rebalance at once. 404 = unknown member (evicted after its session
 * timeout): join again. claim answers a JSON {@link ClaimResult}, waiting up to maxWaitMs for
 * partitions still owned by another member to be released.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {intField, lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'
import {arrayOf, integerOf, member, parseJsonBody, recordOf, stringOf, type JsonField} from '../json-body.js'

/** A partition of a topic, as groups and offsets name it. */
export interface TopicPartition {
  topic: string
  partition: number
}

export interface GroupMember {
  id: string
  topics: string[]
}

/** What join and heartbeat answer. */
export interface GroupView {
  group: string
  generation: number
  /** Sorted by id. */
  members: GroupMember[]
  /** Partition count of every subscribed topic on this broker. */
  partitions: Record<string, number>
  brokerId: number
}

export interface ClaimRequest {
  claim: TopicPartition[]
  release: TopicPartition[]
}

export interface ClaimResult {
  /** Partitions now owned by the caller. */
  granted: TopicPartition[]
  /** Partitions still owned by another member when the wait ended. */
  busy: TopicPartition[]
  /** The group's generation now (a newer one means: recompute before claiming more). */
  generation: number
}

export interface GroupJoinCommand {
  readonly type: 'group-join'
  group: string
  memberId: string
  sessionTimeoutMs: number
  topics: string[]
  opaque: number
}

export interface GroupHeartbeatCommand {
  readonly type: 'group-heartbeat'
  group: string
  memberId: string
  generation: number
  maxWaitMs: number
  opaque: number
}

export interface GroupLeaveCommand {
  readonly type: 'group-leave'
  group: string
  memberId: string
  opaque: number
}

export interface GroupClaimCommand {
  readonly type: 'group-claim'
  group: string
  memberId: string
  generation: number
  maxWaitMs: number
  opaque: number
  /** JSON ClaimRequest. */
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parseGroupJoin(tokens: string[]): {frame: GroupJoinCommand; bodyLength: number} {
  tokenCount('group-join', tokens, [6])
  return {
    frame: {
      type: 'group-join',
      group: nameField('group-join', 'group', tokens[1]),
      memberId: nameField('group-join', 'member id', tokens[2]),
      sessionTimeoutMs: lengthField('group-join', 'session timeout', tokens[3]),
      topics: nameField('group-join', 'topics', tokens[4]).split(','),
      opaque: opaqueField('group-join', tokens[5]),
    },
    bodyLength: 0,
  }
}

export function encodeGroupJoin(out: OutputBuffer, cmd: Omit<GroupJoinCommand, 'type'>): void {
  out.writeAscii(`group-join ${cmd.group} ${cmd.memberId} ${cmd.sessionTimeoutMs} ${cmd.topics.join(',')} ${cmd.opaque}\r\n`)
}

export function parseGroupHeartbeat(tokens: string[]): {frame: GroupHeartbeatCommand; bodyLength: number} {
  tokenCount('group-heartbeat', tokens, [6])
  return {
    frame: {
      type: 'group-heartbeat',
      group: nameField('group-heartbeat', 'group', tokens[1]),
      memberId: nameField('group-heartbeat', 'member id', tokens[2]),
      generation: intField('group-heartbeat', 'generation', tokens[3]),
      maxWaitMs: lengthField('group-heartbeat', 'maxWaitMs', tokens[4]),
      opaque: opaqueField('group-heartbeat', tokens[5]),
    },
    bodyLength: 0,
  }
}

export function encodeGroupHeartbeat(out: OutputBuffer, cmd: Omit<GroupHeartbeatCommand, 'type'>): void {
  out.writeAscii(`group-heartbeat ${cmd.group} ${cmd.memberId} ${cmd.generation} ${cmd.maxWaitMs} ${cmd.opaque}\r\n`)
}

export function parseGroupLeave(tokens: string[]): {frame: GroupLeaveCommand; bodyLength: number} {
  tokenCount('group-leave', tokens, [4])
  return {
    frame: {
      type: 'group-leave',
      group: nameField('group-leave', 'group', tokens[1]),
      memberId: nameField('group-leave', 'member id', tokens[2]),
      opaque: opaqueField('group-leave', tokens[3]),
    },
    bodyLength: 0,
  }
}

export function encodeGroupLeave(out: OutputBuffer, cmd: Omit<GroupLeaveCommand, 'type'>): void {
  out.writeAscii(`group-leave ${cmd.group} ${cmd.memberId} ${cmd.opaque}\r\n`)
}

export function parseGroupClaim(tokens: string[]): {frame: GroupClaimCommand; bodyLength: number} {
  tokenCount('group-claim', tokens, [7])
  return {
    frame: {
      type: 'group-claim',
      group: nameField('group-claim', 'group', tokens[1]),
      memberId: nameField('group-claim', 'member id', tokens[2]),
      generation: intField('group-claim', 'generation', tokens[3]),
      maxWaitMs: lengthField('group-claim', 'maxWaitMs', tokens[4]),
      opaque: opaqueField('group-claim', tokens[6]),
      body: EMPTY,
    },
    bodyLength: lengthField('group-claim', 'length', tokens[5]),
  }
}

export function encodeGroupClaim(out: OutputBuffer, cmd: Omit<GroupClaimCommand, 'type' | 'body'> & {request: ClaimRequest}): void {
  const body = Buffer.from(JSON.stringify(cmd.request))
  out.writeAscii(`group-claim ${cmd.group} ${cmd.memberId} ${cmd.generation} ${cmd.maxWaitMs} ${body.length} ${cmd.opaque}\r\n`)
  out.writeBytes(body)
}

/** A {topic, partition} of a JSON body. */
export function readTopicPartition(field: JsonField): TopicPartition {
  return {topic: stringOf(member(field, 'topic')), partition: integerOf(member(field, 'partition'), 0)}
}

/** The group-claim request body; DECODE_ERROR naming the field when it is not one. `release` may be absent. */
export function decodeClaimRequest(body: Buffer | string): ClaimRequest {
  const root = parseJsonBody(body, 'group-claim')
  const release = member(root, 'release')
  return {claim: arrayOf(member(root, 'claim'), readTopicPartition), release: release.value === undefined ? [] : arrayOf(release, readTopicPartition)}
}

/** The group-claim reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeClaimResult(body: Buffer | string): ClaimResult {
  const root = parseJsonBody(body, 'group-claim reply')
  return {
    granted: arrayOf(member(root, 'granted'), readTopicPartition),
    busy: arrayOf(member(root, 'busy'), readTopicPartition),
    generation: integerOf(member(root, 'generation'), 0),
  }
}

/** The group-join / group-heartbeat reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeGroupView(body: Buffer | string): GroupView {
  const root = parseJsonBody(body, 'group view')
  return {
    group: stringOf(member(root, 'group')),
    generation: integerOf(member(root, 'generation'), 0),
    members: arrayOf(member(root, 'members'), (m) => ({id: stringOf(member(m, 'id')), topics: arrayOf(member(m, 'topics'), stringOf)})),
    partitions: recordOf(member(root, 'partitions'), (n) => integerOf(n, 0)),
    brokerId: integerOf(member(root, 'brokerId')),
  }
}
