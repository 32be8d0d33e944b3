/**
 * What every command handler may use: the broker's shared state, wired once by Broker.
 */
import {performance} from 'node:perf_hooks'
import type {MessageIdGenerator} from '../protocol/message-id.js'
import type {Logger} from '../log.js'
import type {MessageStore} from '../storage/index.js'
import type {OffsetLog} from '../storage/offset-log.js'
import type {GroupCoordinator} from './groups/coordinator.js'
import type {BrokerConfig} from './config/index.js'
import type {Connection} from './connection.js'
import type {LongPollRegistry} from './long-poll.js'
import type {PartitionLogs} from './partition-logs.js'
import type {BrokerCounters, BrokerLatencies, RealtimeStats} from './stats.js'
import type {TopicRegistry} from './topics.js'
import type {TopicOverlay} from './topic-overlay.js'
import type {TransactionManager} from './tx/manager.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'
import type {SyncMaster} from './replication/sync-master.js'
import {MetaError} from '../protocol/errors.js'
import type {SlaveStatusReport} from '../protocol/commands/replication.js'
import type {AccessControl} from './auth/access.js'
import type {ClusterRegistration} from './cluster-registration.js'
import type {TopicDeletions} from './topic-deletions.js'

/** What handlers see of a broker that is an asynchronous slave (src/broker/replication). */
interface ReplicaRole {
  /** The error a put to this slave is refused with (SLAVE_READ_ONLY, naming the master). */
  refusal(): MetaError
  /** `slave-status`. */
  status(): Promise<SlaveStatusReport>
}

export interface BrokerContext {
  /** The configuration in force; replaced as a whole by a reload. */
  config: BrokerConfig
  store: MessageStore
  /** The store's logs, looked up without building a key per request. */
  logs: PartitionLogs
  topics: TopicRegistry
  counters: BrokerCounters
  realtime: RealtimeStats
  /** Put and fdatasync durations (for /metrics). */
  latency: BrokerLatencies
  ids: MessageIdGenerator
  polls: LongPollRegistry
  /** Standalone consumer groups (membership, ownership). */
  groups: GroupCoordinator
  /** Committed offsets of standalone groups. */
  offsets: OffsetLog
  /** Local and XA transactions and their journal (tx/manager.ts). */
  tx: TransactionManager
  log: Logger
  /** Set on a synchronous master (syncSlaveAddress): puts are forwarded to the slave (replication/sync-master.ts). */
  sync?: SyncMaster
  /** `meta://host:port`, as published and as quoted in put error bodies. */
  url: string
  /** `meta+tls://host:tlsPort` when a TLS port listens (registered as ids/<id>/master_tls). */
  tlsUrl?: string
  port: number
  startedAtMs: number
  connectionCount(): number
  /** Connections refused for their address's caps since the start (listener.ts). */
  connectionsRefused(): number
  /** The open connections (for `stats meta-connections`). */
  connections(): Iterable<Connection>
  /** Called once for each topic-partition the first time a put creates it (ZooKeeper registration). */
  onNewPartition(topic: string, partition: number): void
  /** Called with every put's storage outcome (cluster mode leaves topics-pub while puts fail). */
  putOutcome(failed: boolean): void
  /** Set when this broker is an asynchronous slave: puts are refused, `slave-status` answers. */
  replica?: ReplicaRole
  /**
   * Set when another broker took this broker's id in ZooKeeper while its session was gone (a
   * failover): every put is refused with this error (put.ts).
   */
  fenced?: MetaError
  /**
   * Set while this broker's lease on its id has run out (replication/lease.ts): puts are
   * refused unless a sync slave takes them ({@link putRefusal}).
   */
  leaseLapsed?: MetaError
  /**
   * When the lease on the id ends (performance.now() ms), checked by every put as well as by
   * the lease's timer (a put read in the same turn as the timer's due time is refused too).
   */
  leaseEndsAtMs?: number
  /** Set when this synchronous slave won a failover (replication/promotion.ts): it is a master from then on. */
  promoted?: boolean
  /** Re-read server.ini and apply it (or, with dryRun, only report); rejects with CONFIG_INVALID when refused. */
  reload(dryRun: boolean): Promise<ReloadReport>
  /** The topic overlay in force (a copy): topics created or changed online (topic-overlay.ts). */
  topicOverlay(): TopicOverlay
  /** Check, save and apply a new topic overlay, in line with reloads; rejects with CONFIG_INVALID when refused. */
  changeTopicOverlay(overlay: TopicOverlay): Promise<ReloadReport>
  /** The ZooKeeper registration, in cluster mode (cluster-registration.ts). */
  cluster(): ClusterRegistration | undefined
  /** Topic deletes begun and not finished (topic-delete.ts). */
  topicDeletions: TopicDeletions
  /** Set when the broker checks rights (a users file or [security]): every request is checked (auth/check.ts). */
  access?: AccessControl
}

/** This broker serves as a synchronous slave (syncSlave=true, and not promoted by a failover). */
export function isSyncSlave(ctx: BrokerContext): boolean {
  return ctx.config.system.syncSlave && ctx.promoted !== true
}

/**
 * Why every put is refused now, before its topic is looked at: the id was taken (fenced), or
 * the lease on it ran out and no sync slave is connected. A master whose sync slave is
 * connected keeps acknowledging puts while ZooKeeper is unreachable: each put is acknowledged
 * only once that slave stored it, and a slave that promoted itself refuses `sync`
 * (docs/invariants.md#puts).
 */
export function putRefusal(ctx: BrokerContext): MetaError | undefined {
  if (ctx.fenced !== undefined) return ctx.fenced
  if (ctx.sync?.connected === true) return undefined
  if (ctx.leaseLapsed !== undefined) return ctx.leaseLapsed
  if (ctx.leaseEndsAtMs !== undefined && performance.now() >= ctx.leaseEndsAtMs) {
    return new MetaError(
      'SERVICE_UNAVAILABLE',
      `broker id ${ctx.config.system.brokerId}: not accepting puts: the lease on the id has run out and ZooKeeper has not renewed it yet; try another partition or broker`,
    )
  }
  return undefined
}
