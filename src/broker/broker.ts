/**
 * The broker: a TCP listener speaking MetaQ 1.4, the message store, and the per-command
 * handlers, wired together. `startBroker(options)` returns once it listens (port 0 gives an
 * ephemeral port, read it from `broker.port`); `close()` shuts down gracefully
 * (docs/invariants.md "Connections"):
 *
 *   1. leave ZooKeeper, stop accepting connections and stop decoding requests;
 *   2. answer parked long polls (404) and held group requests, and wait until every request
 *      decoded so far is answered: puts are written (and fdatasynced under group commit) and
 *      acknowledged, reads complete, offset commits are synced (up to a deadline);
 *   3. flush every connection's answers and close the sockets (forcibly after a deadline);
 *   4. only then stop retention (the segment in progress finishes), close the store's files
 *      and the offset log, and release the data directory lock.
 *
 * The data directory is locked (`<dataPath>/.meta.lock`, storage/data-dir-lock.ts) from
 * before the store opens until after it closes: a second broker on it refuses to start.
 * `reload()` applies a changed server.ini while running (reload.ts).
 *
 * Connections: a periodic sweep closes those whose partial frame is older than
 * connectionFrameTimeoutMs or that sent no request for connectionIdleTimeoutMs. Where the
 * descriptor limit is known (Linux), connections beyond what it leaves (fd-limit.ts) are
 * refused with a rate-limited warning instead of libuv's silent accept-and-close at EMFILE.
 */
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'
import {createServer, type Server, type Socket} from 'node:net'
import {networkInterfaces} from 'node:os'
import {MessageIdGenerator} from '../protocol/message-id.js'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {RequestFrame} from '../protocol/frames.js'
import {silentLogger, type Logger} from '../log.js'
import {oversizeBodyBytes} from '../protocol/decoder.js'
import {acquireDataDirLock, DEFAULT_MAX_OPEN_FILES, MessageStore, type DataDirLock, type PartitionLog, type TopicStorageConfig} from '../storage/index.js'
import {nodeFileOps, type FileOps} from '../storage/file-ops.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'
import {OffsetLog} from '../storage/offset-log.js'
import {GroupCoordinator} from './groups/coordinator.js'
import {ClusterRegistration} from './cluster-registration.js'
import {defaultBrokerConfig, resolveTopic, type BrokerConfig, type ConfigOverrides} from './config/index.js'
import {CLOSE_DEADLINE_MS, Connection, type ConnectionHandler} from './connection.js'
import {isSyncSlave, type BrokerContext} from './context.js'
import {connectionCap, openFileCount, openFileLimit, storeFileBudget} from './fd-limit.js'
import {LongPollRegistry} from './long-poll.js'
import {PartitionLogs} from './partition-logs.js'
import {LatencyHistogram, PUT_LATENCY_SAMPLE_EVERY, RealtimeStats, type BrokerCounters, type BrokerLatencies} from './stats.js'
import {TopicRegistry} from './topics.js'
import {expireGet, handleGet, retryGet} from './handlers/get.js'
import {handleOffset} from './handlers/offset.js'
import {handleOversize, handlePut, handlePutBatch, logFor} from './handlers/put.js'
import {TransactionManager} from './tx/manager.js'
import {DEFAULT_JOURNAL_FILE_BYTES} from './tx/journal.js'
import {handleStats} from './handlers/stats.js'
import {handlePartitions, handleVersion} from './handlers/misc.js'
import {handleTransaction, handleTransactionalPut, handleTransactionalPutBatch, handleTxCommit, handleTxDecide, handleTxList} from './handlers/transaction.js'
import {recoverOffsets} from './replication/recover-offset.js'
import {SyncMaster} from './replication/sync-master.js'
import {dropSyncPeers, handleSync, handleSyncBatch, refuseSyncSlavePut, refuseSyncTransaction, SYNC_TRANSACTIONS_REFUSED} from './replication/sync-slave.js'
import {
  handleGroupClaim,
  handleGroupDescribe,
  handleGroupDelete,
  handleGroupHeartbeat,
  handleGroupJoin,
  handleGroupLeave,
  handleGroupList,
  handleOffsetCommit,
  handleOffsetFetch,
} from './handlers/groups.js'
import {handleCount, handleSeek} from './handlers/seek.js'
import {handleConfigReload, handlePartitionsState} from './handlers/admin.js'
import {planReload, type ReloadSource} from './reload.js'
import {RetentionScheduler} from './retention.js'
import {handleReplicate, handleSlaveStatus} from './replication/handlers.js'
import {Replicator, type SlaveOptions} from './replication/replicator.js'
import {SlaveRegistration} from './replication/slave-registration.js'
import {FailoverWatch} from './replication/failover.js'
import {parseBrokerUrl, ZkPaths} from '../cluster/paths.js'
import type {ZkSession} from '../cluster/zk-session.js'
import {STATE_DIR_NAME} from '../storage/layout.js'
import {sameEndpoint, SyncSlaveAnnouncer, SyncSlaveWatch} from './replication/sync-announce.js'
import {cutDivergentTail, masterBytesOver} from './replication/fork-point.js'

export interface BrokerOptions {
  /** Default: defaultBrokerConfig() (standalone, any topic, loopback, port 8123). */
  config?: BrokerConfig
  /**
   * Settings that were given over the file (`meta serve` flags): applied again over the file
   * at every reload, so a reload never undoes a flag.
   */
  overrides?: ConfigOverrides
  logger?: Logger
  /** Size at which the transaction journal starts a new redo file (default 64 MiB; tests make it small). */
  txJournalFileBytes?: number
  /** Most record bytes open transactions may hold in memory (default 1 GiB; tests make it small). */
  txMaxHeldBytes?: number
  /**
   * Run as the asynchronous slave of a master given by address (src/broker/replication):
   * puts are refused, every partition of the master is copied byte for byte.
   */
  slave?: SlaveOptions
}

/** A put body up to this many times the message limit is skipped and answered; a larger one closes the connection. */
export const OVERSIZE_SKIP_FACTOR = 4
/** Longest period of the connection sweep (timeouts, descriptor cap). */
const SWEEP_INTERVAL_MAX_MS = 1000
/** At most one warning per this long about refused connections (the rest are counted in it). */
const REFUSAL_WARNING_INTERVAL_MS = 60_000

export class Broker implements ConnectionHandler {
  readonly store: MessageStore
  readonly topics: TopicRegistry
  readonly log: Logger
  private readonly server: Server
  private readonly connections = new Set<Connection>()
  private readonly context: BrokerContext
  private readonly newPartitionListeners: Array<(topic: string, partition: number) => void> = []
  private closing: Promise<void> | undefined
  private boundPort = 0
  private readonly overrides: ConfigOverrides
  private readonly locks: DataDirLock[]
  private reloading: Promise<unknown> = Promise.resolve()
  /** Retention jobs (deleteWhen / deletePolicy / maxPartitionBytes). */
  readonly retention: RetentionScheduler
  private sweeper: NodeJS.Timeout | undefined
  /** RLIMIT_NOFILE, when known. */
  private fdLimit: number | undefined
  /** Connections refused since the last warning, and when that warning was logged. */
  private refused = {count: 0, loggedAtMs: 0, lastReason: ''}
  /** Set in cluster mode (zk.zkConnect). */
  cluster: ClusterRegistration | undefined
  /** Bytes read from and written to connections closed so far (open ones are summed when asked). */
  private closedTraffic = {received: 0, sent: 0}
  /** Set when this broker is an asynchronous slave. */
  replicator: Replicator | undefined
  /** Set when this broker is an asynchronous slave in ZooKeeper mode. */
  slaveRegistration: SlaveRegistration | undefined
  /** Set when this broker is an asynchronous slave in ZooKeeper mode with failover on. */
  failover: FailoverWatch | undefined
  /** A sync slave in ZooKeeper: announces itself to its master (sync-announce.ts). */
  private syncAnnouncer: SyncSlaveAnnouncer | undefined
  /** A master taking its sync slave from ZooKeeper: the watch on the announce node. */
  private syncWatch: SyncSlaveWatch | undefined
  /** The last master URL the slave registration saw (the one a failover replaces). */
  private lastMasterUrl: string | undefined

  private constructor(
    config: BrokerConfig,
    store: MessageStore,
    offsets: OffsetLog,
    topics: TopicRegistry,
    log: Logger,
    extra: {overrides: ConfigOverrides; locks: DataDirLock[]; counters: BrokerCounters; tx: TransactionManager; latency: BrokerLatencies},
  ) {
    this.overrides = extra.overrides
    this.locks = extra.locks
    this.store = store
    this.topics = topics
    this.log = log
    // Half-open: a client that ends its side after its requests still gets their answers.
    this.server = createServer({noDelay: true, allowHalfOpen: true}, (socket) => this.accept(socket))
    const counters = extra.counters
    const polls = new LongPollRegistry(
      (w) => retryGet(this.context, w.conn, w.frame),
      (w) => expireGet(this.context, w.conn, w.frame),
    )
    this.context = {
      config,
      store,
      logs: new PartitionLogs(store),
      topics,
      counters,
      realtime: new RealtimeStats(),
      latency: extra.latency,
      ids: new MessageIdGenerator(config.system.brokerId),
      polls,
      groups: new GroupCoordinator({
        brokerId: config.system.brokerId,
        defaultSessionTimeoutMs: config.system.groupSessionTimeoutMs,
        partitionCount: (topic) => topics.resolve(topic)?.numPartitions ?? 0,
        log: log.child('groups'),
      }),
      offsets,
      tx: extra.tx,
      log: log.child('handler'),
      sync: undefined,
      url: '',
      port: 0,
      startedAtMs: Date.now(),
      connectionCount: () => this.connections.size,
      connections: () => this.connections.values(),
      onNewPartition: (topic, partition) => {
        this.cluster?.topicCreated(topic)
        // A synchronous slave in ZooKeeper registers the topics its master sends it.
        if (this.config.system.syncSlave) this.slaveRegistration?.topicReplicated(topic)
        for (const listener of this.newPartitionListeners) listener(topic, partition)
      },
      putOutcome: (failed) => this.cluster?.putOutcome(failed),
      reload: (dryRun) => this.reload(undefined, {dryRun}),
    }
    store.onAppend((partitionLog) => polls.wake(partitionLog.topic, partitionLog.partition))
    this.retention = new RetentionScheduler(store, config, log.child('retention'))
  }

  static async start(options: BrokerOptions = {}): Promise<Broker> {
    const config = options.config ?? defaultBrokerConfig()
    if (config.system.syncSlave && config.system.syncSlaveAddress !== '') {
      throw new MetaError('CONFIG_INVALID', `syncSlave=true and syncSlaveAddress=${config.system.syncSlaveAddress}: a broker is either a synchronous slave or the master of one, not both`)
    }
    if (config.system.syncSlaveFromZk) {
      const inZk = config.zookeeper.zkConnect !== undefined && config.zookeeper.zkEnable
      if (config.system.syncSlave || config.system.syncSlaveAddress !== '' || options.slave !== undefined || !inZk) {
        throw new MetaError(
          'CONFIG_INVALID',
          'syncSlaveFromZk=true is for a master in ZooKeeper (zk.zkConnect) that takes its sync slave from there: not with syncSlave, syncSlaveAddress or a slaveId',
        )
      }
    }
    const log = (options.logger ?? silentLogger).child('broker')
    const topics = new TopicRegistry(config)
    const roots = dataRoots(config)
    const locks = lockDataDirs(roots.includes(config.system.dataLogPath) ? roots : [...roots, config.system.dataLogPath], log)
    const latency: BrokerLatencies = {put: new LatencyHistogram(PUT_LATENCY_SAMPLE_EVERY), fsync: new LatencyHistogram()}
    let store: MessageStore
    let offsets: OffsetLog
    let tx: TransactionManager
    const counters: BrokerCounters = {
      cmdPut: 0, cmdGet: 0, cmdOffset: 0, txBegin: 0, txXaBegin: 0, txCommit: 0, txRollback: 0, getMiss: 0, putFailed: 0,
    }
    // The store resolves topics with the broker's config of the moment (reloads replace it).
    const holder: {broker?: Broker} = {}
    try {
      topics.loadClosed(config.system.dataPath)
      store = await MessageStore.open({
        dataPath: config.system.dataPath,
        extraDataPaths: roots.filter((p) => p !== config.system.dataPath),
        topicConfig: (topic) => storageConfigFor(holder.broker?.config ?? config, topics, topic),
        logger: log.child('storage'),
        // No stored record can be longer than a put the broker accepts.
        maxRecordBytes: config.system.maxTransferBytes,
        fileOps: timedFsync(nodeFileOps, latency.fsync),
        maxOpenFiles: storeFileBudget(openFileLimit(), DEFAULT_MAX_OPEN_FILES),
      })
      try {
        offsets = OffsetLog.open(config.system.dataPath, log.child('offsets'))
      } catch (error) {
        await store.close()
        throw error
      }
      try {
        // Recovery (completing journaled commits) runs before the broker takes requests.
        tx = await TransactionManager.open(
          {
            config: () => holder.broker?.config ?? config,
            logFor: (topic, partition) => (holder.broker === undefined ? storeLog(store, topic, partition) : logFor(holder.broker.context, topic, partition)),
            counters,
            log: log.child('tx'),
          },
          {
            dir: join(config.system.dataLogPath, 'transactions'),
            maxFileBytes: options.txJournalFileBytes ?? DEFAULT_JOURNAL_FILE_BYTES,
            maxHeldBytes: options.txMaxHeldBytes,
          },
        )
      } catch (error) {
        await offsets.close()
        await store.close()
        throw error
      }
    } catch (error) {
      for (const lock of locks) lock.release()
      throw error
    }
    const started = new Broker(config, store, offsets, topics, log, {overrides: options.overrides ?? {}, locks, counters, tx, latency})
    holder.broker = started
    issueIdsAfterLog(started.context.ids, store, log)
    try {
      await started.listen()
      for (const lock of locks) lock.setAddress(`${started.host}:${started.port}`)
      warnAboutHiddenPartitions(config, store, log)
      started.retention.schedule(config)
      if (config.system.syncSlaveAddress !== '') {
        started.context.sync = new SyncMaster({
          system: config.system,
          store,
          log: log.child('sync'),
          cluster: () => started.cluster,
          inSync: (address) => started.syncWatch?.markInSync(address) ?? Promise.resolve(),
        })
      } else if (config.system.syncSlaveFromZk) {
        // Puts are refused until a slave announced in ZooKeeper is up to date.
        started.context.sync = started.syncMasterFromZk()
      }
      const zk = config.zookeeper
      if (config.system.recoverOffset && (zk.zkConnect === undefined || !zk.zkEnable || config.system.syncSlave)) {
        log.warn('recoverOffset has no effect: it rewrites committed offsets in ZooKeeper when a broker registers there as master')
      }
      const inZk = zk.zkConnect !== undefined && zk.zkEnable
      const registerSlave = async (slaveId: number, onMaster: (master: {host: string; port: number} | undefined) => void): Promise<SlaveRegistration> => {
        const registration = await SlaveRegistration.start(
          {
            zkConnect: zk.zkConnect!,
            zkRoot: zk.zkRoot,
            sessionTimeoutMs: zk.zkSessionTimeoutMs,
            connectTimeoutMs: zk.zkConnectionTimeoutMs,
            brokerId: config.system.brokerId,
            slaveId,
            url: started.url,
            numPartitions: (topic) => resolveTopic(started.config, topic)?.numPartitions ?? started.config.system.numPartitions,
            onMaster: (master) => {
              if (master !== undefined) started.lastMasterUrl = brokerUrl(master)
              onMaster(master)
              started.failover?.master(master)
            },
            log: log.child('cluster'),
          },
          store.topics(),
        )
        started.slaveRegistration = registration
        return registration
      }
      if (config.system.syncSlave && options.slave !== undefined) {
        // A sync slave with a slaveId: registered in ZooKeeper as slave<N> of its broker id
        // (consumers read from it) and, with failover, promoted like an asynchronous slave.
        if (!inZk || options.slave.master !== undefined) {
          throw new MetaError('CONFIG_INVALID', 'a synchronous slave with a slaveId registers in ZooKeeper as a slave of the master of its brokerId: configure zk.zkConnect and give no --slave-of (the master sends to it)')
        }
        if (config.system.failover) {
          started.failover = new FailoverWatch(config.system.failoverGraceMs, () => started.promote(), log.child('failover'))
        }
        // It announces itself to the master registered for its id once its log is a prefix of
        // that master's (a divergent tail cut), and again whenever that master changes.
        let master: string | undefined
        const registration = await registerSlave(options.slave.slaveId, (m) => {
          master = m === undefined ? undefined : brokerUrl(m)
          started.syncAnnouncer?.masterChanged(master)
        })
        const connect = options.slave.connect
        started.syncAnnouncer = new SyncSlaveAnnouncer({
          session: registration.zkSession,
          paths: registration.zkPaths,
          brokerId: config.system.brokerId,
          url: started.url,
          log: log.child('sync'),
          prepare: (masterUrl) => started.fitLogsTo(masterUrl, connect),
        })
        started.syncAnnouncer.masterChanged(master)
      } else if (config.system.syncSlave && inZk) {
        // MetaQ's gregor slave forces zkEnable=false: clients must not find it.
        log.info('synchronous slave: not registering in ZooKeeper (as MetaQ\'s sync slave does; give it a slaveId to register it as a slave)')
        if (config.system.failover) log.warn('failover has no effect: a synchronous slave fails over only when registered in ZooKeeper with a slaveId')
      } else if (options.slave !== undefined) {
        if (inZk && options.slave.master !== undefined) {
          throw new MetaError('CONFIG_INVALID', 'a slave with ZooKeeper finds its master there (ids/<brokerId>/master): give either --slave-of or zk.zkConnect, not both')
        }
        if (!inZk && options.slave.master === undefined) {
          throw new MetaError('CONFIG_INVALID', "a slave needs its master: --slave-of HOST:PORT, or zk.zkConnect to find the master registered under this broker's brokerId")
        }
        if (config.system.failover && !inZk) {
          throw new MetaError('CONFIG_INVALID', 'failover needs ZooKeeper (zk.zkConnect): a slave promotes itself by winning ids/<brokerId>/master there')
        }
        const replicator = started.startReplication(options.slave)
        if (inZk && config.system.failover) {
          started.failover = new FailoverWatch(config.system.failoverGraceMs, () => started.promote(), log.child('failover'))
        }
        if (inZk) {
          const registration = await registerSlave(options.slave.slaveId, (master) => replicator.setMaster(master))
          replicator.onFollow((topic) => registration.topicReplicated(topic))
        }
      } else if (zk.zkConnect !== undefined && zk.zkEnable) {
        started.cluster = await ClusterRegistration.start({
          config,
          topics,
          url: started.url,
          topicsWithData: store.topics(),
          log: log.child('cluster'),
          onIdTaken: (other) => started.fence(other),
          // A master whose id can fail over holds it under a lease (zk-lease.ts).
          lease: config.system.failover ? started.leaseHandlers() : undefined,
          beforeRegister: config.system.recoverOffset
            ? async (session, paths) => {
                await recoverOffsets({session, paths, brokerId: config.system.brokerId, store, log: log.child('recover-offset')})
              }
            : undefined,
        })
      }
      if (started.cluster !== undefined && started.context.sync !== undefined) started.watchSyncSlave(started.cluster.session, config.system.syncSlaveFromZk)
    } catch (error) {
      started.syncWatch?.stop()
      started.context.sync?.close()
      started.failover?.stop()
      await started.slaveRegistration?.stop()
      await started.replicator?.stop()
      clearInterval(started.sweeper)
      await new Promise<void>((resolve) => started.server.close(() => resolve()))
      await started.retention.close()
      started.context.groups.close()
      await tx.close()
      await offsets.close()
      await store.close()
      for (const lock of locks) lock.release()
      throw error
    }
    return started
  }

  /**
   * Failover (failover.ts): the master's node stayed gone for the grace period. Try to win
   * `ids/<brokerId>/master`; when another broker holds it nothing changes (this broker stays a
   * slave and follows it). Won: stop replicating, issue ids above the newest in the log,
   * accept puts, and register as master with the session that owns the node, rewriting
   * committed offsets first (recoverOffset).
   */
  private async promote(): Promise<void> {
    const registration = this.slaveRegistration
    const replicator = this.replicator
    if (registration === undefined || this.closing !== undefined) return
    const brokerId = this.config.system.brokerId
    const announcer = this.syncAnnouncer
    if (announcer !== undefined) {
      // A sync slave takes over only when it holds everything the master acknowledged: it is
      // the announced sync slave and that master brought it up to date (sync-announce.ts).
      const from = this.lastMasterUrl
      if (from === undefined || !(await announcer.inSyncWith(from))) {
        this.log.warn('failover: not promoting: this sync slave was not brought up to date by the master that left (it may lack acknowledged messages)', {brokerId, master: from ?? 'none'})
        return
      }
    }
    const session = await registration.claimMaster()
    if (session === undefined) {
      this.log.info('failover: ids/<id>/master is held by another broker; staying a slave', {brokerId})
      return
    }
    this.log.warn('failover: won ids/<id>/master; promoting this slave to master', {brokerId, url: this.url})
    this.failover?.stop()
    this.failover = undefined
    this.slaveRegistration = undefined
    await replicator?.stop() // none on a synchronous slave
    this.replicator = undefined
    if (announcer !== undefined) {
      await announcer.withdraw()
      this.syncAnnouncer = undefined
      // A promoted sync slave is a master that takes its sync slave from ZooKeeper: puts are
      // refused until one is announced and up to date (so no acknowledged message is lost at
      // the next failover either).
      this.context.sync = this.syncMasterFromZk()
    }
    issueIdsAfterLog(this.context.ids, this.store, this.log)
    const log = this.log
    try {
      this.cluster = await ClusterRegistration.start({
        config: this.config,
        topics: this.topics,
        url: this.url,
        topicsWithData: this.store.topics(),
        log: log.child('cluster'),
        session,
        onIdTaken: (other) => this.fence(other),
        lease: this.leaseHandlers(),
        beforeRegister: async (s, paths) => {
          await recoverOffsets({session: s, paths, brokerId, store: this.store, log: log.child('recover-offset'), resetWhenNoneMatched: false})
        },
      })
    } catch (error) {
      // The session (and with it the master node) is closed: keep refusing puts.
      log.error('failover: registering as master failed; this broker keeps refusing puts: restart it', {error: (error as Error).message})
      return
    }
    if (announcer !== undefined) this.watchSyncSlave(session, true)
    // Puts are accepted from here on (put.ts checks context.replica, broker.ts isSyncSlave).
    this.context.replica = undefined
    this.context.promoted = true
    log.warn('failover: promoted; this broker is now the master', {brokerId, url: this.url, topics: this.store.topics().length})
  }

  /** Refuse puts while the lease on the broker id has run out (zk-lease.ts); a fence for good stays. */
  private leaseHandlers(): {onLost: (reason: string) => void; onHeld: () => void} {
    let refusal: MetaError | undefined
    return {
      onLost: (reason) => {
        if (this.context.fenced !== undefined) return
        refusal = new MetaError(
          'SERVICE_UNAVAILABLE',
          `broker id ${this.config.system.brokerId}: not accepting puts while ZooKeeper cannot confirm this broker still holds the id (${reason}); try another partition or broker`,
        )
        this.context.fenced = refusal
      },
      onHeld: () => {
        if (refusal !== undefined && this.context.fenced === refusal) this.context.fenced = undefined
        refusal = undefined
      },
    }
  }

  /** A sync master whose slave is the one announced in ZooKeeper (none yet: puts refused). */
  private syncMasterFromZk(): SyncMaster {
    return new SyncMaster({
      system: this.config.system,
      store: this.store,
      log: this.log.child('sync'),
      cluster: () => this.cluster,
      fromZk: {brokerId: this.config.system.brokerId},
      inSync: (address) => this.syncWatch?.markInSync(address) ?? Promise.reject(new Error('no sync slave watch yet')),
    })
  }

  /**
   * Watch the sync slave node of this broker id (sync-announce.ts): follow the slave announced
   * there (`follow`: syncSlaveFromZk, a promoted sync slave), and record in it that the slave
   * is up to date.
   */
  private watchSyncSlave(session: ZkSession, follow: boolean): void {
    const sync = this.context.sync
    this.syncWatch = new SyncSlaveWatch({
      session,
      paths: new ZkPaths(this.config.zookeeper.zkRoot),
      brokerId: this.config.system.brokerId,
      url: this.url,
      log: this.log.child('sync'),
      onSlave: follow ? (address) => sync?.setSlave(address) : undefined,
      isReadySlave: async (address) => sync !== undefined && sync.connected && (await sameEndpoint(sync.slaveAddress, address)),
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
    const link = connect(address)
    try {
      await link.ready()
      const log = this.log.child('sync')
      let changed = 0
      for (const partitionLog of this.store.list()) {
        const {topic, partition} = partitionLog
        const cut = await cutDivergentTail(this.store, topic, partition, masterBytesOver(() => link, topic, partition), log)
        if (cut === undefined) continue
        changed += 1
        this.context.logs.forget(topic, partition)
        if ('below' in cut) {
          const aside = join(this.config.system.dataPath, STATE_DIR_NAME, 'replica-aside', `${topic}-${partition}.${Date.now()}`)
          log.warn("this sync slave's log parts from the master's below the master's first offset: setting it aside; the master sends the partition again", {topic, partition, masterFirst: cut.below, aside})
          await this.store.setAside(topic, partition, aside)
        }
      }
      // A master already linked to this slave (one given --sync-slave-address) may have found
      // those partitions ahead of its own and refused them: make it compare again.
      if (changed > 0 && dropSyncPeers(this.connections) > 0) log.info('closed the master\'s sync connection so that it compares the logs again after the cut')
    } finally {
      link.close()
    }
  }

  /** Another broker took this broker id while this one's ZooKeeper session was gone: refuse puts from now on. */
  private fence(other: string): void {
    const brokerId = this.config.system.brokerId
    this.context.fenced = new MetaError(
      'SLAVE_READ_ONLY',
      `broker id ${brokerId} is now held in ZooKeeper by ${other} (it failed over while this broker's session was gone): this broker no longer accepts puts; restart it as a slave of the new master`,
    )
    this.log.error('fenced: refusing puts from now on', {brokerId, other})
  }

  private startReplication(slave: SlaveOptions): Replicator {
    const replicator = new Replicator(
      slave,
      {
        store: this.store,
        dataPath: this.config.system.dataPath,
        brokerId: this.config.system.brokerId,
        log: this.log.child('replication'),
        applyMasterConfig: (text) => this.reload({text, path: `server.ini of the master ${this.replicator?.masterAddress ?? 'none'}`}),
      },
      (topic, partition) => this.context.logs.forget(topic, partition),
    )
    this.replicator = replicator
    const brokerId = this.config.system.brokerId
    this.context.replica = {
      refusal: () =>
        new MetaError('SLAVE_READ_ONLY', `broker ${brokerId} is the asynchronous slave ${slave.slaveId} of ${replicator.masterAddress}: it does not accept puts; send to the master`),
      status: () => replicator.status(),
    }
    replicator.start()
    return replicator
  }

  /** The configuration in force (replaced by {@link reload}). */
  get config(): BrokerConfig {
    return this.context.config
  }

  /**
   * Re-read server.ini and apply what changed (reload.ts): the broker's own file by default,
   * or `source` (another path, or text, e.g. a master's server.ini a slave syncs). With
   * `dryRun`, only reports what would change. Reloads run one at a time. Rejects with
   * CONFIG_INVALID naming the file, line and key when the file is refused (nothing changes).
   */
  reload(source?: ReloadSource, options: {dryRun?: boolean} = {}): Promise<ReloadReport> {
    const run = this.reloading.then(() => this.reloadNow(source, options.dryRun === true))
    this.reloading = run.catch(() => undefined)
    return run
  }

  get port(): number {
    return this.boundPort
  }

  get host(): string {
    return this.config.system.listenHost
  }

  /** `meta://host:port` as published to clients (hostName, else the listen address). */
  get url(): string {
    return this.context.url
  }

  get stats(): BrokerContext {
    return this.context
  }

  /** Bytes received from and sent to clients since the start (all connections, open and closed). */
  traffic(): {received: number; sent: number} {
    let {received, sent} = this.closedTraffic
    for (const conn of this.connections) {
      received += conn.socket.bytesRead
      sent += conn.socket.bytesWritten
    }
    return {received, sent}
  }

  /** Subscribe to the first put into each new topic-partition. */
  onNewPartition(listener: (topic: string, partition: number) => void): void {
    this.newPartitionListeners.push(listener)
  }

  handle(conn: Connection, frame: RequestFrame): void {
    const ctx = this.context
    const oversize = oversizeBodyBytes(frame)
    if (oversize !== undefined) return handleOversize(ctx, conn, frame, oversize)
    switch (frame.type) {
      case 'put':
        if (isSyncSlave(ctx)) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition)
        // An asynchronous slave refuses every put, transactional ones included (handlePut says so).
        if (frame.txKey === null || ctx.replica !== undefined || ctx.fenced !== undefined) return handlePut(ctx, conn, frame)
        if (ctx.sync !== undefined) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, 1, SYNC_TRANSACTIONS_REFUSED)
        return handleTransactionalPut(ctx, conn, frame)
      case 'get':
        return handleGet(ctx, conn, frame)
      case 'offset':
        return handleOffset(ctx, conn, frame)
      case 'stats':
        return handleStats(ctx, conn, frame)
      case 'version':
        return handleVersion(conn, frame)
      case 'quit':
        return conn.end()
      case 'transaction':
        if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
        return handleTransaction(ctx, conn, frame)
      case 'sync':
        return handleSync(ctx, conn, frame)
      case 'sync-batch':
        return handleSyncBatch(ctx, conn, frame)
      case 'partitions':
        return handlePartitions(ctx, conn, frame)
      case 'group-join':
        return handleGroupJoin(ctx, conn, frame)
      case 'group-heartbeat':
        return handleGroupHeartbeat(ctx, conn, frame)
      case 'group-leave':
        return handleGroupLeave(ctx, conn, frame)
      case 'group-claim':
        return handleGroupClaim(ctx, conn, frame)
      case 'offset-commit':
        return handleOffsetCommit(ctx, conn, frame)
      case 'offset-fetch':
        return handleOffsetFetch(ctx, conn, frame)
      case 'group-list':
        return handleGroupList(ctx, conn, frame)
      case 'group-describe':
        return handleGroupDescribe(ctx, conn, frame)
      case 'group-delete':
        return handleGroupDelete(ctx, conn, frame)
      case 'seek':
        return handleSeek(ctx, conn, frame)
      case 'count':
        return handleCount(ctx, conn, frame)
      case 'put-batch':
        if (isSyncSlave(ctx)) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, frame.count)
        if (frame.txKey === null || ctx.replica !== undefined || ctx.fenced !== undefined) return handlePutBatch(ctx, conn, frame)
        if (ctx.sync !== undefined) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, frame.count, SYNC_TRANSACTIONS_REFUSED)
        return handleTransactionalPutBatch(ctx, conn, frame)
      case 'config-reload':
        return handleConfigReload(ctx, conn, frame)
      case 'tx-list':
        return handleTxList(ctx, conn, frame)
      case 'tx-decide':
        if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
        return handleTxDecide(ctx, conn, frame)
      case 'tx-commit':
        if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
        return handleTxCommit(ctx, conn, frame)
      case 'partitions-close':
      case 'partitions-open':
        return handlePartitionsState(ctx, conn, frame)
      case 'replicate':
        return handleReplicate(ctx, conn, frame)
      case 'slave-status':
        return handleSlaveStatus(ctx, conn, frame)
      default:
        return assertNever(frame)
    }
  }

  draining(conn: Connection): void {
    this.context.polls.expireConnection(conn)
    this.context.groups.answerConnection(conn.id)
  }

  closed(conn: Connection): void {
    if (this.connections.delete(conn)) {
      this.closedTraffic.received += conn.socket.bytesRead
      this.closedTraffic.sent += conn.socket.bytesWritten
    }
    this.context.polls.dropConnection(conn)
    this.context.groups.connectionClosed(conn.id)
    this.context.tx.connectionClosed(conn.id)
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async listen(): Promise<void> {
    const {listenHost, serverPort} = this.config.system
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, listenHost, serverPort)))
      this.server.listen(serverPort, listenHost, () => {
        this.server.off('error', reject)
        resolve()
      })
    })
    const address = this.server.address()
    this.boundPort = typeof address === 'object' && address !== null ? address.port : serverPort
    this.context.port = this.boundPort
    this.context.url = `meta://${formatHost(publishedHost(this.config))}:${this.boundPort}`
    this.server.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EMFILE' || err.code === 'ENFILE') this.refuse(`accept failed: ${err.code}`)
      else this.log.error('listener error', {error: err.message})
    })
    this.server.on('drop', () => this.refuse('at the connection cap'))
    this.fdLimit = openFileLimit()
    this.updateConnectionCap()
    const {connectionFrameTimeoutMs, connectionIdleTimeoutMs} = this.config.system
    const shortest = Math.min(...[connectionFrameTimeoutMs, connectionIdleTimeoutMs].filter((ms) => ms > 0), SWEEP_INTERVAL_MAX_MS * 4)
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.floor(shortest / 4)))
    this.sweeper.unref()
  }

  private accept(socket: Socket): void {
    if (this.closing !== undefined) {
      socket.destroy()
      return
    }
    const {maxTransferBytes, connectionMaxPendingBytes} = this.config.system
    // A sync slave takes whole records (header included) of messages up to the limit.
    const maxBodyBytes = Math.max(0, maxTransferBytes - (this.config.system.syncSlave ? 0 : RECORD_HEADER_BYTES))
    const conn = new Connection(socket, this, this.log.child('conn'), {
      maxBodyBytes,
      maxSkippedBodyBytes: maxBodyBytes * OVERSIZE_SKIP_FACTOR,
      maxPendingBytes: connectionMaxPendingBytes,
    })
    this.connections.add(conn)
    this.log.debug('client connected', {remote: conn.remote})
  }

  /** Close connections past their frame or idle time; keep the descriptor cap current. */
  private sweep(): void {
    const now = Date.now()
    const {connectionFrameTimeoutMs, connectionIdleTimeoutMs} = this.config.system
    for (const conn of this.connections) {
      const why = conn.checkTimeouts(now, connectionFrameTimeoutMs, connectionIdleTimeoutMs)
      if (why !== undefined) this.log.info('closing connection', {remote: conn.remote, reason: why})
    }
    this.updateConnectionCap()
    if (this.refused.count > 0 && now - this.refused.loggedAtMs >= REFUSAL_WARNING_INTERVAL_MS) this.refuse(undefined)
  }

  /**
   * Cap connections so that accepting one never meets EMFILE (which libuv handles by silently
   * closing the pending connections). Re-counted when connections come near the cap.
   */
  private updateConnectionCap(): void {
    const limit = this.fdLimit
    if (limit === undefined) return
    const cap = this.server.maxConnections
    if (cap > 0 && cap !== Number.POSITIVE_INFINITY && this.connections.size < cap / 2) return
    const open = openFileCount()
    if (open === undefined) return
    this.server.maxConnections = connectionCap(limit, open - this.connections.size, storeFileBudget(limit, DEFAULT_MAX_OPEN_FILES), this.store.openFileCount)
  }

  /** A connection was refused (or, with no reason, report the ones counted): warn, at most once a minute. */
  private refuse(reason: string | undefined): void {
    if (reason !== undefined) {
      this.refused.count += 1
      this.refused.lastReason = reason
    }
    const now = Date.now()
    if (now - this.refused.loggedAtMs < REFUSAL_WARNING_INTERVAL_MS && reason !== undefined) return
    this.log.warn('refusing new connections: file descriptors nearly exhausted; existing connections are served. Raise the limit (ulimit -n, LimitNOFILE)', {
      limit: this.fdLimit,
      connections: this.connections.size,
      maxConnections: this.server.maxConnections,
      refused: this.refused.count,
      reason: this.refused.lastReason,
    })
    this.refused.count = 0
    this.refused.loggedAtMs = now
  }

  private async shutdown(): Promise<void> {
    this.syncWatch?.stop()
    await this.syncAnnouncer?.withdraw().catch(() => undefined)
    this.log.info('shutting down', {connections: this.connections.size})
    clearInterval(this.sweeper)
    // Leave ZooKeeper first, so clients stop choosing this broker while it drains.
    this.failover?.stop()
    await this.cluster?.stop()
    await this.slaveRegistration?.stop()
    await this.replicator?.stop()
    const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const conn of this.connections) conn.stopReading()
    this.context.polls.expireAll()
    this.context.groups.close()
    // Every request decoded so far is answered before anything closes.
    await withDeadline(Promise.all([...this.connections].map((conn) => conn.idle())), CLOSE_DEADLINE_MS)
    this.context.sync?.close()
    const sockets = [...this.connections].map(
      (conn) =>
        new Promise<void>((resolve) => {
          if (conn.socket.destroyed) return resolve()
          conn.socket.once('close', () => resolve())
          conn.close()
        }),
    )
    await withDeadline(Promise.all(sockets), CLOSE_DEADLINE_MS)
    for (const conn of this.connections) conn.socket.destroy()
    // Files last: nothing can use them any more.
    await this.retention.close()
    // The journal before the store: a commit in progress has finished (its connection was answered).
    await this.context.tx.close()
    await this.store.close()
    await this.context.offsets.close()
    await serverClosed
    for (const lock of this.locks) lock.release()
    this.log.info('stopped')
  }

  private async reloadNow(source: ReloadSource | undefined, dryRun: boolean): Promise<ReloadReport> {
    if (this.closing !== undefined) throw new MetaError('SERVICE_UNAVAILABLE', 'the broker is stopping')
    const running = this.config
    const {diff, report} = await planReload(running, this.overrides, this.store, source)
    if (dryRun || !report.changed) return report
    const next = diff.config
    const newRoots = dataRoots(next).filter((root) => !this.locks.some((lock) => lock.dir === root))
    const added = lockDataDirs(newRoots, this.log)
    for (const lock of added) lock.setAddress(`${this.host}:${this.port}`)
    this.locks.push(...added)
    this.context.config = next
    this.topics.setConfig(next)
    this.store.reloadConfig()
    this.retention.schedule(next)
    const count = (config: BrokerConfig, topic: string) => resolveTopic(config, topic)?.numPartitions ?? 0
    this.context.groups.partitionCountsChanged((topic) => count(running, topic) !== count(next, topic))
    for (const change of diff.changes) {
      const fields = {section: change.section, key: change.key, before: change.before, after: change.after, ...(change.note ? {note: change.note} : {})}
      if (change.applied) this.log.info('reload: changed', fields)
      else this.log.warn('reload: not applied until a restart', fields)
    }
    this.log.info('configuration reloaded', {source: report.source, checksum: next.checksum, changes: diff.changes.length})
    this.slaveRegistration?.reloaded()
    if (this.cluster !== undefined) {
      await this.cluster.reloaded(next.checksum, this.store.topics()).catch((error: Error) => {
        this.log.error('reload: ZooKeeper registration failed (retried on the next session)', {error: error.message})
      })
    }
    return {...report, applied: true}
  }
}

/** The partition's log, created if needed (recovery, before the broker serves). */
function storeLog(store: MessageStore, topic: string, partition: number): PartitionLog | MetaError {
  try {
    return store.get(topic, partition) ?? store.getOrCreate(topic, partition)
  } catch (error) {
    return error instanceof MetaError ? error : new MetaError('STORAGE_ERROR', (error as Error).message)
  }
}

/** The store's file operations with each fdatasync's duration recorded. */
function timedFsync(ops: FileOps, histogram: LatencyHistogram): FileOps {
  return {
    ...ops,
    fdatasync: async (fd) => {
      const startedAt = performance.now()
      try {
        await ops.fdatasync(fd)
      } finally {
        histogram.observeMs(performance.now() - startedAt)
      }
    },
  }
}

/** Every root directory holding partitions: dataPath and topics' own dataPaths. */
function dataRoots(config: BrokerConfig): string[] {
  return [...new Set([config.system.dataPath, ...config.topics.map((t) => t.dataPath)])]
}

/** Create and lock each root; on a failure release what was taken and rethrow (DATA_DIR_LOCKED names the holder). */
function lockDataDirs(roots: readonly string[], log: Logger): DataDirLock[] {
  const locks: DataDirLock[] = []
  try {
    for (const root of roots) {
      try {
        mkdirSync(root, {recursive: true})
      } catch (error) {
        throw new MetaError('STORAGE_ERROR', `cannot create data directory "${root}": ${(error as Error).message}`, {cause: error})
      }
      const lock = acquireDataDirLock(root, {command: 'meta serve'})
      if (lock.tookOverFrom !== undefined) {
        log.warn('took over a stale data directory lock (its process is gone)', {dir: root, previous: lock.tookOverFrom})
      }
      locks.push(lock)
    }
  } catch (error) {
    for (const lock of locks) lock.release()
    throw error
  }
  return locks
}

/**
 * New ids go above every id in the log, also when this machine's clock is behind the one that
 * stamped them (a promoted slave holding its master's ids, a clock set back across a
 * restart). Ids stamped more than a day ahead (not meta's: MetaQ's come from a monotonic
 * clock) are ignored, with a warning.
 */
function issueIdsAfterLog(ids: MessageIdGenerator, store: MessageStore, log: Logger): void {
  const now = Date.now()
  let newest = 0
  for (const partitionLog of store.list()) {
    const ts = partitionLog.maxTimestamp
    if (ts <= now + 86_400_000) newest = Math.max(newest, ts)
    else log.warn('a record id is stamped more than a day ahead of this clock; new ids do not follow it', {topic: partitionLog.topic, partition: partitionLog.partition, stampedMs: ts})
  }
  if (newest >= now) {
    log.warn('the log holds ids stamped at or after this clock\'s time; new ids are issued above them', {newestMs: newest, clockMs: now})
  }
  ids.issueAfter(newest)
}

/** Data in partitions a topic no longer has (numPartitions lowered in the file): say so once. */
function warnAboutHiddenPartitions(config: BrokerConfig, store: MessageStore, log: Logger): void {
  for (const topic of store.topics()) {
    const resolved = resolveTopic(config, topic)
    if (resolved === undefined) continue
    const beyond = store.list().filter((l) => l.topic === topic && l.partition >= resolved.numPartitions).map((l) => l.partition)
    if (beyond.length === 0) continue
    log.warn('partitions beyond numPartitions hold data: they stay readable, but producers and consumer groups no longer see them', {
      topic,
      numPartitions: resolved.numPartitions,
      partitions: beyond,
    })
  }
}

/** Wait for `promise`, but no longer than `ms`. */
async function withDeadline(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([promise, deadline])
  clearTimeout(timer)
}

export function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  return Broker.start(options)
}

/** A listen failure as one clear line naming the address and what to do. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`
  switch (error.code) {
    case 'EADDRINUSE':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: the port is already in use (another broker?); choose another with --port or serverPort`, {cause: error})
    case 'EACCES':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`, {cause: error})
    case 'EADDRNOTAVAIL':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: no such local address; check --host or listenHost`, {cause: error})
    default:
      return error
  }
}

function assertNever(frame: never): never {
  throw new Error(`no handler for ${JSON.stringify(frame)}`)
}

function storageConfigFor(config: BrokerConfig, topics: TopicRegistry, topic: string): TopicStorageConfig {
  const resolved = topics.resolve(topic)
  const system = config.system
  return {
    dataPath: resolved?.dataPath ?? system.dataPath,
    unflushThreshold: resolved?.unflushThreshold ?? system.unflushThreshold,
    unflushIntervalMs: resolved?.unflushIntervalMs ?? system.unflushIntervalMs,
    maxSegmentBytes: resolved?.maxSegmentBytes ?? system.maxSegmentBytes,
  }
}

/** hostName if set; else the listen address, or the first non-loopback IPv4 for a wildcard bind. */
export function publishedHost(config: BrokerConfig): string {
  const {hostName, listenHost} = config.system
  if (hostName !== undefined && hostName !== '') return hostName
  if (listenHost !== '0.0.0.0' && listenHost !== '::') return listenHost
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

/** `meta://host:port` of an address. */
function brokerUrl(address: {host: string; port: number}): string {
  return `meta://${formatHost(address.host)}:${address.port}`
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}
