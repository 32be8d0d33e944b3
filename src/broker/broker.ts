/**
 * The broker: a TCP listener speaking MetaQ 1.4 (listener.ts), the message store, request
 * dispatch to the per-command handlers (dispatch.ts) and the replication role
 * (replication/roles.ts), wired together. `startBroker(options)` checks the role settings,
 * opens the store, the offset log and the transaction journal, and returns once it listens
 * (port 0 gives an ephemeral port, read it from `broker.port`); `close()` shuts down
 * gracefully (docs/invariants.md#connections):
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
 * connectionFrameTimeoutMs or that sent no request for connectionIdleTimeoutMs (listener.ts).
 */
import {MessageIdGenerator} from '../protocol/message-id.js'
import {MetaError} from '../protocol/errors.js'
import type {RequestFrame} from '../protocol/frames.js'
import {silentLogger, type Logger} from '../log.js'
import {MessageStore, type DataDirLock} from '../storage/index.js'
import type {FileOps} from '../storage/file-ops.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'
import {GroupCoordinator} from './groups/coordinator.js'
import type {ClusterRegistration} from './cluster-registration.js'
import {defaultBrokerConfig, resolveTopic, type BrokerConfig, type ConfigOverrides} from './config/index.js'
import type {BoundPrincipal, Connection, ConnectionHandler, ConnectionSocket} from './connection.js'
import type {BrokerContext} from './context.js'
import {dispatch} from './dispatch.js'
import {formatHost, IN_PROCESS_REMOTE, Listener, publishedHost} from './listener.js'
import {LongPollRegistry} from './long-poll.js'
import {PartitionLogs} from './partition-logs.js'
import {statsView, type BrokerReadView, type BrokerStatsView} from './read-view.js'
import {RealtimeStats} from './stats.js'
import {TopicRegistry} from './topics.js'
import {expireGet, retryGet} from './handlers/get.js'
import {admitInProcess, createAccessControl, refused, reloadAccess, type AccessControl, type LoginThrottleOptions} from './auth/index.js'
import {planReload, type ReloadSource} from './reload.js'
import {dataRoots, lockDataDirs, openStores, warnAboutHiddenPartitions, type Opened} from './open-stores.js'
import {applyTopicOverlay, loadTopicOverlay, saveTopicOverlay, type TopicOverlay} from './topic-overlay.js'
import {finishTopicDeletes, finishTopicDeletesInZooKeeper, overlayWithoutDeleted} from './topic-delete.js'
import {TopicDeletions} from './topic-deletions.js'
import {RetentionScheduler} from './retention.js'
import type {Replicator, SlaveOptions} from './replication/replicator.js'
import {issueIdsAfterLog} from './replication/promotion.js'
import {Roles, validateRoles} from './replication/roles.js'
import type {ReplicationLogin} from './replication/sync-link.js'

export {publishedHost} from './listener.js'

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
  /**
   * The file operations of the partition logs (default: node:fs). A seam for fault injection:
   * a test passes operations that fail a write with ENOSPC or EIO (storage/file-ops.ts).
   */
  fileOps?: FileOps
  /** Caps on standalone consumer groups (default GROUPS_MAX, MEMBERS_PER_GROUP_MAX in groups/coordinator.ts; tests make them small). */
  groupLimits?: {maxGroups?: number; maxMembersPerGroup?: number}
  /** The users file (`meta serve --users`): rights are checked (broker/auth); wins over [security] usersFile. */
  usersFile?: string
  /**
   * How a synchronous master logs in to its slave (`meta serve`: SCRAM-SHA-256 as
   * $META_REPLICATION_USER); none: it connects anonymously. An asynchronous slave's login is
   * its `slave.connect`'s.
   */
  replicationLogin?: ReplicationLogin
  /** The pace of logins (auth/throttle.ts; tests make its delays short). */
  loginThrottle?: LoginThrottleOptions
  /** The audit trail's file (`meta serve --audit-log`, auth/audit.ts); needs access control. */
  auditLog?: string
}

export class Broker implements ConnectionHandler, BrokerReadView {
  readonly store: MessageStore
  readonly topics: TopicRegistry
  readonly log: Logger
  /** Retention jobs (deleteWhen / deletePolicy / maxPartitionBytes). */
  readonly retention: RetentionScheduler
  private readonly listener: Listener
  private readonly context: BrokerContext
  private readonly roles: Roles
  private readonly statsView: BrokerStatsView
  private readonly newPartitionListeners: Array<(topic: string, partition: number) => void> = []
  private closing: Promise<void> | undefined
  private readonly overrides: ConfigOverrides
  private readonly locks: DataDirLock[]
  private reloading: Promise<unknown> = Promise.resolve()
  /** The file's config with the serve flags, before the topic overlay (topic-overlay.ts) goes on top. */
  private baseConfig: BrokerConfig
  private overlay: TopicOverlay

  private constructor(
    config: BrokerConfig,
    opened: Opened,
    log: Logger,
    options: BrokerOptions,
    overlay: {base: BrokerConfig; topics: TopicOverlay; deletions: TopicDeletions},
  ) {
    this.baseConfig = overlay.base
    this.overlay = overlay.topics
    const {store, topics} = opened
    this.overrides = options.overrides ?? {}
    this.locks = opened.locks
    this.store = store
    this.topics = topics
    this.log = log
    this.listener = new Listener(this, {
      config: () => this.config,
      closing: () => this.closing !== undefined,
      storeOpenFiles: () => this.store.openFileCount,
      checksLogins: () => this.context.access !== undefined,
      anonymousHasNoRights: () => this.context.access?.anonymousHasNoRights === true,
      certificateRefused: (name, address) => this.context.access?.audit.certificateRefused(name, address),
      log,
    })
    const polls = new LongPollRegistry(
      (w) => retryGet(this.context, w.conn, w.frame),
      (w) => expireGet(this.context, w.conn, w.frame),
    )
    this.context = {
      config,
      store,
      logs: new PartitionLogs(store),
      topics,
      counters: opened.counters,
      realtime: new RealtimeStats(),
      latency: opened.latency,
      ids: new MessageIdGenerator(config.system.brokerId),
      polls,
      groups: new GroupCoordinator({
        brokerId: config.system.brokerId,
        defaultSessionTimeoutMs: config.system.groupSessionTimeoutMs,
        partitionCount: (topic) => topics.resolve(topic)?.numPartitions ?? 0,
        log: log.child('groups'),
        ...options.groupLimits,
      }),
      offsets: opened.offsets,
      tx: opened.tx,
      log: log.child('handler'),
      sync: undefined,
      url: '',
      port: 0,
      startedAtMs: Date.now(),
      connectionCount: () => this.listener.connections.size,
      connectionsRefused: () => this.listener.refusedByAddress,
      connections: () => this.listener.connections.values(),
      onNewPartition: (topic, partition) => {
        this.cluster?.topicCreated(topic)
        // A synchronous slave in ZooKeeper registers the topics its master sends it.
        if (this.config.system.syncSlave) this.roles.slaveRegistration?.topicReplicated(topic)
        for (const listener of this.newPartitionListeners) listener(topic, partition)
      },
      putOutcome: (failed) => this.cluster?.putOutcome(failed),
      reload: (dryRun) => this.reload(undefined, {dryRun}),
      topicOverlay: () => new Map([...this.overlay].map(([topic, settings]) => [topic, {...settings}])),
      changeTopicOverlay: (overlay) => this.changeTopicOverlay(overlay),
      cluster: () => this.cluster,
      topicDeletions: overlay.deletions,
    }
    this.roles = new Roles({
      context: this.context,
      log,
      closing: () => this.closing !== undefined,
      reload: (source, overlay) => (overlay === undefined ? this.reload(source) : this.changeTopicOverlay(overlay, source)),
      replicationLogin: options.replicationLogin,
    })
    this.statsView = statsView(this.context)
    store.onAppend((partitionLog) => polls.wake(partitionLog.topic, partitionLog.partition))
    this.retention = new RetentionScheduler(store, config, log.child('retention'))
  }

  static async start(options: BrokerOptions = {}): Promise<Broker> {
    const base = options.config ?? defaultBrokerConfig()
    // Topics created or changed online (meta topic create|alter) go on top of the file, but
    // those whose delete a kill interrupted (finished below, topic-delete.ts).
    const deletions = TopicDeletions.open(base.system.dataPath)
    const overlay = await overlayWithoutDeleted(base.system.dataPath, loadTopicOverlay(base.system.dataPath), deletions)
    const config = applyTopicOverlay(base, overlay)
    // Before anything is opened: a role that makes no sense costs no recovery and no port.
    validateRoles(config, options.slave)
    const log = (options.logger ?? silentLogger).child('broker')
    const access = createAccessControl(config, options.usersFile, log, {throttle: options.loginThrottle, auditLog: options.auditLog})
    // The store and the journal resolve with the broker's config of the moment (reloads replace it).
    const holder: {context?: BrokerContext} = {}
    const opened = await openStores(config, options, log, holder)
    const started = new Broker(config, opened, log, options, {base, topics: overlay, deletions})
    started.context.access = access
    holder.context = started.context
    issueIdsAfterLog(started.context.ids, opened.store, log)
    try {
      await finishTopicDeletes(started.context)
      await started.listen()
      warnAboutHiddenPartitions(config, opened.store, log)
      started.retention.schedule(config)
      await started.roles.start(options.slave)
      void finishTopicDeletesInZooKeeper(started.context)
    } catch (error) {
      await started.abortStart()
      throw error
    }
    return started
  }

  /** The configuration in force (replaced by {@link reload}). */
  get config(): BrokerConfig {
    return this.context.config
  }

  /** SIGHUP: re-read the users file when access control is on (auth/reload.ts), and server.ini. */
  reloadWithUsers(): Promise<ReloadReport> {
    const access = this.context.access
    return access === undefined ? this.reload() : reloadAccess(this.context, access, false)
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

  /**
   * Replace the topic overlay (topic admin): checked as a reload of the running file with
   * `overlay` on top, saved to `<dataPath>/__meta_state/topic-overlay.json`, then applied as a
   * reload is. Runs in line with reloads. Rejects with CONFIG_INVALID when refused (nothing changes).
   * With `source` (an asynchronous slave following its master), that server.ini replaces the
   * running file's in the same step.
   */
  changeTopicOverlay(overlay: TopicOverlay, source?: ReloadSource): Promise<ReloadReport> {
    const run = this.reloading.then(async () => {
      if (this.closing !== undefined) throw new MetaError('SERVICE_UNAVAILABLE', 'the broker is stopping')
      const plan = await planReload(this.config, this.overrides, this.store, source ?? {config: this.baseConfig}, overlay)
      await saveTopicOverlay(this.config.system.dataPath, overlay)
      this.overlay = overlay
      const report = await this.applyReload(plan)
      // Unchanged settings still refresh the ZooKeeper registration (a deleted topic's data is gone).
      if (!report.changed) await this.roles.reloaded()
      // A sync slave takes the new overlay before the change is acknowledged (sync-overlay).
      await this.context.sync?.overlayChanged()
      return report
    })
    this.reloading = run.catch(() => undefined)
    return run
  }

  get port(): number {
    return this.listener.port
  }

  get host(): string {
    return this.config.system.listenHost
  }

  /** The TLS port (tlsPort), when one listens. */
  get tlsPort(): number | undefined {
    return this.listener.tlsPort
  }

  /** `meta+tls://host:tlsPort`, when a TLS port listens. */
  get tlsUrl(): string | undefined {
    return this.context.tlsUrl
  }

  /** `meta://host:port` as published to clients (hostName, else the listen address). */
  get url(): string {
    return this.context.url
  }

  /** Set in cluster mode (zk.zkConnect): the registration in ZooKeeper. */
  get cluster(): ClusterRegistration | undefined {
    return this.roles.cluster
  }

  /** Set when access control is on (users file or [security]): users, tokens, rights. */
  get access(): AccessControl | undefined {
    return this.context.access
  }

  /** Set when this broker is an asynchronous slave. */
  get replicator(): Replicator | undefined {
    return this.roles.replicator
  }

  /** Counters and state, read-only (read-view.ts); nothing here changes the broker. */
  get stats(): BrokerStatsView {
    return this.statsView
  }

  /** Bytes received from and sent to clients since the start (all connections, open and closed). */
  traffic(): {received: number; sent: number} {
    return this.listener.traffic()
  }

  /** Subscribe to the first put into each new topic-partition. */
  onNewPartition(listener: (topic: string, partition: number) => void): void {
    this.newPartitionListeners.push(listener)
  }

  /**
   * A connection from this process acting as `principal` (the HTTP server's, over an in-process
   * pair: docs/http.md#how-the-http-server-reaches-its-broker): every check, counter, quota and
   * audit line is the principal's, as for a client that logged in. Throws QUOTA_EXCEEDED past
   * the user's connections limit, CONNECTION_CLOSED while stopping.
   */
  acceptInProcess(socket: ConnectionSocket, principal: BoundPrincipal): void {
    const access = this.context.access
    if ('user' in principal && access !== undefined) admitInProcess(this.context, access, principal.user, IN_PROCESS_REMOTE)
    const conn = this.listener.acceptInProcess(socket, principal)
    if ('user' in principal && access !== undefined) conn.quota = access.quotaOf(principal.user)
  }

  handle(conn: Connection, frame: RequestFrame): void {
    dispatch(this.context, conn, frame)
  }

  refusesBody(conn: Connection, frame: RequestFrame): boolean {
    const access = this.context.access
    return access !== undefined && refused(access, conn, frame)
  }

  draining(conn: Connection): void {
    this.context.polls.expireConnection(conn)
    this.context.groups.answerConnection(conn.id)
  }

  closed(conn: Connection): void {
    this.listener.closed(conn)
    this.context.polls.dropConnection(conn)
    this.context.groups.connectionClosed(conn.id)
    this.context.tx.connectionClosed(conn.id)
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async listen(): Promise<void> {
    const port = await this.listener.listen()
    this.context.port = port
    const published = formatHost(publishedHost(this.config))
    // Under tlsOnly the one endpoint is the TLS port: ids/<id>/master holds it as meta+tls://.
    this.context.url = `${this.listener.tlsOnlyMode ? 'meta+tls' : 'meta'}://${published}:${port}`
    if (this.listener.tlsPort !== undefined) this.context.tlsUrl = `meta+tls://${published}:${this.listener.tlsPort}`
    for (const lock of this.locks) lock.setAddress(`${this.host}:${port}`)
  }

  /** Undo a start that failed after the stores opened (listen, ZooKeeper). */
  private async abortStart(): Promise<void> {
    await this.roles.abort()
    this.listener.stopAccepting()
    await this.listener.closedServer()
    await this.retention.close()
    this.context.groups.close()
    await this.context.tx.close()
    await this.context.offsets.close()
    await this.store.close()
    for (const lock of this.locks) lock.release()
  }

  private async shutdown(): Promise<void> {
    this.log.info('shutting down', {connections: this.listener.connections.size})
    // Leave ZooKeeper first, so clients stop choosing this broker while it drains.
    await this.roles.stop()
    this.listener.stopAccepting()
    this.context.polls.expireAll()
    this.context.groups.close()
    // Every request decoded so far is answered before anything closes.
    await this.listener.idle()
    this.context.sync?.close()
    await this.listener.close()
    // Files last: nothing can use them any more.
    await this.retention.close()
    // The journal before the store: a commit in progress has finished (its connection was answered).
    await this.context.tx.close()
    await this.store.close()
    await this.context.offsets.close()
    await this.listener.closedServer()
    this.context.access?.audit.close()
    for (const lock of this.locks) lock.release()
    this.log.info('stopped')
  }

  private async reloadNow(source: ReloadSource | undefined, dryRun: boolean): Promise<ReloadReport> {
    if (this.closing !== undefined) throw new MetaError('SERVICE_UNAVAILABLE', 'the broker is stopping')
    const plan = await planReload(this.config, this.overrides, this.store, source, this.overlay)
    if (dryRun) return plan.report
    return this.applyReload(plan)
  }

  /** Put a planned reload in force (nothing when it changes nothing). */
  private async applyReload({diff, report, base}: Awaited<ReturnType<typeof planReload>>): Promise<ReloadReport> {
    const running = this.config
    this.baseConfig = base
    this.listener.reloadTls() // a renewed certificate, even with server.ini unchanged
    if (!report.changed) return report
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
    await this.roles.reloaded()
    return {...report, applied: true}
  }
}

export function startBroker(options: BrokerOptions = {}): Promise<Broker> {
  return Broker.start(options)
}
