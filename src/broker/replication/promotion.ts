/**
 * Failover promotion (failover.ts starts it): the master's node stayed gone for the grace
 * period. Try to win `ids/<brokerId>/master`; when another broker holds it nothing changes
 * (this broker stays a slave and follows it). Won: stop replicating, issue ids above the
 * newest in the log, accept puts, and register as master with the session that owns the node,
 * rewriting committed offsets first (recoverOffset).
 *
 * A sync slave whose master's link broke takes over sooner (link-failover.ts,
 * {@link promoteOnLinkLoss}): it replaces the master node while the master's session may still
 * live, and accepts puts once the master's lease must have ended.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {performance} from 'node:perf_hooks'
import {MetaError} from '../../protocol/errors.js'
import type {Logger} from '../../log.js'
import type {MessageIdGenerator} from '../../protocol/message-id.js'
import type {MessageStore} from '../../storage/index.js'
import type {ZkSession} from '../../cluster/zk-session.js'
import {ClusterRegistration} from '../cluster-registration.js'
import {fence, leasePutGate} from './lease.js'
import {leaseWaitMs} from './link-failover.js'
import {recoverOffsets} from './recover-offset.js'
import type {RoleState} from './role-state.js'

/** Ids stamped more than this far ahead of the clock are not followed (not meta's). */
const ID_CLOCK_AHEAD_MAX_MS = 86_400_000

export async function promote(roles: RoleState): Promise<void> {
  const {host} = roles
  const registration = roles.slaveRegistration
  if (registration === undefined || host.closing()) return
  const ctx = host.context
  const brokerId = ctx.config.system.brokerId
  const announcer = roles.syncAnnouncer
  if (announcer !== undefined) {
    // A sync slave takes over only when it holds everything the master acknowledged: it is
    // the announced sync slave and that master brought it up to date (sync-announce.ts).
    const from = roles.lastMasterUrl
    if (from === undefined || !(await announcer.inSyncWith(from))) {
      host.log.warn('failover: not promoting: this sync slave was not brought up to date by the master that left (it may lack acknowledged messages)', {
        brokerId,
        master: from ?? 'none',
      })
      return
    }
  }
  const session = await registration.claimMaster()
  if (session === undefined) {
    host.log.info('failover: ids/<id>/master is held by another broker; staying a slave', {brokerId})
    return
  }
  host.log.warn('failover: won ids/<id>/master; promoting this slave to master', {brokerId, url: ctx.url})
  await becomeMaster(roles, session)
}

/**
 * A sync slave whose master's link stayed broken for the grace period (link-failover.ts): take
 * the id over from that master, which may still be alive. Only when this slave holds
 * everything the master acknowledged (it brought it up to date) and the master published its
 * lease. The node is replaced (no renewal of the master's lease succeeds after that); `sync`
 * is refused from then on (nothing more can be acknowledged through this slave), and puts are
 * accepted once the lease, counted from the replacement, must have run out by this clock.
 */
export async function promoteOnLinkLoss(roles: RoleState): Promise<void> {
  const {host} = roles
  const registration = roles.slaveRegistration
  const announcer = roles.syncAnnouncer
  const from = roles.lastMasterUrl
  if (registration === undefined || announcer === undefined || from === undefined || host.closing()) return
  const ctx = host.context
  const brokerId = ctx.config.system.brokerId
  const leaseMs = await announcer.masterLeaseMs(from)
  if (leaseMs === undefined) {
    host.log.warn(
      'failover: not taking over on the broken sync link: the master that left did not mark this slave up to date with its lease; waiting for its ZooKeeper node to go',
      {brokerId, master: from},
    )
    return
  }
  const session = await registration.takeOverMaster(from)
  if (session === undefined) {
    host.log.info('failover: ids/<id>/master no longer names the master whose link broke; staying a slave', {brokerId, master: from})
    return
  }
  const takenAt = performance.now()
  const waitMs = leaseWaitMs(leaseMs)
  // From here no `sync` is taken (isSyncSlave is false) and puts wait for the old lease to end.
  const waiting = new MetaError(
    'SERVICE_UNAVAILABLE',
    `broker id ${brokerId}: taking over from ${from}; puts are accepted once its lease (${leaseMs} ms) has run out`,
  )
  ctx.fenced = waiting
  ctx.promoted = true
  host.log.warn('failover: the sync link broke and ids/<id>/master was taken over; promoting this slave to master once the old lease has run out', {
    brokerId,
    from,
    url: ctx.url,
    leaseMs,
    waitMs,
  })
  if (!(await becomeMaster(roles, session))) {
    // Not registered (and so under no lease): this broker must not take puts.
    ctx.fenced = new MetaError('SERVICE_UNAVAILABLE', `broker id ${brokerId}: taking over from ${from} failed while registering as master; restart this broker`)
    return
  }
  const left = takenAt + waitMs - performance.now()
  if (left > 0) await sleep(left)
  if (ctx.fenced === waiting) ctx.fenced = undefined
  host.log.warn("failover: the old master's lease has run out: accepting puts", {brokerId, afterMs: Math.round(performance.now() - takenAt)})
}

/** Won the master node: leave the slave role, register as master, accept puts (false: registering failed). */
async function becomeMaster(roles: RoleState, session: ZkSession): Promise<boolean> {
  const {host} = roles
  const ctx = host.context
  const brokerId = ctx.config.system.brokerId
  const wasSync = roles.syncAnnouncer !== undefined
  await leaveSlaveRole(roles)
  issueIdsAfterLog(ctx.ids, ctx.store, host.log)
  if (!(await registerPromoted(roles, session))) return false
  if (wasSync) roles.watchSyncSlave(session, true)
  // Puts are accepted from here on (put.ts checks context.replica, dispatch.ts isSyncSlave).
  ctx.replica = undefined
  ctx.promoted = true
  host.log.warn('failover: promoted; this broker is now the master', {brokerId, url: ctx.url, topics: ctx.store.topics().length})
  return true
}

/** Stop following the old master: the failover watch, the slave registration, replication, the sync announcement. */
async function leaveSlaveRole(roles: RoleState): Promise<void> {
  roles.failover?.stop()
  roles.failover = undefined
  roles.linkFailover?.stop()
  roles.linkFailover = undefined
  roles.slaveRegistration = undefined
  await roles.replicator?.stop() // none on a synchronous slave
  roles.replicator = undefined
  const announcer = roles.syncAnnouncer
  if (announcer !== undefined) {
    await announcer.withdraw()
    roles.syncAnnouncer = undefined
    // A promoted sync slave is a master that takes its sync slave from ZooKeeper: puts are
    // refused until one is announced and up to date (so no acknowledged message is lost at
    // the next failover either).
    roles.host.context.sync = roles.syncMasterFromZk()
  }
}

/** Register as master with the session that won the node; false (puts stay refused) when that fails. */
async function registerPromoted(roles: RoleState, session: ZkSession): Promise<boolean> {
  const ctx = roles.host.context
  const log = roles.host.log
  const brokerId = ctx.config.system.brokerId
  try {
    roles.cluster = await ClusterRegistration.start({
      config: ctx.config,
      topics: ctx.topics,
      url: ctx.url,
      tlsUrl: ctx.tlsUrl,
      topicsWithData: ctx.store.topics(),
      log: log.child('cluster'),
      session,
      onIdTaken: (other) => fence(ctx, log, other),
      lease: leasePutGate(ctx, log),
      beforeRegister: async (s, paths) => {
        await recoverOffsets({session: s, paths, brokerId, store: ctx.store, log: log.child('recover-offset'), resetWhenNoneMatched: false})
      },
    })
    return true
  } catch (error) {
    // The session (and with it the master node) is closed: keep refusing puts.
    log.error('failover: registering as master failed; this broker keeps refusing puts: restart it', {error: (error as Error).message})
    return false
  }
}

/**
 * New ids go above every id in the log, also when this machine's clock is behind the one that
 * stamped them (a promoted slave holding its master's ids, a clock set back across a
 * restart). Ids stamped more than a day ahead (not meta's: MetaQ's come from a monotonic
 * clock) are ignored, with a warning.
 */
export function issueIdsAfterLog(ids: MessageIdGenerator, store: MessageStore, log: Logger): void {
  const now = Date.now()
  let newest = 0
  for (const partitionLog of store.list()) {
    const ts = partitionLog.maxTimestamp
    if (ts <= now + ID_CLOCK_AHEAD_MAX_MS) newest = Math.max(newest, ts)
    else
      log.warn('a record id is stamped more than a day ahead of this clock; new ids do not follow it', {
        topic: partitionLog.topic,
        partition: partitionLog.partition,
        stampedMs: ts,
      })
  }
  if (newest >= now) {
    log.warn("the log holds ids stamped at or after this clock's time; new ids are issued above them", {newestMs: newest, clockMs: now})
  }
  ids.issueAfter(newest)
}
