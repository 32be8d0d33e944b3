/**
 * Consumer groups and committed offsets in standalone mode (meta extensions, see
 * protocol/commands/group.ts and offsets.ts): the thin layer between frames and the group
 * coordinator / offset log. Bodies are JSON, read by protocol's decoders; a malformed body
 * answers 400 naming the field.
 */
import {
  decodeClaimRequest,
  type ClaimRequest,
  type GroupClaimCommand,
  type GroupHeartbeatCommand,
  type GroupJoinCommand,
  type GroupLeaveCommand,
} from '../../protocol/commands/group.js'
import type {GroupDeleteCommand, GroupDescribeCommand, GroupListCommand} from '../../protocol/commands/group-admin.js'
import {
  decodeCommittedOffsets,
  decodeOffsetFetchRequest,
  type CommittedOffset,
  type OffsetCommitCommand,
  type OffsetFetchCommand,
  type OffsetFetchRequest,
} from '../../protocol/commands/offsets.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {isValidGroupName, isValidTopicName} from '../../protocol/names.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {visibilityFor} from '../auth/visibility.js'

function badGroup(conn: Connection, opaque: number, group: string): boolean {
  if (isValidGroupName(group)) return false
  conn.sendError('BAD_REQUEST', opaque, `invalid group name "${group}"`)
  return true
}

function unknownMember(conn: Connection, opaque: number, group: string, memberId: string): void {
  conn.sendError('UNKNOWN_MEMBER', opaque, `unknown member "${memberId}" of group "${group}": join again`)
}

export function handleGroupJoin(ctx: BrokerContext, conn: Connection, frame: GroupJoinCommand): void {
  if (badGroup(conn, frame.opaque, frame.group)) return
  const refused = frame.topics.find((t) => !isValidTopicName(t) || ctx.topics.resolve(t) === undefined)
  if (refused !== undefined) {
    conn.sendError('TOPIC_NOT_ACCEPTED', frame.opaque, `The server do not accept topic ${refused}`, Status.BAD_REQUEST)
    return
  }
  let view
  try {
    view = ctx.groups.join(frame.group, frame.memberId, frame.topics, frame.sessionTimeoutMs, conn.remote)
  } catch (error) {
    if (!(error instanceof MetaError)) throw error
    conn.sendError(error.code, frame.opaque, error.message)
    return
  }
  conn.sendResult(Status.OK, frame.opaque, JSON.stringify(view))
}

export function handleGroupHeartbeat(ctx: BrokerContext, conn: Connection, frame: GroupHeartbeatCommand): void {
  conn.beginRequest()
  ctx.groups.heartbeat(frame.group, frame.memberId, frame.generation, frame.maxWaitMs, conn.id, (view) => {
    if (view === undefined) unknownMember(conn, frame.opaque, frame.group, frame.memberId)
    else conn.sendResult(Status.OK, frame.opaque, JSON.stringify(view))
    conn.endRequest()
  })
}

export function handleGroupLeave(ctx: BrokerContext, conn: Connection, frame: GroupLeaveCommand): void {
  if (ctx.groups.leave(frame.group, frame.memberId)) conn.sendResult(Status.OK, frame.opaque)
  else unknownMember(conn, frame.opaque, frame.group, frame.memberId)
}

export function handleGroupClaim(ctx: BrokerContext, conn: Connection, frame: GroupClaimCommand): void {
  let request: ClaimRequest
  try {
    request = decodeClaimRequest(frame.body)
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, (error as Error).message)
    return
  }
  conn.beginRequest()
  ctx.groups.claim(frame.group, frame.memberId, request, frame.maxWaitMs, conn.id, (result) => {
    if (result === undefined) unknownMember(conn, frame.opaque, frame.group, frame.memberId)
    else conn.sendResult(Status.OK, frame.opaque, JSON.stringify(result))
    conn.endRequest()
  })
}

export function handleOffsetCommit(ctx: BrokerContext, conn: Connection, frame: OffsetCommitCommand): void {
  if (badGroup(conn, frame.opaque, frame.group)) return
  let offsets: CommittedOffset[]
  try {
    offsets = decodeCommittedOffsets(frame.body, 'offset-commit')
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, (error as Error).message)
    return
  }
  const refused = outOfRange(ctx, offsets)
  if (refused !== undefined) {
    conn.sendError(refused.code, frame.opaque, `offset-commit refused: ${refused.message}`, Status.BAD_REQUEST)
    return
  }
  conn.beginRequest(frame.body.length)
  ctx.offsets.commit(frame.group, offsets, (err) => {
    if (err === null) conn.sendResult(Status.OK, frame.opaque)
    else conn.sendError(err.code, frame.opaque, err.message, err.wireStatus)
    conn.endRequest(frame.body.length)
  })
}

/**
 * Why a commit may not be stored, or undefined: every entry must name a topic this broker
 * accepts, one of its partitions, and an offset no further than the end of that partition's
 * log (0 for a partition with no data yet). A consumer only commits positions it has read up
 * to; anything beyond is a mistake that would only send the group to 301 later.
 */
function outOfRange(ctx: BrokerContext, offsets: readonly CommittedOffset[]): MetaError | undefined {
  for (const {topic, partition, offset} of offsets) {
    const resolved = ctx.topics.resolve(topic)
    if (resolved === undefined) return new MetaError('TOPIC_NOT_ACCEPTED', `topic "${topic}" is not accepted by this broker`)
    if (partition >= resolved.numPartitions) {
      return new MetaError('INVALID_PARTITION', `invalid partition ${partition} for topic "${topic}": expected 0..${resolved.numPartitions - 1}`)
    }
    const end = ctx.logs.get(topic, partition)?.maxOffset ?? 0
    if (offset > end) {
      return MetaError.invalidArgument(`invalid offset ${offset} for "${topic}" partition ${partition}: expected 0..${end} (the end of its log)`)
    }
  }
  return undefined
}

export function handleOffsetFetch(ctx: BrokerContext, conn: Connection, frame: OffsetFetchCommand): void {
  if (badGroup(conn, frame.opaque, frame.group)) return
  let request: OffsetFetchRequest
  try {
    request = decodeOffsetFetchRequest(frame.body)
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, (error as Error).message)
    return
  }
  const offsets: CommittedOffset[] = ctx.offsets.get(frame.group, request.topics)
  conn.sendResult(Status.OK, frame.opaque, JSON.stringify(offsets))
}

export function handleGroupList(ctx: BrokerContext, conn: Connection, frame: GroupListCommand): void {
  const seen = visibilityFor(ctx.access, conn.user)
  const summaries = ctx.groups.list(ctx.offsets.groupNames(), (g) => [...new Set(ctx.offsets.get(g).map((o) => o.topic))]).filter((g) => seen.group(g.group))
  conn.sendResult(Status.OK, frame.opaque, JSON.stringify(summaries))
}

export function handleGroupDescribe(ctx: BrokerContext, conn: Connection, frame: GroupDescribeCommand): void {
  const live = ctx.groups.describe(frame.group)
  const offsets = ctx.offsets.get(frame.group)
  if (live === undefined && offsets.length === 0) {
    conn.sendError('NOT_FOUND', frame.opaque, `unknown group "${frame.group}": it has no members and no committed offsets`)
    return
  }
  // Members' addresses are an admin's to see.
  const members = visibilityFor(ctx.access, conn.user).admin ? (live?.members ?? []) : (live?.members ?? []).map((m) => ({...m, host: ''}))
  const description = {group: frame.group, generation: live?.generation ?? 0, members, offsets}
  conn.sendResult(Status.OK, frame.opaque, JSON.stringify(description))
}

/**
 * Delete a group's committed offsets (durable when answered). Refused while the group has
 * live members: they would commit again at once, and their positions are in their memory.
 */
export function handleGroupDelete(ctx: BrokerContext, conn: Connection, frame: GroupDeleteCommand): void {
  if (badGroup(conn, frame.opaque, frame.group)) return
  const live = ctx.groups.describe(frame.group)
  if (live !== undefined && live.members.length > 0) {
    const n = live.members.length
    conn.sendError(
      'GROUP_ERROR',
      frame.opaque,
      `group "${frame.group}" has ${n} live member${n === 1 ? '' : 's'}: stop them before deleting it`,
      Status.BAD_REQUEST,
    )
    return
  }
  if (ctx.offsets.get(frame.group).length === 0) {
    conn.sendError('NOT_FOUND', frame.opaque, `unknown group "${frame.group}": it has no members and no committed offsets`)
    return
  }
  conn.beginRequest()
  ctx.offsets.deleteGroup(frame.group, (err) => {
    if (err === null) conn.sendResult(Status.OK, frame.opaque)
    else conn.sendError(err.code, frame.opaque, err.message, err.wireStatus)
    conn.endRequest()
  })
}
