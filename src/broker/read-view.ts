/**
 * What a broker shows to code in its process that is not the broker (the HTTP server, tests):
 * counters and state to read, nothing to change. Everything that changes the broker goes
 * over the protocol (a connection, as any client) or through the broker's own methods
 * (reload, close).
 */
import type {ZkSession} from '../cluster/zk-session.js'
import type {ReplicaPartitionStatus} from '../protocol/commands/replication.js'
import type {PartitionLog} from '../storage/index.js'
import type {StoredOffset} from '../storage/offset-log.js'
import type {AccessControl} from './auth/access.js'
import {principalStats, type PrincipalStats} from './auth/limits.js'

export type {PrincipalStats} from './auth/limits.js'
import type {BrokerConfig} from './config/index.js'
import type {BrokerContext} from './context.js'
import type {BoundPrincipal, ConnectionSocket} from './connection.js'
import type {BrokerCounters, LatencyHistogram} from './stats.js'
import type {TopicRegistry} from './topics.js'

// The rights the HTTP server checks before a request's body is read, or where it makes no
// broker request, and what a principal may see: the broker's own (nothing here changes the broker).
export {ALL_RIGHTS, type Right, type RightSet} from './auth/rights.js'
export {SEES_ALL, visibilityOf, type Visibility} from './auth/visibility.js'
export {checkUserName} from './auth/users-file.js'
export type {BoundPrincipal} from './connection.js'

/** A partition log as read: its position, size and summary. */
export type PartitionReadView = Pick<PartitionLog, 'topic' | 'partition' | 'minOffset' | 'maxOffset' | 'sizeBytes' | 'info'>

/** A latency histogram as read: the buckets, the count and the sum. */
export type LatencyReadView = Pick<LatencyHistogram, 'counts' | 'count' | 'sumSeconds'>

/** `Broker.stats`: the broker's counters and state, read-only. */
export interface BrokerStatsView {
  /** The configuration in force (a reload replaces it). */
  readonly config: BrokerConfig
  readonly counters: Readonly<BrokerCounters>
  readonly latency: {readonly put: LatencyReadView; readonly fsync: LatencyReadView}
  readonly startedAtMs: number
  connectionCount(): number
  /** Connections refused for their address's caps since the start. */
  connectionsRefused(): number
  /** Every user's usage and limits (with access control; none without). */
  principals(): PrincipalStats[]
  readonly store: {
    list(): readonly PartitionReadView[]
    get(topic: string, partition: number): PartitionReadView | undefined
    topics(): string[]
  }
  /** Committed offsets of standalone groups. */
  readonly offsets: {groupNames(): string[]; get(group: string): readonly StoredOffset[]}
  /** Parked long polls. */
  readonly polls: {readonly size: number}
  /** Set on a synchronous master: whether its link to the slave is up. */
  readonly sync: {readonly connected: boolean} | undefined
}

/**
 * What the HTTP server (src/http) reads of its broker in-process; requests go over the protocol,
 * on in-process connections each bound to the principal of the HTTP requests it carries.
 */
export interface BrokerReadView {
  readonly config: BrokerConfig
  readonly host: string
  readonly port: number
  readonly url: string
  readonly stats: BrokerStatsView
  /** Bytes received from and sent to clients since the start. */
  traffic(): {received: number; sent: number}
  readonly topics: Pick<TopicRegistry, 'resolve' | 'isClosed'>
  /** Set in cluster mode: its ZooKeeper session (read-only use: the groups' committed offsets). */
  readonly cluster: {readonly session: ZkSession} | undefined
  /** Set when access control is on: the HTTP server authenticates its users and checks their rights with it. */
  readonly access: AccessControl | undefined
  /** Take the broker's end of an in-process pair as a connection acting as `principal` for good (throws QUOTA_EXCEEDED, CONNECTION_CLOSED). */
  acceptInProcess(socket: ConnectionSocket, principal: BoundPrincipal): void
  /** Set on an asynchronous slave: how far behind its master it is. */
  readonly replicator: {partitionStatuses(): ReplicaPartitionStatus[]; readonly masterConnected: boolean} | undefined
}

/** The read-only view of a broker's context (it follows reloads: every field is read when asked). */
export function statsView(ctx: BrokerContext): BrokerStatsView {
  return {
    get config() {
      return ctx.config
    },
    counters: ctx.counters,
    latency: ctx.latency,
    startedAtMs: ctx.startedAtMs,
    connectionCount: () => ctx.connectionCount(),
    connectionsRefused: () => ctx.connectionsRefused(),
    principals: () => (ctx.access === undefined ? [] : principalStats(ctx, ctx.access, undefined)),
    store: {
      list: () => ctx.store.list(),
      get: (topic, partition) => ctx.store.get(topic, partition),
      topics: () => ctx.store.topics(),
    },
    offsets: {
      groupNames: () => ctx.offsets.groupNames(),
      get: (group) => ctx.offsets.get(group),
    },
    polls: {
      get size() {
        return ctx.polls.size
      },
    },
    get sync() {
      return ctx.sync
    },
  }
}
