/**
 * The broker's replication role, checked and wired at start (docs/configuration.md lists the
 * settings):
 *
 *   - a master: standalone, or registered in ZooKeeper (with a lease on its id under
 *     `failover`); a synchronous master forwards each put to its slave, given by address
 *     (syncSlaveAddress) or taken from ZooKeeper (syncSlaveFromZk);
 *   - a synchronous slave (syncSlave): out of ZooKeeper, or with a slaveId registered there as
 *     a slave of its broker id, announcing itself to its master (and promoted at a failover);
 *   - an asynchronous slave (a slaveId): of a master given by address, or of the master
 *     registered in ZooKeeper under its broker id (and promoted at a failover).
 *
 * {@link validateRoles} is the one check of which combinations make sense: the broker runs it
 * before it opens anything, and `meta serve` runs it to report a bad combination of flags as a
 * usage error. Promotion at a failover is promotion.ts.
 */
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {parseBrokerUrl, ZkPaths} from '../../cluster/paths.js'
import type {ZkSession} from '../../cluster/zk-session.js'
import {STATE_DIR_NAME} from '../../storage/layout.js'
import {ClusterRegistration} from '../cluster-registration.js'
import {resolveTopic, type BrokerConfig} from '../config/index.js'
import {removeTopicData} from '../topic-delete.js'
import {brokerUrl} from '../listener.js'
import {FailoverWatch} from './failover.js'
import {cutDivergentTail, masterBytesOver} from './fork-point.js'
import {fence, leasePutGate} from './lease.js'
import {LinkFailoverWatch} from './link-failover.js'
import {promote, promoteOnLinkLoss} from './promotion.js'
import {recoverOffsets} from './recover-offset.js'
import {Replicator, type SlaveOptions} from './replicator.js'
import type {RoleHost, RoleState} from './role-state.js'
import {SlaveRegistration} from './slave-registration.js'
import {sameEndpoint, SyncSlaveAnnouncer, SyncSlaveWatch} from './sync-announce.js'
import {SyncMaster} from './sync-master.js'
import {dropSyncPeers, hasMasterLink} from './sync-slave.js'

/**
 * How a role error names each setting. The broker names server.ini's keys (the defaults);
 * `meta serve` names the flags it was given, so each message speaks the user's words.
 */
export interface RoleSettingNames {
  syncSlave: string
  syncSlaveAddress: string
  syncSlaveFromZk: string
  slaveId: string
  slaveOf: string
  zk: string
  failover: string
}

/** The shortest lease on a broker id (failoverLeaseMs): renewed every half of it. */
const FAILOVER_LEASE_MIN_MS = 100

const KEY_NAMES: RoleSettingNames = {
  syncSlave: 'syncSlave=true',
  syncSlaveAddress: 'syncSlaveAddress',
  syncSlaveFromZk: 'syncSlaveFromZk=true',
  slaveId: 'a slaveId',
  slaveOf: "a master's address (--slave-of)",
  zk: 'zk.zkConnect',
  failover: 'failover=true',
}

/** The slave part of the options, as far as the rules look at it. */
interface SlaveRole {
  slaveId: number
  /** The master's address; undefined: found in ZooKeeper. */
  master?: unknown
}

/**
 * Throw CONFIG_INVALID, naming the settings, when the replication settings do not make one
 * role. Pure: runs before anything is opened.
 */
export function validateRoles(config: BrokerConfig, slave: SlaveRole | undefined, names: Partial<RoleSettingNames> = {}): void {
  const n = {...KEY_NAMES, ...names}
  const {syncSlave, syncSlaveAddress, syncSlaveFromZk, failover} = config.system
  const inZk = config.zookeeper.zkConnect !== undefined && config.zookeeper.zkEnable
  const refuse = (message: string) => {
    throw new MetaError('CONFIG_INVALID', message)
  }
  if (syncSlave && syncSlaveAddress !== '') {
    refuse(`${n.syncSlave} and ${n.syncSlaveAddress} "${syncSlaveAddress}": a broker is either a synchronous slave or the master of one, not both`)
  }
  if (syncSlaveFromZk && (syncSlave || syncSlaveAddress !== '' || slave !== undefined || !inZk)) {
    refuse(
      `${n.syncSlaveFromZk} is for a master in ZooKeeper (${n.zk}) that takes its sync slave from there: not with ${n.syncSlave}, ${n.syncSlaveAddress} or ${n.slaveId}`,
    )
  }
  if (syncSlave && slave !== undefined && (!inZk || slave.master !== undefined)) {
    refuse(
      `${n.syncSlave} takes ${n.slaveId} only with ZooKeeper (${n.zk}), to register as a slave of the master of its brokerId; never ${n.slaveOf} (the master sends to it)`,
    )
  }
  if (!syncSlave && slave !== undefined && inZk && slave.master !== undefined) {
    refuse(`a slave with ZooKeeper finds its master there (ids/<brokerId>/master): give either ${n.slaveOf} or ZooKeeper (${n.zk}), not both`)
  }
  if (!syncSlave && slave !== undefined && !inZk && slave.master === undefined) {
    refuse(`a slave needs its master: ${n.slaveOf}, or ZooKeeper (${n.zk}) to find the master registered under its brokerId`)
  }
  const {failoverLeaseMs} = config.system
  const halfSession = Math.floor(config.zookeeper.zkSessionTimeoutMs / 2)
  if (failoverLeaseMs !== 0 && (failoverLeaseMs < FAILOVER_LEASE_MIN_MS || failoverLeaseMs > halfSession)) {
    refuse(
      `failoverLeaseMs ${failoverLeaseMs}: expected 0 (half zk.zkSessionTimeoutMs) or ${FAILOVER_LEASE_MIN_MS} to ${halfSession} ms (half zk.zkSessionTimeoutMs ${config.zookeeper.zkSessionTimeoutMs}): the lease must end before ZooKeeper can expire the session`,
    )
  }
  if (failover && !inZk) {
    refuse(`${n.failover} needs ZooKeeper (${n.zk}): a slave registered there fails over, a master there holds its id under a lease`)
  }
}

/** The running role: what start wired, what a failover changes (promotion.ts), what close stops. */
export class Roles implements RoleState {
  cluster: ClusterRegistration | undefined
  replicator: Replicator | undefined
  slaveRegistration: SlaveRegistration | undefined
  failover: FailoverWatch | undefined
  linkFailover: LinkFailoverWatch | undefined
  syncAnnouncer: SyncSlaveAnnouncer | undefined
  syncWatch: SyncSlaveWatch | undefined
  lastMasterUrl: string | undefined

  constructor(readonly host: RoleHost) {}

  private get config(): BrokerConfig {
    return this.host.context.config
  }

  /** Wire the role (validateRoles passed): sync master, slave (sync or asynchronous) or master in ZooKeeper. */
  async start(slave: SlaveOptions | undefined): Promise<void> {
    const {config, host} = this
    const {system, zookeeper: zk} = config
    const inZk = zk.zkConnect !== undefined && zk.zkEnable
    this.startSyncMaster()
    if (system.recoverOffset && (!inZk || system.syncSlave)) {
      host.log.warn('recoverOffset has no effect: it rewrites committed offsets in ZooKeeper when a broker registers there as master')
    }
    if (system.syncSlave && slave !== undefined) {
      await this.startSyncSlaveInZk(slave)
    } else if (system.syncSlave && inZk) {
      // MetaQ's gregor slave forces zkEnable=false: clients must not find it.
      host.log.info("synchronous slave: not registering in ZooKeeper (as MetaQ's sync slave does; give it a slaveId to register it as a slave)")
      if (system.failover) host.log.warn('failover has no effect: a synchronous slave fails over only when registered in ZooKeeper with a slaveId')
    } else if (slave !== undefined) {
      await this.startAsyncSlave(slave, inZk)
    } else if (inZk) {
      this.cluster = await this.registerMaster()
    }
    if (this.cluster !== undefined && host.context.sync !== undefined) this.watchSyncSlave(this.cluster.session, system.syncSlaveFromZk)
  }

  /** A synchronous master: of the slave at syncSlaveAddress, or (syncSlaveFromZk) of the one announced in ZooKeeper. */
  private startSyncMaster(): void {
    const ctx = this.host.context
    const system = this.config.system
    if (system.syncSlaveAddress !== '') {
      ctx.sync = new SyncMaster({
        system,
        store: ctx.store,
        log: this.host.log.child('sync'),
        cluster: () => this.cluster,
        login: this.host.replicationLogin,
        inSync: (address) => this.syncWatch?.markInSync(address) ?? Promise.resolve(),
        topicOverlay: () => ctx.topicOverlay(),
      })
    } else if (system.syncSlaveFromZk) {
      // Puts are refused until a slave announced in ZooKeeper is up to date.
      ctx.sync = this.syncMasterFromZk()
    }
  }

  /**
   * A sync slave with a slaveId: registered in ZooKeeper as slave<N> of its broker id
   * (consumers read from it) and, with failover, promoted like an asynchronous slave. It
   * announces itself to the master registered for its id once its log is a prefix of that
   * master's (a divergent tail cut), and again whenever that master changes.
   */
  private async startSyncSlaveInZk(slave: SlaveOptions): Promise<void> {
    const {host, config} = this
    if (config.system.failover) {
      this.failover = new FailoverWatch(config.system.failoverGraceMs, () => promote(this), host.log.child('failover'))
      const ctx = host.context
      this.linkFailover = new LinkFailoverWatch(
        config.system.failoverGraceMs,
        () => hasMasterLink(ctx.connections()),
        () => promoteOnLinkLoss(this),
        host.log.child('failover'),
      )
    }
    let master: string | undefined
    const registration = await this.registerSlave(slave.slaveId, (m) => {
      master = m === undefined ? undefined : brokerUrl(m)
      this.syncAnnouncer?.masterChanged(master)
    })
    const connect = slave.connect
    this.syncAnnouncer = new SyncSlaveAnnouncer({
      session: registration.zkSession,
      paths: registration.zkPaths,
      brokerId: config.system.brokerId,
      url: host.context.url,
      log: host.log.child('sync'),
      prepare: (masterUrl) => this.fitLogsTo(masterUrl, connect),
    })
    this.syncAnnouncer.masterChanged(master)
  }

  /** An asynchronous slave: replicate from the master (by address, or the one in ZooKeeper). */
  private async startAsyncSlave(slave: SlaveOptions, inZk: boolean): Promise<void> {
    const replicator = this.startReplication(slave)
    if (inZk && this.config.system.failover) {
      this.failover = new FailoverWatch(this.config.system.failoverGraceMs, () => promote(this), this.host.log.child('failover'))
    }
    if (inZk) {
      const registration = await this.registerSlave(slave.slaveId, (master) => replicator.setMaster(master))
      replicator.onFollow((topic) => registration.topicReplicated(topic))
    }
  }

  /** A master in ZooKeeper; one whose id can fail over holds it under a lease (zk-lease.ts). */
  private registerMaster(): Promise<ClusterRegistration> {
    const {host, config} = this
    const ctx = host.context
    return ClusterRegistration.start({
      config,
      topics: ctx.topics,
      url: ctx.url,
      tlsUrl: ctx.tlsUrl,
      topicsWithData: ctx.store.topics(),
      log: host.log.child('cluster'),
      onIdTaken: (other) => fence(ctx, host.log, other),
      lease: config.system.failover ? leasePutGate(ctx, host.log) : undefined,
      beforeRegister: config.system.recoverOffset
        ? async (session, paths) => {
            await recoverOffsets({session, paths, brokerId: config.system.brokerId, store: ctx.store, log: host.log.child('recover-offset')})
          }
        : undefined,
    })
  }

  private async registerSlave(slaveId: number, onMaster: (master: {host: string; port: number} | undefined) => void): Promise<SlaveRegistration> {
    const {host, config} = this
    const zk = config.zookeeper
    const registration = await SlaveRegistration.start(
      {
        zkConnect: zk.zkConnect!,
        zkRoot: zk.zkRoot,
        sessionTimeoutMs: zk.zkSessionTimeoutMs,
        connectTimeoutMs: zk.zkConnectionTimeoutMs,
        brokerId: config.system.brokerId,
        slaveId,
        url: host.context.url,
        tlsUrl: host.context.tlsUrl,
        numPartitions: (topic) => resolveTopic(this.config, topic)?.numPartitions ?? this.config.system.numPartitions,
        onMaster: (master) => {
          if (master !== undefined) this.lastMasterUrl = brokerUrl(master)
          onMaster(master)
          this.failover?.master(master)
        },
        log: host.log.child('cluster'),
      },
      host.context.store.topics(),
    )
    this.slaveRegistration = registration
    return registration
  }

  private startReplication(slave: SlaveOptions): Replicator {
    const {host, config} = this
    const ctx = host.context
    const replicator = new Replicator(
      slave,
      {
        store: ctx.store,
        dataPath: config.system.dataPath,
        brokerId: config.system.brokerId,
        log: host.log.child('replication'),
        applyMasterConfig: (text, overlay) => host.reload({text, path: `server.ini of the master ${this.replicator?.masterAddress ?? 'none'}`}, overlay),
        topicOverlay: () => ctx.topicOverlay(),
        removeTopicData: (topic) => removeTopicData(ctx, topic),
      },
      (topic, partition) => ctx.logs.forget(topic, partition),
    )
    this.replicator = replicator
    const brokerId = config.system.brokerId
    ctx.replica = {
      refusal: () =>
        new MetaError(
          'SLAVE_READ_ONLY',
          `broker ${brokerId} is the asynchronous slave ${slave.slaveId} of ${replicator.masterAddress}: it does not accept puts; send to the master`,
        ),
      status: () => replicator.status(),
    }
    replicator.start()
    return replicator
  }

  syncMasterFromZk(): SyncMaster {
    const ctx = this.host.context
    return new SyncMaster({
      system: this.config.system,
      store: ctx.store,
      log: this.host.log.child('sync'),
      cluster: () => this.cluster,
      fromZk: {brokerId: this.config.system.brokerId},
      login: this.host.replicationLogin,
      inSync: (address) => this.syncWatch?.markInSync(address) ?? Promise.reject(new Error('no sync slave watch yet')),
      topicOverlay: () => ctx.topicOverlay(),
    })
  }

  /**
   * Watch the sync slave node of this broker id (sync-announce.ts): follow the slave announced
   * there (`follow`: syncSlaveFromZk, a promoted sync slave), and record in it that the slave
   * is up to date.
   */
  watchSyncSlave(session: ZkSession, follow: boolean): void {
    const ctx = this.host.context
    const sync = ctx.sync
    this.syncWatch = new SyncSlaveWatch({
      session,
      paths: new ZkPaths(this.config.zookeeper.zkRoot),
      brokerId: this.config.system.brokerId,
      url: ctx.url,
      log: this.host.log.child('sync'),
      onSlave: follow ? (address) => sync?.setSlave(address) : undefined,
      isReadySlave: async (address) => sync !== undefined && sync.connected && (await sameEndpoint(sync.slaveAddress, address)),
      leaseMs: () => this.cluster?.leaseMs,
    })
    this.syncWatch.start()
  }

  /**
   * A sync slave about to announce itself: make each local partition a prefix of the master's
   * at `masterUrl` (cut a divergent tail, fork-point.ts; a partition that parts below the
   * master's first offset is set aside whole and sent again by the master's catch-up).
   */
  private async fitLogsTo(masterUrl: string, connect: SlaveOptions['connect']): Promise<void> {
    const address = parseBrokerUrl(masterUrl)
    if (address === undefined) throw new MetaError('INVALID_ARGUMENT', `the master's URL "${masterUrl}" is not meta://host:port`)
    const ctx = this.host.context
    const store = ctx.store
    const link = connect(address)
    try {
      await link.ready()
      const log = this.host.log.child('sync')
      let changed = 0
      for (const partitionLog of store.list()) {
        const {topic, partition} = partitionLog
        const cut = await cutDivergentTail(
          store,
          topic,
          partition,
          masterBytesOver(() => link, topic, partition),
          log,
        )
        if (cut === undefined) continue
        changed += 1
        ctx.logs.forget(topic, partition)
        if ('below' in cut) {
          const aside = join(this.config.system.dataPath, STATE_DIR_NAME, 'replica-aside', `${topic}-${partition}.${Date.now()}`)
          log.warn("this sync slave's log parts from the master's below the master's first offset: setting it aside; the master sends the partition again", {
            topic,
            partition,
            masterFirst: cut.below,
            aside,
          })
          await store.setAside(topic, partition, aside)
        }
      }
      // A master already linked to this slave (one given --sync-slave-address) may have found
      // those partitions ahead of its own and refused them: make it compare again.
      if (changed > 0 && dropSyncPeers(ctx.connections()) > 0) log.info("closed the master's sync connection so that it compares the logs again after the cut")
    } finally {
      link.close()
    }
  }

  /** After a reload: the registrations publish what changed. */
  async reloaded(): Promise<void> {
    this.slaveRegistration?.reloaded()
    if (this.cluster === undefined) return
    const ctx = this.host.context
    await this.cluster.reloaded(ctx.config.checksum, ctx.store.topics()).catch((error: Error) => {
      this.host.log.error('reload: ZooKeeper registration failed (retried on the next session)', {error: error.message})
    })
  }

  /** Leave ZooKeeper and stop replicating (first in a shutdown, so clients stop choosing this broker). */
  async stop(): Promise<void> {
    this.syncWatch?.stop()
    await this.syncAnnouncer?.withdraw().catch(() => undefined)
    this.failover?.stop()
    this.linkFailover?.stop()
    await this.cluster?.stop()
    await this.slaveRegistration?.stop()
    await this.replicator?.stop()
  }

  /** Undo a start that failed part way (the cluster registration is the last step and never half made). */
  async abort(): Promise<void> {
    this.syncWatch?.stop()
    this.host.context.sync?.close()
    this.failover?.stop()
    this.linkFailover?.stop()
    await this.slaveRegistration?.stop()
    await this.replicator?.stop()
  }
}
