/**
 * Cluster mode on the broker side: with `zk.zkConnect` set (and zk.zkEnable), the broker
 * registers in ZooKeeper as MetaQ does (cluster/broker-registry.ts): every configured topic
 * and every topic with data at start, then each new topic at its first put.
 *
 * Put health: when puts fail in storage (a full disk, an I/O error), the broker leaves
 * `topics-pub` so producers stop choosing it, and probes its data directory every few
 * seconds (write, fdatasync, remove a small file); once a probe succeeds it publishes again.
 *
 * A broker with a TLS port also writes `ids/<id>/master_tls` (ephemeral, `meta+tls://host:port`),
 * again after every new session; meta's clients given --tls prefer it to `master`.
 *
 * A ZooKeeper write that fails (the server is unreachable, an ACL refuses it) is logged at
 * warn with what it was for and retried with back-off until it succeeds or the broker stops:
 * a topic that is not registered is a topic producers cannot find.
 */
import {randomBytes} from 'node:crypto'
import {open, unlink} from 'node:fs/promises'
import {join} from 'node:path'
import type {Logger} from '../log.js'
import {BrokerRegistry, type RegisteredTopic} from '../cluster/broker-registry.js'
import {parseBrokerPartition, ZkPaths} from '../cluster/paths.js'
import {CreateMode, ZkSession} from '../cluster/zk-session.js'
import type {BrokerConfig} from './config/index.js'
import type {TopicRegistry} from './topics.js'
import {ZkLease} from './zk-lease.js'

const PUT_HEALTH_PROBE_INTERVAL_MS = 5_000
/** Back-off of a failed ZooKeeper write: doubles from the first to the last. */
const ZK_RETRY_FIRST_MS = 500
const ZK_RETRY_MAX_MS = 30_000
const PROBE_FILE = '.meta-write-probe'
const PROBE_BYTES = 64 * 1024

export class ClusterRegistration {
  private probeTimer: NodeJS.Timeout | undefined
  private readonly retryTimers = new Set<NodeJS.Timeout>()
  private stopped = false
  private lease: ZkLease | undefined

  private constructor(
    readonly session: ZkSession,
    readonly registry: BrokerRegistry,
    private readonly config: BrokerConfig,
    private readonly topics: TopicRegistry,
    private readonly log: Logger,
  ) {}

  /** The length of the lease on the broker id (zk-lease.ts); undefined without one. */
  get leaseMs(): number | undefined {
    return this.lease?.lengthMs
  }

  /** Connect, check the broker id is free, and register. */
  static async start(options: {
    config: BrokerConfig
    topics: TopicRegistry
    url: string
    /** `meta+tls://host:tlsPort`: registered as ids/<id>/master_tls. */
    tlsUrl?: string
    topicsWithData: string[]
    log: Logger
    /** Work that must be done in ZooKeeper before the broker registers (recoverOffset). */
    beforeRegister?: (session: ZkSession, paths: ZkPaths) => Promise<void>
    /** An open session to use (a promoted slave's, which already owns `ids/<id>/master`). */
    session?: ZkSession
    /** After a session expiry, another live broker holds this broker id (BrokerRegistry). */
    onIdTaken?: (other: string) => void
    /** Hold the broker id under a lease (zk-lease.ts): a broker whose id can fail over. */
    lease?: {onLost: (reason: string, takenBy?: string) => void; onHeld: () => void; onExtended?: (endsAtMs: number) => void}
  }): Promise<ClusterRegistration> {
    const {config, topics, url, log} = options
    const zk = config.zookeeper
    const session =
      options.session ??
      (await ZkSession.connect({
        connect: zk.zkConnect!,
        sessionTimeoutMs: zk.zkSessionTimeoutMs,
        connectTimeoutMs: zk.zkConnectionTimeoutMs,
        logger: log,
      }))
    const registry = new BrokerRegistry({
      session,
      paths: new ZkPaths(zk.zkRoot),
      brokerId: config.system.brokerId,
      url,
      configChecksum: config.checksum,
      sessionTimeoutMs: zk.zkSessionTimeoutMs,
      log,
      onIdTaken: options.onIdTaken,
    })
    const registration = new ClusterRegistration(session, registry, config, topics, log)
    const names = new Set([...topics.configuredTopics(), ...options.topicsWithData])
    try {
      await options.beforeRegister?.(session, new ZkPaths(zk.zkRoot))
      await registry.register([...names].sort().flatMap((name) => registration.describe(name) ?? []))
    } catch (error) {
      session.close()
      throw error
    }
    if (options.tlsUrl !== undefined) {
      const tlsUrl = options.tlsUrl
      const write = () => registration.writeTlsEndpoint(tlsUrl)
      try {
        await write()
      } catch (error) {
        session.close()
        throw error
      }
      session.on('session', () => registration.retrying('register the TLS endpoint again', {url: tlsUrl}, write))
    }
    if (options.lease !== undefined) {
      registration.lease = new ZkLease({
        session,
        masterPath: new ZkPaths(zk.zkRoot).master(config.system.brokerId),
        sessionTimeoutMs: zk.zkSessionTimeoutMs,
        leaseMs: config.system.failoverLeaseMs,
        log,
        ...options.lease,
      })
      registration.lease.start()
    }
    return registration
  }

  /** ids/<id>/master_tls ← the TLS endpoint (replacing a previous run's node). */
  private async writeTlsEndpoint(tlsUrl: string): Promise<void> {
    const path = new ZkPaths(this.config.zookeeper.zkRoot).masterTls(this.config.system.brokerId)
    await this.session.remove(path).catch(() => undefined)
    await this.session.put(path, tlsUrl, CreateMode.EPHEMERAL)
  }

  /** A topic got its first partition on this broker. */
  topicCreated(topic: string): void {
    const described = this.describe(topic)
    if (described) this.retrying('register a new topic', {topic}, () => this.registry.registerTopic(described))
  }

  /**
   * After a reload: publish the new config checksum, register topics that are new or whose
   * settings changed (partition count, acceptPublish, acceptSubscribe), and remove the nodes
   * of topics this broker no longer accepts. `topicsWithData` are kept registered while
   * accepted, as at start.
   */
  async reloaded(checksum: number, topicsWithData: string[]): Promise<void> {
    const names = new Set([...this.topics.configuredTopics(), ...topicsWithData, ...this.registry.registeredTopics()])
    const work: Array<Promise<void>> = [this.registry.setConfigChecksum(checksum)]
    for (const name of [...names].sort()) {
      const described = this.describe(name)
      work.push(described === undefined ? this.registry.unregisterTopic(name) : this.registry.registerTopic(described))
    }
    await Promise.all(work)
  }

  /**
   * The consumer groups with offsets in ZooKeeper for `topic` on this broker (MetaQ's clients
   * store them at `consumers/<group>/offsets/<topic>/<brokerId>-<partition>`), sorted, each
   * with the offset nodes of this broker's partitions.
   */
  async topicOffsetNodes(topic: string): Promise<Array<{group: string; nodes: string[]}>> {
    const paths = new ZkPaths(this.config.zookeeper.zkRoot)
    const brokerId = this.config.system.brokerId
    const groups = await this.session.children(paths.consumers())
    const found = await Promise.all(
      groups.map(async (group) => {
        const children = await this.session.children(paths.offsets(group, topic))
        const nodes = children.filter((child) => parseBrokerPartition(child)?.brokerId === brokerId).map((child) => `${paths.offsets(group, topic)}/${child}`)
        return {group, nodes}
      }),
    )
    return found.filter((g) => g.nodes.length > 0)
  }

  /**
   * Remove the consumer offsets ZooKeeper holds for `topic` on this broker (and a group's
   * `offsets/<topic>` node once no broker has one left). Returns the groups that had some.
   * Rejects with CLUSTER_ERROR when ZooKeeper does not answer.
   */
  async removeTopicOffsets(topic: string): Promise<string[]> {
    const paths = new ZkPaths(this.config.zookeeper.zkRoot)
    const found = await this.topicOffsetNodes(topic)
    for (const {group, nodes} of found) {
      for (const node of nodes) await this.session.remove(node)
      // Another broker's partitions of the topic keep their offsets (and the node).
      await this.session.removeIfEmpty(paths.offsets(group, topic))
    }
    return found.map((g) => g.group)
  }

  /**
   * A topic deleted on this broker: its registration goes unless server.ini names it (then it
   * stays, as at a start). A topic accepted only by a wildcard or by zero-config mode is
   * registered again at its next first put, as at a start.
   */
  async topicDeleted(topic: string): Promise<void> {
    if (this.topics.configuredTopics().includes(topic)) return
    await this.registry.unregisterTopic(topic)
  }

  /** Called for every put's storage outcome; failures take the broker out of topics-pub. */
  putOutcome(failed: boolean): void {
    if (!failed || !this.registry.isPublishable) return
    this.retrying('leave topics-pub', {}, () => this.registry.setPublishable(false))
    this.scheduleProbe()
  }

  /**
   * Synchronous replication: leave ZooKeeper while the sync slave keeps failing
   * (docs/protocol.md#synchronous-replication).
   */
  leave(): Promise<void> {
    return this.registry.unregister()
  }

  /** ...and register again once a test sync succeeds. */
  rejoin(): Promise<void> {
    return this.registry.register([])
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.lease?.stop()
    for (const timer of this.retryTimers) clearTimeout(timer)
    this.retryTimers.clear()
    if (this.probeTimer) clearTimeout(this.probeTimer)
    try {
      // Bounded: a shutdown must not wait on a ZooKeeper that is gone (the nodes are
      // ephemeral and vanish with the session anyway).
      const tlsPath = new ZkPaths(this.config.zookeeper.zkRoot).masterTls(this.config.system.brokerId)
      await Promise.race([
        Promise.all([this.session.remove(tlsPath).catch(() => undefined), this.registry.unregister()]),
        new Promise((_, reject) => setTimeout(() => reject(new Error('ZooKeeper did not answer within 5 s')), 5000).unref()),
      ])
    } catch (error) {
      this.log.warn('could not unregister from ZooKeeper', {error: (error as Error).message})
    }
    this.session.close()
  }

  private describe(topic: string): RegisteredTopic | undefined {
    const resolved = this.topics.resolve(topic)
    if (resolved === undefined) return undefined
    return {
      topic,
      numPartitions: resolved.numPartitions,
      acceptPublish: resolved.acceptPublish,
      acceptSubscribe: resolved.acceptSubscribe,
    }
  }

  private scheduleProbe(): void {
    if (this.probeTimer) return
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined
      this.probe().then(
        () => this.retrying('return to topics-pub', {}, () => this.registry.setPublishable(true)),
        (error: Error) => {
          this.log.debug('data directory still failing writes', {error: error.message})
          this.scheduleProbe()
        },
      )
    }, PUT_HEALTH_PROBE_INTERVAL_MS)
    this.probeTimer.unref()
  }

  private async probe(): Promise<void> {
    const path = join(this.config.system.dataPath, PROBE_FILE)
    const file = await open(path, 'w')
    try {
      await file.write(randomBytes(PROBE_BYTES))
      await file.datasync()
    } finally {
      await file.close()
      await unlink(path).catch((error: Error) => {
        // Harmless: the next probe truncates and reuses the same file.
        this.log.debug('cannot remove the write probe', {path, error: error.message})
      })
    }
  }

  /**
   * Run a ZooKeeper write now; if it fails, log it at warn (with what it was for) and try
   * again with back-off until it succeeds or the broker stops.
   */
  private retrying(what: string, context: Record<string, unknown>, work: () => Promise<void>, attempt = 1): void {
    if (this.stopped) return
    work().then(
      () => {
        if (attempt > 1) this.log.info(`ZooKeeper: ${what}: done`, {...context, attempts: attempt})
      },
      (error: Error) => {
        if (this.stopped) return
        const delayMs = Math.min(ZK_RETRY_FIRST_MS * 2 ** (attempt - 1), ZK_RETRY_MAX_MS)
        this.log.warn(`ZooKeeper: cannot ${what}; retrying`, {...context, attempt, retryInMs: delayMs, error: error.message})
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer)
          this.retrying(what, context, work, attempt + 1)
        }, delayMs)
        timer.unref()
        this.retryTimers.add(timer)
      },
    )
  }
}
