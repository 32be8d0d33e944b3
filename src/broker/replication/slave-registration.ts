/**
 * An asynchronous slave in ZooKeeper (docs/protocol.md#zookeeper,
 * docs/protocol.md#asynchronous-replication): it finds its master through `ids/<brokerId>/master`
 * (watched: a master that restarts elsewhere, leaves or comes back is followed), registers
 * `ids/<brokerId>/slave<slaveId>` (ephemeral, its URL; with a TLS port also `slave<slaveId>_tls`,
 * its `meta+tls://` URL) and, for every topic it replicates, the legacy
 * `topics/<t>/<id>-s<slaveId>` (numPartitions) and `topics-sub/<t>/<id>-s<slaveId>` (JSON) nodes,
 * so consumers can read from it when no master is registered for that id
 * (docs/protocol.md#load-balancing). Never `topics-pub`: producers do not write to slaves.
 *
 * After a session expiry everything is registered again, retried with back-off.
 */
import type {Logger} from '../../log.js'
import {ZkPaths, encodeTopicBroker, parseBrokerUrl} from '../../cluster/paths.js'
import {CreateMode, ZkSession} from '../../cluster/zk-session.js'
import {readMasterUrl} from '../../cluster/discovery.js'

interface SlaveRegistrationOptions {
  zkConnect: string
  zkRoot: string
  sessionTimeoutMs: number
  connectTimeoutMs: number
  brokerId: number
  slaveId: number
  /** This slave's `meta://host:port`. */
  url: string
  /** This slave's `meta+tls://host:tlsPort` when it has a TLS port: registered as `slave<k>_tls`. */
  tlsUrl?: string
  /** numPartitions of a topic on this broker (its configuration, synced from the master). */
  numPartitions(topic: string): number
  /** Called with the master's address whenever it changes (undefined: none registered). */
  onMaster(master: {host: string; port: number} | undefined): void
  log: Logger
}

const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 30_000

export class SlaveRegistration {
  private readonly topics = new Set<string>()
  private queue: Promise<void> = Promise.resolve()
  private stopped = false
  private retryTimer: NodeJS.Timeout | undefined
  private readonly paths: ZkPaths

  private constructor(
    private readonly session: ZkSession,
    private readonly options: SlaveRegistrationOptions,
  ) {
    this.paths = new ZkPaths(options.zkRoot)
    session.on('session', () => this.retrying(() => this.registerAll(), 1))
  }

  static async start(options: SlaveRegistrationOptions, topics: string[]): Promise<SlaveRegistration> {
    const session = await ZkSession.connect({
      connect: options.zkConnect,
      sessionTimeoutMs: options.sessionTimeoutMs,
      connectTimeoutMs: options.connectTimeoutMs,
      logger: options.log,
    })
    const registration = new SlaveRegistration(session, options)
    for (const topic of topics) registration.topics.add(topic)
    try {
      await registration.serial(() => registration.registerAll())
    } catch (error) {
      session.close()
      throw error
    }
    return registration
  }

  /** The registration's ZooKeeper session (a sync slave announces itself with it). */
  get zkSession(): ZkSession {
    return this.session
  }

  /** The ZooKeeper paths under zk.zkRoot. */
  get zkPaths(): ZkPaths {
    return this.paths
  }

  get role(): string {
    return `s${this.options.slaveId}`
  }

  /** A topic this slave replicates (its first partition): register its nodes. */
  topicReplicated(topic: string): void {
    if (this.topics.has(topic)) return
    this.topics.add(topic)
    this.retrying(() => this.writeTopic(topic), 1)
  }

  /** The configuration changed (the master's was applied): partition counts may differ. */
  reloaded(): void {
    this.retrying(async () => {
      for (const topic of this.topics) await this.writeTopic(topic)
    }, 1)
  }

  /**
   * Failover: try to become the master of this broker id by creating the ephemeral
   * `ids/<brokerId>/master` node with this broker's URL. ZooKeeper lets one create win: when
   * the node exists (the master came back, or another slave won) nothing changes and undefined
   * is returned. On success this registration stops (its slave nodes are removed, the master
   * watch is no longer followed) and its session, which owns the master node, is handed over.
   */
  async claimMaster(): Promise<ZkSession | undefined> {
    return this.claim(
      async (master) => (await this.session.exists(master)) === undefined && (await this.session.create(master, this.options.url, CreateMode.EPHEMERAL)),
    )
  }

  /**
   * Failover on a broken sync link (link-failover.ts): take `ids/<brokerId>/master` over from
   * the master at `from` while its session may still live: the node is replaced (removed at the
   * version read and created with this broker's URL, one multi), so no renewal of that master's
   * lease succeeds after it. Undefined (nothing changed) when the node names another broker or
   * changed meanwhile; a node already gone is created as {@link claimMaster} does.
   */
  async takeOverMaster(from: string): Promise<ZkSession | undefined> {
    return this.claim(async (master) => {
      const stat = await this.session.exists(master)
      if (stat === undefined) return this.session.create(master, this.options.url, CreateMode.EPHEMERAL)
      if (stat.ephemeralOwner.toString('hex') === this.session.sessionId) return true
      if ((await this.session.getString(master)) !== from) return false
      return this.session.replace(master, this.options.url, CreateMode.EPHEMERAL, stat.version)
    })
  }

  /** Win the master node with `win`; then stop registering as a slave and hand the session over. */
  private async claim(win: (masterPath: string) => Promise<boolean>): Promise<ZkSession | undefined> {
    let claimed = false
    await this.serial(async () => {
      if (this.stopped) return
      if (!(await win(this.paths.master(this.options.brokerId)))) return
      claimed = true
      this.stopped = true
      if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
      const {brokerId} = this.options
      for (const topic of this.topics) {
        await this.session.remove(this.paths.topicBroker(topic, brokerId, this.role))
        await this.session.remove(this.paths.topicSubBroker(topic, brokerId, this.role))
      }
      await this.session.remove(this.slaveTlsPath())
      await this.session.remove(this.slavePath())
    })
    return claimed ? this.session : undefined
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    try {
      await this.serial(async () => {
        const {brokerId} = this.options
        for (const topic of this.topics) {
          await this.session.remove(this.paths.topicBroker(topic, brokerId, this.role))
          await this.session.remove(this.paths.topicSubBroker(topic, brokerId, this.role))
        }
        await this.session.remove(this.slaveTlsPath())
        await this.session.remove(this.slavePath())
      })
    } catch (error) {
      this.options.log.warn('cannot remove the slave registration from ZooKeeper (its session ends anyway)', {error: (error as Error).message})
    }
    this.session.close()
  }

  private slavePath(): string {
    return this.paths.slave(this.options.brokerId, this.options.slaveId)
  }

  private slaveTlsPath(): string {
    return this.paths.slaveTls(this.options.brokerId, this.options.slaveId)
  }

  private async registerAll(): Promise<void> {
    const {brokerId, url, log} = this.options
    await this.session.put(this.slavePath(), url, CreateMode.EPHEMERAL)
    if (this.options.tlsUrl !== undefined) await this.session.put(this.slaveTlsPath(), this.options.tlsUrl, CreateMode.EPHEMERAL)
    for (const topic of this.topics) await this.writeTopic(topic)
    await this.readMaster()
    log.info('registered in ZooKeeper as a slave', {brokerId, slaveId: this.options.slaveId, url, topics: this.topics.size})
  }

  /** Read `ids/<id>/master` and watch it (a change, a deletion or a creation reads it again). */
  private async readMaster(): Promise<void> {
    if (this.stopped) return // stopped, or promoted (the node is this broker's own)
    const watcher = () => {
      if (!this.stopped) this.retrying(() => this.readMaster(), 1)
    }
    const url = await readMasterUrl(this.session, this.paths, this.options.brokerId, watcher)
    this.options.onMaster(url === undefined ? undefined : parseBrokerUrl(url))
  }

  private async writeTopic(topic: string): Promise<void> {
    const {brokerId} = this.options
    const numParts = this.options.numPartitions(topic)
    await this.session.put(this.paths.topicBroker(topic, brokerId, this.role), String(numParts), CreateMode.EPHEMERAL)
    await this.session.put(this.paths.topicSubBroker(topic, brokerId, this.role), encodeTopicBroker(numParts, brokerId, this.role), CreateMode.EPHEMERAL)
  }

  /** ZooKeeper work one piece at a time, in order. */
  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work)
    this.queue = next.catch(() => undefined)
    return next
  }

  /** Run `work` (serially), retrying with back-off until it succeeds or the slave stops. */
  private retrying(work: () => Promise<void>, attempt: number): void {
    if (this.stopped) return
    this.serial(work).catch((error: Error) => {
      if (this.stopped) return
      const delayMs = Math.min(RETRY_FIRST_MS * 2 ** (attempt - 1), RETRY_MAX_MS)
      this.options.log.warn('ZooKeeper write for the slave failed; retrying', {attempt, retryInMs: delayMs, error: error.message})
      this.retryTimer = setTimeout(() => this.retrying(work, attempt + 1), delayMs)
      this.retryTimer.unref()
    })
  }
}
