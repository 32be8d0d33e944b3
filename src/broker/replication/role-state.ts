/**
 * The replication role of a running broker (roles.ts wires it, promotion.ts changes it at a
 * failover): what it holds and what it may ask of the broker.
 */
import type {Logger} from '../../log.js'
import type {ReloadReport} from '../../protocol/commands/broker-admin.js'
import type {ZkSession} from '../../cluster/zk-session.js'
import type {ClusterRegistration} from '../cluster-registration.js'
import type {BrokerContext} from '../context.js'
import type {ReloadSource} from '../reload.js'
import type {TopicOverlay} from '../topic-overlay.js'
import type {FailoverWatch} from './failover.js'
import type {LinkFailoverWatch} from './link-failover.js'
import type {Replicator} from './replicator.js'
import type {SlaveRegistration} from './slave-registration.js'
import type {SyncSlaveAnnouncer, SyncSlaveWatch} from './sync-announce.js'
import type {SyncMaster} from './sync-master.js'
import type {ReplicationLogin} from './sync-link.js'

/** What the role wiring uses of the broker. */
export interface RoleHost {
  readonly context: BrokerContext
  /** The broker's logger (roles log under its children: cluster, sync, failover, ...). */
  readonly log: Logger
  /** The broker is stopping (a promotion does not start then). */
  closing(): boolean
  /**
   * Apply another server.ini (an asynchronous slave syncing its master's); with `overlay`, that
   * topic overlay replaces this broker's in the same step (and is saved, as topic admin's is).
   */
  reload(source: ReloadSource, overlay?: TopicOverlay): Promise<ReloadReport>
  /** How a synchronous master logs in to its slave (BrokerOptions.replicationLogin). */
  readonly replicationLogin?: ReplicationLogin
}

export interface RoleState {
  readonly host: RoleHost
  /** Set on a master in ZooKeeper (and on a slave once promoted). */
  cluster: ClusterRegistration | undefined
  /** Set when this broker is an asynchronous slave. */
  replicator: Replicator | undefined
  /** Set when this broker is a slave in ZooKeeper mode. */
  slaveRegistration: SlaveRegistration | undefined
  /** Set when this broker is a slave in ZooKeeper mode with failover on. */
  failover: FailoverWatch | undefined
  /** Set when this broker is a sync slave in ZooKeeper with failover on: the sync link's watch. */
  linkFailover: LinkFailoverWatch | undefined
  /** A sync slave in ZooKeeper: announces itself to its master (sync-announce.ts). */
  syncAnnouncer: SyncSlaveAnnouncer | undefined
  /** A master taking its sync slave from ZooKeeper: the watch on the announce node. */
  syncWatch: SyncSlaveWatch | undefined
  /** The last master URL the slave registration saw (the one a failover replaces). */
  lastMasterUrl: string | undefined
  /** A sync master whose slave is the one announced in ZooKeeper (none yet: puts refused). */
  syncMasterFromZk(): SyncMaster
  /** Watch the sync slave node of this broker id (`follow`: take the slave announced there). */
  watchSyncSlave(session: ZkSession, follow: boolean): void
}
