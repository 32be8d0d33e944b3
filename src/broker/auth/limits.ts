/**
 * Where the quotas of quota.ts are checked: at a login (connections), at a group-join that would
 * start a group (groups), at a put that would create a partition (partitions) and at every put
 * of a logged-in user (its produce byte rate; fetches are charged as they are answered,
 * Connection.sendValue). A refusal is `403 QUOTA_EXCEEDED` naming the user, the limit and how
 * to change it; the broker-wide caps are checked after, as for anyone.
 */
import {Status} from '../../protocol/errors.js'
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
  conn.sendError('QUOTA_EXCEEDED', opaque, limitMessage(user, 'connections', count, limit, 'connections'), Status.FORBIDDEN)
  return false
}

/**
 * A put of a logged-in user: refused when it would create a partition past its partitions limit;
 * else its bytes are charged to its produce rate (the connection held when past it).
 */
export function admitPut(ctx: BrokerContext, conn: Connection, quota: PrincipalQuota, topic: string, partition: number, opaque: number, bytes: number): boolean {
  const limit = quota.limits.partitions
  if (limit !== undefined && ctx.access !== undefined && (partition >= 0 ? ctx.logs.get(topic, partition) === undefined : !ctx.store.topics().includes(topic))) {
    const rights = ctx.access.rightsOf(quota.user)
    let count = 0
    for (const log of ctx.store.list()) if (rights.allows('put', log.topic)) count += 1
    if (count >= limit) {
      ctx.counters.putFailed += 1
      conn.sendError('QUOTA_EXCEEDED', opaque, limitMessage(quota.user, 'partitions', count, limit, 'partitions'), Status.FORBIDDEN)
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
  conn.sendError('QUOTA_EXCEEDED', opaque, limitMessage(quota.user, 'consumer groups', count, limit, 'groups'), Status.FORBIDDEN)
  return false
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
    return {user, ...principalUsage(ctx, access, user), producedBytes: quota.producedBytes, fetchedBytes: quota.fetchedBytes, throttledMs: quota.throttledMs, limits: quota.limits}
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
