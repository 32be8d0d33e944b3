/**
 * The broker: a TCP listener speaking MetaQ 1.4, the message store, and the per-command
 * handlers, wired together. `startBroker(options)` returns once it listens (port 0 gives an
 * ephemeral port, read it from `broker.port`); `close()` shuts down gracefully:
 *
 *   1. stop accepting connections and stop reading requests;
 *   2. answer parked long polls (404) and let in-flight puts finish: the store writes and
 *      fdatasyncs every pending batch, and each put is acknowledged from its callback;
 *   3. flush every connection's answers and close the sockets (forcibly after a deadline);
 *   4. stop retention (the segment in progress finishes), close the store's files, release
 *      the data directory lock.
 *
 * The data directory is locked (`<dataPath>/.meta.lock`, storage/data-dir-lock.ts) from
 * before the store opens until after it closes: a second broker on it refuses to start.
 * `reload()` applies a changed server.ini while running (reload.ts).
 */
import {mkdirSync} from 'node:fs'
import {createServer, type Server, type Socket} from 'node:net'
import {networkInterfaces} from 'node:os'
import {MessageIdGenerator} from '../protocol/message-id.js'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {RequestFrame} from '../protocol/frames.js'
import {silentLogger, type Logger} from '../log.js'
import {acquireDataDirLock, MessageStore, type DataDirLock, type TopicStorageConfig} from '../storage/index.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'
import {OffsetLog} from '../storage/offset-log.js'
import {GroupCoordinator} from './groups/coordinator.js'
import {ClusterRegistration} from './cluster-registration.js'
import {defaultBrokerConfig, resolveTopic, type BrokerConfig, type ConfigOverrides} from './config/index.js'
import {Connection, type ConnectionHandler} from './connection.js'
import type {BrokerContext} from './context.js'
import {LongPollRegistry} from './long-poll.js'
import {RealtimeStats, type BrokerCounters} from './stats.js'
import {TopicRegistry} from './topics.js'
import {expireGet, handleGet, retryGet} from './handlers/get.js'
import {handleOffset} from './handlers/offset.js'
import {handlePut, handlePutBatch} from './handlers/put.js'
import {handleStats} from './handlers/stats.js'
import {handlePartitions, handleSync, handleTransaction, handleVersion} from './handlers/misc.js'
import {
  handleGroupClaim,
  handleGroupDescribe,
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

export interface BrokerOptions {
  /** Default: defaultBrokerConfig() (standalone, any topic, loopback, port 8123). */
  config?: BrokerConfig
  /**
   * Settings that were given over the file (`meta serve` flags): applied again over the file
   * at every reload, so a reload never undoes a flag.
   */
  overrides?: ConfigOverrides
  logger?: Logger
}

/** How long close() waits for clients to read their last answers before dropping them. */
const CLOSE_DEADLINE_MS = 5000

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
  /** Set in cluster mode (zk.zkConnect). */
  cluster: ClusterRegistration | undefined

  private constructor(
    config: BrokerConfig,
    store: MessageStore,
    offsets: OffsetLog,
    topics: TopicRegistry,
    log: Logger,
    extra: {overrides: ConfigOverrides; locks: DataDirLock[]},
  ) {
    this.overrides = extra.overrides
    this.locks = extra.locks
    this.store = store
    this.topics = topics
    this.log = log
    this.server = createServer({noDelay: true}, (socket) => this.accept(socket))
    const counters: BrokerCounters = {
      cmdPut: 0, cmdGet: 0, cmdOffset: 0, txBegin: 0, txXaBegin: 0, txCommit: 0, txRollback: 0, getMiss: 0, putFailed: 0,
    }
    const polls = new LongPollRegistry(
      (w) => retryGet(this.context, w.conn, w.frame),
      (w) => expireGet(this.context, w.conn, w.frame),
    )
    this.context = {
      config,
      store,
      topics,
      counters,
      realtime: new RealtimeStats(),
      ids: new MessageIdGenerator(config.system.brokerId),
      polls,
      groups: new GroupCoordinator({
        brokerId: config.system.brokerId,
        defaultSessionTimeoutMs: config.system.groupSessionTimeoutMs,
        partitionCount: (topic) => topics.resolve(topic)?.numPartitions ?? 0,
        log: log.child('groups'),
      }),
      offsets,
      log: log.child('handler'),
      url: '',
      port: 0,
      startedAtMs: Date.now(),
      connectionCount: () => this.connections.size,
      onNewPartition: (topic, partition) => {
        this.cluster?.topicCreated(topic)
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
    const log = (options.logger ?? silentLogger).child('broker')
    const topics = new TopicRegistry(config)
    const roots = dataRoots(config)
    const locks = lockDataDirs(roots, log)
    let store: MessageStore
    let offsets: OffsetLog
    // The store resolves topics with the broker's config of the moment (reloads replace it).
    const holder: {broker?: Broker} = {}
    try {
      topics.loadClosed(config.system.dataPath)
      store = await MessageStore.open({
        dataPath: config.system.dataPath,
        extraDataPaths: roots.filter((p) => p !== config.system.dataPath),
        topicConfig: (topic) => storageConfigFor(holder.broker?.config ?? config, topics, topic),
        logger: log.child('storage'),
      })
      try {
        offsets = OffsetLog.open(config.system.dataPath, log.child('offsets'))
      } catch (error) {
        await store.close()
        throw error
      }
    } catch (error) {
      for (const lock of locks) lock.release()
      throw error
    }
    const started = new Broker(config, store, offsets, topics, log, {overrides: options.overrides ?? {}, locks})
    holder.broker = started
    try {
      await started.listen()
      for (const lock of locks) lock.setAddress(`${started.host}:${started.port}`)
      warnAboutHiddenPartitions(config, store, log)
      started.retention.schedule(config)
      const zk = config.zookeeper
      if (zk.zkConnect !== undefined && zk.zkEnable) {
        started.cluster = await ClusterRegistration.start({
          config,
          topics,
          url: started.url,
          topicsWithData: store.topics(),
          log: log.child('cluster'),
        })
      }
    } catch (error) {
      await new Promise<void>((resolve) => started.server.close(() => resolve()))
      await started.retention.close()
      started.context.groups.close()
      offsets.close()
      await store.close()
      for (const lock of locks) lock.release()
      throw error
    }
    return started
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

  /** Subscribe to the first put into each new topic-partition. */
  onNewPartition(listener: (topic: string, partition: number) => void): void {
    this.newPartitionListeners.push(listener)
  }

  handle(conn: Connection, frame: RequestFrame): void {
    const ctx = this.context
    switch (frame.type) {
      case 'put':
        return handlePut(ctx, conn, frame)
      case 'get':
        return handleGet(ctx, conn, frame)
      case 'offset':
        return handleOffset(ctx, conn, frame)
      case 'stats':
        return handleStats(ctx, conn, frame)
      case 'version':
        return handleVersion(conn, frame)
      case 'quit':
        return conn.close()
      case 'transaction':
        return handleTransaction(conn, frame)
      case 'sync':
        return handleSync(conn, frame)
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
      case 'seek':
        return handleSeek(ctx, conn, frame)
      case 'count':
        return handleCount(ctx, conn, frame)
      case 'put-batch':
        return handlePutBatch(ctx, conn, frame)
      case 'config-reload':
        return handleConfigReload(ctx, conn, frame)
      case 'partitions-close':
      case 'partitions-open':
        return handlePartitionsState(ctx, conn, frame)
      default:
        return assertNever(frame)
    }
  }

  closed(conn: Connection): void {
    this.connections.delete(conn)
    this.context.polls.dropConnection(conn)
    this.context.groups.connectionClosed(conn.id)
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
    this.server.on('error', (err) => this.log.error('listener error', {error: err.message}))
  }

  private accept(socket: Socket): void {
    if (this.closing !== undefined) {
      socket.destroy()
      return
    }
    const maxBodyBytes = Math.max(0, this.config.system.maxTransferBytes - RECORD_HEADER_BYTES)
    const conn = new Connection(socket, this, this.log.child('conn'), {maxBodyBytes})
    this.connections.add(conn)
    this.log.debug('client connected', {remote: conn.remote})
  }

  private async shutdown(): Promise<void> {
    this.log.info('shutting down', {connections: this.connections.size})
    // Leave ZooKeeper first, so clients stop choosing this broker while it drains.
    await this.cluster?.stop()
    const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()))
    for (const conn of this.connections) conn.stopReading()
    this.context.polls.expireAll()
    this.context.groups.close()
    await this.retention.close()
    await this.store.close()
    this.context.offsets.close()
    const sockets = [...this.connections].map(
      (conn) =>
        new Promise<void>((resolve) => {
          if (conn.socket.destroyed) return resolve()
          conn.socket.once('close', () => resolve())
          conn.close()
        }),
    )
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, CLOSE_DEADLINE_MS).unref())
    await Promise.race([Promise.all(sockets), deadline])
    for (const conn of this.connections) conn.socket.destroy()
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
    if (this.cluster !== undefined) {
      await this.cluster.reloaded(next.checksum, this.store.topics()).catch((error: Error) => {
        this.log.error('reload: ZooKeeper registration failed (retried on the next session)', {error: error.message})
      })
    }
    return {...report, applied: true}
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

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}
