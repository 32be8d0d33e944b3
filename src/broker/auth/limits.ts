/**
 * Where the quotas of quota.ts are checked: at a login (connections), at a group-join that would
 * start a group (groups), at a put that would create a partition (partitions) and at every put
 * of a logged-in user (its produce byte rate; fetches are charged as they are answered,
 * Connection.sendValue). A refusal is `403 QUOTA_EXCEEDED` naming the user, the limit and how
 * to change it; the broker-wide caps are checked after, as for anyone.
 */
import {MetaError, Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import type {AccessControl} from './access.js'
import {limitMessage, type PrincipalQuota} from './quota.js'

/** Whether `user` may log in on one more connection; else answers QUOTA_EXCEEDED. */
export function admitLogin(ctx: BrokerContext, access: AccessControl, conn: Connection, user: string, opaque: number): boolean {
  const limit = access.quotaOf(user).limits.connections
  if (limit === undefined) return true
  let count = 0
  for (const other of ctx.connections()) if (other !== conn && other.user === user) count += 1
  if (count < limit) return true
  refuse(access, conn, user, 'auth', 'connections', limitMessage(user, 'connections', count, limit, 'connections'), opaque)
  return false
}

/**
 * Whether an in-process connection (the HTTP server's) may act as `user`: its connections limit
 * counts it as a login would; else throws QUOTA_EXCEEDED (audited).
 */
export function admitInProcess(ctx: BrokerContext, access: AccessControl, user: string, remote: string): void {
  const limit = access.quotaOf(user).limits.connections
  if (limit === undefined) return
  let count = 0
  for (const other of ctx.connections()) if (other.user === user) count += 1
  if (count < limit) return
  const message = limitMessage(user, 'connections', count, limit, 'connections')
  access.audit.refused(user, remote, 'auth', 'connections', message, true)
  throw new MetaError('QUOTA_EXCEEDED', message)
}

/**
 * A put of a logged-in user: refused when it would create a partition past its partitions limit
 * (the caller counts its messages in put_failed); else its bytes are charged to its produce rate
 * (the connection held when past it).
 */
export function admitPut(
  ctx: BrokerContext,
  conn: Connection,
  quota: PrincipalQuota,
  topic: string,
  partition: number,
  opaque: number,
  bytes: number,
): boolean {
  const limit = quota.limits.partitions
  if (
    limit !== undefined &&
    ctx.access !== undefined &&
    (partition >= 0 ? ctx.logs.get(topic, partition) === undefined : !ctx.store.topics().includes(topic))
  ) {
    const rights = ctx.access.rightsOf(quota.user)
    let count = 0
    for (const log of ctx.store.list()) if (rights.allows('put', log.topic)) count += 1
    if (count >= limit) {
      refuse(ctx.access, conn, quota.user, 'put', `partitions ${topic}`, limitMessage(quota.user, 'partitions', count, limit, 'partitions'), opaque)
      return false
    }
  }
  const waitMs = quota.chargeProduce(bytes)
  if (waitMs > 0) conn.throttle(waitMs)
  return true
}

/** A group-join of a logged-in user that would start a group: refused past its groups limit. */
export function admitGroup(ctx: BrokerContext, conn: Connection, quota: PrincipalQuota, group: string, opaque: number): boolean {
  const limit = quota.limits.groups
  if (limit === undefined || ctx.access === undefined || ctx.groups.memberCount(group) > 0) return true
  const rights = ctx.access.rightsOf(quota.user)
  let count = 0
  for (const name of ctx.groups.names()) if (rights.allows('group', name)) count += 1
  if (count < limit) return true
  refuse(ctx.access, conn, quota.user, 'group-join', `groups ${group}`, limitMessage(quota.user, 'consumer groups', count, limit, 'groups'), opaque)
  return false
}

/** Answer a request refused for a quota, and audit it (aggregated as refusals are). */
function refuse(access: AccessControl, conn: Connection, user: string, command: string, resource: string, message: string, opaque: number): void {
  access.audit.refused(user, conn.socket.remoteAddress ?? conn.remote, command, resource, message, true)
  conn.sendError('QUOTA_EXCEEDED', opaque, message, Status.FORBIDDEN)
}

/** One line of `stats meta-principals`. */
export interface PrincipalStats {
  user: string
  connections: number
  groups: number
  partitions: number
  producedBytes: number
  fetchedBytes: number
  throttledMs: number
  limits: PrincipalQuota['limits']
}

/**
 * Every user's usage and limits (`stats meta-principals`, /metrics): all of them for a principal
 * holding admin (or a broker without access control asking in-process: `viewer` undefined), else
 * the viewer's own line only.
 */
export function principalStats(ctx: BrokerContext, access: AccessControl, viewer: {user: string | undefined} | undefined): PrincipalStats[] {
  const all = viewer === undefined || access.rightsOf(viewer.user).allows('admin', '*')
  const names = all ? access.userNames() : viewer.user === undefined ? [] : [viewer.user]
  return names.map((user) => {
    const quota = access.quotaOf(user)
    return {
      user,
      ...principalUsage(ctx, access, user),
      producedBytes: quota.producedBytes,
      fetchedBytes: quota.fetchedBytes,
      throttledMs: quota.throttledMs,
      limits: quota.limits,
    }
  })
}

/** What one user holds now: its connections, groups and partitions (counted as the limits count them). */
function principalUsage(ctx: BrokerContext, access: AccessControl, user: string): {connections: number; groups: number; partitions: number} {
  const rights = access.rightsOf(user)
  let connections = 0
  for (const conn of ctx.connections()) if (conn.user === user) connections += 1
  let groups = 0
  for (const name of ctx.groups.names()) if (rights.allows('group', name)) groups += 1
  let partitions = 0
  for (const log of ctx.store.list()) if (rights.allows('put', log.topic)) partitions += 1
  return {connections, groups, partitions}
}
