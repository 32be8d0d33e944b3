/**
 * Cluster mode for clients: brokers and partitions discovered in ZooKeeper as MetaQ's clients
 * discover them (topics-pub for producers, topics-sub for consumers, ids/<id>/master for
 * addresses), kept current with watches. Connections open on first use and close when their
 * broker leaves the cluster. Emits 'change' (topic) when a topic's partitions change and
 * 'brokers' when the set of brokers does.
 *
 * A re-read after a watch fired that fails (ZooKeeper unreachable, an ACL) is logged at warn
 * and retried with back-off until it succeeds (it sets the next watch); meanwhile the failed
 * read is not cached, so the next caller reads again rather than getting its error forever.
 */
import {EventEmitter} from 'node:events'
import {MetaError} from '../protocol/errors.js'
import {silentLogger, type Logger} from '../log.js'
import {readReadableBrokers, readPublishPartitions, readSubscribePartitions} from '../cluster/discovery.js'
import {reachable} from '../cluster/broker-registry.js'
import {parseBrokerUrl, ZkPaths, DEFAULT_ZK_ROOT} from '../cluster/paths.js'
import {ZkSession} from '../cluster/zk-session.js'
import {encodePartitions} from '../protocol/commands/partitions.js'
import {BrokerConnection} from './connection.js'
import type {ConnectionOptions} from './connection-options.js'
import {defaultTlsEnabled} from './tls.js'
import type {Partition, ReadFromEvent, Topology} from './types.js'

/** Deadline of the ZooKeeper session's start. */
const ZK_CONNECT_TIMEOUT_MS = 10_000

export interface ClusterTopologyOptions extends Omit<ConnectionOptions, 'host' | 'port'> {
  /** ZooKeeper connect string `host:port[,…][/chroot]`. */
  zk: string
  /** Root znode (zk.zkRoot; default /meta). */
  zkRoot?: string
  zkSessionTimeoutMs?: number
  logger?: Logger
}

export class ClusterTopology extends EventEmitter implements Topology {
  readonly paths: ZkPaths
  private sessionPromise: Promise<ZkSession>
  private brokers = new Map<number, string>()
  /** Broker ids without a registered master, reached through one of their slaves (read only). */
  private slaveBacked = new Set<number>()
  /** Every registered slave's URL, by broker id. */
  private slaveUrls = new Map<number, string[]>()
  /** Slaves' TLS endpoints (`slave<k>_tls`) by their URL. */
  private slaveTls = new Map<string, string>()
  /** Masters a consumer could not reach, read from a slave until a probe reaches them again. */
  private readonly suspects = new Map<number, Suspect>()
  /** Where each broker id is read from now: a change is emitted as 'readFrom'. */
  private readonly readingFrom = new Map<number, {url: string; slave: boolean}>()
  private readonly connections = new Map<number, BrokerConnection>()
  /** Connections being opened: concurrent callers share one (else all but the last leaked open). */
  private readonly opening = new Map<number, Promise<BrokerConnection>>()
  private readonly pub = new Map<string, Promise<Partition[]>>()
  private readonly sub = new Map<string, Promise<Partition[]>>()
  private readonly log: Logger
  private closed = false
  private readonly retryTimers = new Set<NodeJS.Timeout>()

  constructor(private readonly options: ClusterTopologyOptions) {
    super()
    this.paths = new ZkPaths(options.zkRoot ?? DEFAULT_ZK_ROOT)
    this.log = (options.logger ?? silentLogger).child('cluster')
    this.sessionPromise = ZkSession.connect({
      connect: options.zk,
      sessionTimeoutMs: options.zkSessionTimeoutMs ?? 30_000,
      // A ZooKeeper session takes longer to set up than a TCP connection: 10 s.
      connectTimeoutMs: options.connectTimeoutMs ?? ZK_CONNECT_TIMEOUT_MS,
      logger: options.logger,
    }).then(async (session) => {
      session.on('session', () => this.refreshAllRetrying(1))
      await this.refreshBrokers(session)
      return session
    })
    // Surface a bad connect string on first use, not as an unhandled rejection.
    this.sessionPromise.catch(() => undefined)
  }

  /** The ZooKeeper session (membership and the ZooKeeper offset store share it). */
  session(): Promise<ZkSession> {
    return this.sessionPromise
  }

  publishPartitions(topic: string): Promise<Partition[]> {
    let cached = this.pub.get(topic)
    if (cached === undefined) {
      cached = this.watchPartitions(topic, 'pub')
      this.pub.set(topic, cached)
    }
    return cached
  }

  subscribePartitions(topic: string): Promise<Partition[]> {
    let cached = this.sub.get(topic)
    if (cached === undefined) {
      cached = this.watchPartitions(topic, 'sub')
      this.sub.set(topic, cached)
    }
    return cached
  }

  connection(brokerId: number): Promise<BrokerConnection> {
    const existing = this.connections.get(brokerId)
    if (existing !== undefined && !existing.isClosed) return Promise.resolve(existing)
    let opening = this.opening.get(brokerId)
    if (opening === undefined) {
      opening = this.open(brokerId).finally(() => this.opening.delete(brokerId))
      this.opening.set(brokerId, opening)
    }
    return opening
  }

  private async open(brokerId: number): Promise<BrokerConnection> {
    const session = await this.sessionPromise
    // A watch can fire while the topology closes: never open a connection nobody will close.
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'the cluster topology is closed')
    let url = this.brokers.get(brokerId)
    if (url === undefined) {
      await this.refreshBrokers(session)
      url = this.brokers.get(brokerId)
    }
    // --tls: the broker's TLS endpoint (ids/<id>/master_tls, or a slave's slave<k>_tls when the
    // id is read from that slave) when it registered one.
    const tlsWanted = this.options.tls !== false && (this.options.tls !== undefined || defaultTlsEnabled())
    const tlsUrl = !tlsWanted
      ? undefined
      : this.slaveBacked.has(brokerId)
        ? this.slaveTls.get(url ?? '')
        : await session.getString(this.paths.masterTls(brokerId)).catch(() => undefined)
    const address = parseBrokerUrl(tlsUrl ?? url ?? '')
    if (address === undefined) {
      throw new MetaError('CONNECTION_FAILED', `broker ${brokerId} is not registered in ZooKeeper at ${this.options.zk}${this.paths.root}`)
    }
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'the cluster topology is closed')
    const conn = new BrokerConnection({
      ...this.options,
      ...address,
      tls: address.tls === true && this.options.tls === undefined ? true : this.options.tls,
      logger: this.options.logger,
    })
    this.connections.set(brokerId, conn)
    return conn
  }

  /** A connection already open (no waiting): the producer's hot path. */
  connectionNow(brokerId: number): BrokerConnection | undefined {
    const conn = this.connections.get(brokerId)
    return conn !== undefined && !conn.isClosed ? conn : undefined
  }

  brokerIds(): number[] {
    return [...this.brokers.keys()].sort((a, b) => a - b)
  }

  /** Every registered broker and its URL. */
  async brokerUrls(): Promise<Map<number, string>> {
    await this.sessionPromise
    return new Map(this.brokers)
  }

  invalidate(topic: string): void {
    this.pub.delete(topic)
    this.sub.delete(topic)
  }

  /**
   * Beyond MetaQ: `brokerId`'s master does not answer (a consumer could not connect to it, for
   * a fetch or an offset query): read that broker id from its first slave now, instead of
   * waiting for the master's ZooKeeper session to expire. The master is probed (a TCP connect)
   * after SUSPECT_PROBE_MIN_MS, then at doubling intervals up to SUSPECT_PROBE_MAX_MS; the
   * broker id is read from the master again once a probe connects, or at once when another
   * master registers. True when `brokerId` is now read from a slave (the caller asks
   * connection() again), false when it has none. Emits 'readFrom' ({@link ReadFromEvent}) on
   * each switch.
   */
  readFromSlave(brokerId: number): boolean {
    if (this.closed) return false
    if (this.suspects.has(brokerId)) return true
    if (this.slaveBacked.has(brokerId)) return false
    const masterUrl = this.brokers.get(brokerId)
    const slaveUrl = this.slaveUrls.get(brokerId)?.[0]
    const master = masterUrl === undefined ? undefined : parseBrokerUrl(masterUrl)
    if (slaveUrl === undefined || master === undefined) return false
    this.log.warn("a broker's master does not answer: reading from its slave", {brokerId, master: masterUrl, slave: slaveUrl})
    const suspect: Suspect = {masterUrl: masterUrl!, timer: undefined, delayMs: SUSPECT_PROBE_MIN_MS}
    this.suspects.set(brokerId, suspect)
    this.probeLater(brokerId, suspect, master)
    this.brokers.set(brokerId, slaveUrl)
    this.slaveBacked.add(brokerId)
    this.connections.get(brokerId)?.close()
    this.connections.delete(brokerId)
    this.noteReadFrom(brokerId, slaveUrl, true)
    return true
  }

  /**
   * `brokerId` is read from `url` now: emit 'readFrom' when that is a change (not for the first
   * reading of the brokers). Changes are compared, not refreshes counted: a refresh that finds
   * what the last one found says nothing.
   */
  private noteReadFrom(brokerId: number, url: string, slave: boolean): void {
    const last = this.readingFrom.get(brokerId)
    this.readingFrom.set(brokerId, {url, slave})
    if (last !== undefined && (last.url !== url || last.slave !== slave)) this.emit('readFrom', {brokerId, url, slave} satisfies ReadFromEvent)
  }

  /** True while `brokerId` is read from a slave (its master unreachable, or none registered). */
  readsFromSlave(brokerId: number): boolean {
    return this.slaveBacked.has(brokerId)
  }

  /** Probe a suspected master after the suspect's delay, doubling the delay after each miss. */
  private probeLater(brokerId: number, suspect: Suspect, master: {host: string; port: number}): void {
    suspect.timer = setTimeout(() => {
      suspect.timer = undefined
      void reachable(master.host, master.port).then((ok) => {
        if (this.closed || this.suspects.get(brokerId) !== suspect) return
        if (!ok) {
          suspect.delayMs = Math.min(suspect.delayMs * 2, SUSPECT_PROBE_MAX_MS)
          this.probeLater(brokerId, suspect, master)
          return
        }
        this.log.info('the master answers again: reading from it', {brokerId, master: suspect.masterUrl})
        this.clearSuspect(brokerId)
        void this.sessionPromise.then((session) => this.rereadBrokers(session, 1))
      })
    }, suspect.delayMs)
    suspect.timer.unref()
  }

  private clearSuspect(brokerId: number): void {
    const suspect = this.suspects.get(brokerId)
    if (suspect === undefined) return
    if (suspect.timer !== undefined) clearTimeout(suspect.timer)
    this.suspects.delete(brokerId)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const id of [...this.suspects.keys()]) this.clearSuspect(id)
    for (const timer of this.retryTimers) clearTimeout(timer)
    this.retryTimers.clear()
    for (const conn of this.connections.values()) conn.close()
    this.connections.clear()
    // A session that never connected was reported to whoever used the topology.
    const session = await this.sessionPromise.catch(() => undefined)
    session?.close()
  }

  private async watchPartitions(topic: string, kind: 'pub' | 'sub'): Promise<Partition[]> {
    const session = await this.sessionPromise
    // One read sets several one-shot watches (the topic's children and each child's data):
    // the first that fires re-reads, the others are spent.
    let fired = false
    const watcher = () => {
      if (fired) return
      fired = true
      this.reread(topic, kind, 1)
    }
    return kind === 'pub'
      ? this.withUnregistered(topic, await readPublishPartitions(session, this.paths, topic, watcher))
      : readSubscribePartitions(session, this.paths, topic, watcher)
  }

  /**
   * A broker registers a topic in ZooKeeper at its first put there, so in a zero-config
   * cluster (brokers that accept any topic) a new topic would stay on the first broker that
   * got it. meta brokers that are not listed for the topic are asked (the `partitions`
   * extension) whether they accept it, and their partitions are added. MetaQ brokers are not
   * asked: for them topics-pub is the whole truth, as for MetaQ's producers.
   */
  private async withUnregistered(topic: string, listed: Partition[]): Promise<Partition[]> {
    const present = new Set(listed.map((p) => p.brokerId))
    const extra: Partition[] = []
    for (const brokerId of this.brokerIds()) {
      // A slave answers `partitions` but refuses puts.
      if (present.has(brokerId) || this.slaveBacked.has(brokerId)) continue
      try {
        const conn = await this.connection(brokerId)
        await withTimeout(conn.ready(), 1000)
        if (!conn.capabilities.meta) continue
        const frame = await conn.requestAsync((out, opaque) => encodePartitions(out, {topic, opaque}), 1000)
        if (frame.type !== 'result' || frame.code !== 200) continue // the broker does not accept the topic
        const count = Number(frame.body.toString())
        for (let partition = 0; partition < count; partition++) extra.push({brokerId, partition})
      } catch (error) {
        this.log.debug('cannot ask a broker about a topic', {brokerId, topic, error: (error as Error).message})
      }
    }
    if (extra.length === 0) return listed
    return [...listed, ...extra].sort((a, b) => a.brokerId - b.brokerId || a.partition - b.partition)
  }

  /** A watch on a topic's partitions fired: read them again (which sets the next watch), then tell listeners. */
  private reread(topic: string, kind: 'pub' | 'sub', attempt: number): void {
    if (this.closed) return
    const cache = kind === 'pub' ? this.pub : this.sub
    const next = this.watchPartitions(topic, kind)
    cache.set(topic, next)
    next.then(
      () => this.emit('change', topic),
      (error: Error) => {
        if (cache.get(topic) === next) cache.delete(topic)
        this.retryLater(attempt, 'cannot re-read partitions', {topic, kind, error: error.message}, () => this.reread(topic, kind, attempt + 1))
      },
    )
  }

  /** The brokers' watch fired: read them again, retrying until it works (it sets the next watch). */
  private rereadBrokers(session: ZkSession, attempt: number): void {
    if (this.closed) return
    this.refreshBrokers(session).catch((error: Error) =>
      this.retryLater(attempt, 'cannot re-read brokers', {error: error.message}, () => this.rereadBrokers(session, attempt + 1)),
    )
  }

  private retryLater(attempt: number, what: string, context: Record<string, unknown>, again: () => void): void {
    if (this.closed) return
    const delayMs = Math.min(200 * 2 ** (attempt - 1), 10_000)
    this.log.warn(`${what}; retrying`, {...context, attempt, retryInMs: delayMs})
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer)
      again()
    }, delayMs)
    timer.unref()
    this.retryTimers.add(timer)
  }

  private async refreshBrokers(session: ZkSession): Promise<void> {
    // Fires once per read: a read sets watches on every broker's nodes.
    let fired = false
    const readable = await readReadableBrokers(session, this.paths, () => {
      if (fired) return
      fired = true
      this.rereadBrokers(session, 1)
    })
    this.slaveUrls = new Map([...readable].map(([id, b]) => [id, b.slaveUrls]))
    this.slaveTls = new Map([...readable.values()].flatMap((b) => [...b.slaveTls]))
    for (const [id, suspect] of this.suspects) {
      const now = readable.get(id)
      // The master a consumer gave up on is still registered (its session lives on): keep
      // reading the slave. Another master, or none, ends the suspicion.
      if (now !== undefined && !now.slave && now.url === suspect.masterUrl && now.slaveUrls.length > 0) {
        readable.set(id, {...now, url: now.slaveUrls[0], slave: true})
      } else {
        this.clearSuspect(id)
      }
    }
    const brokers = new Map([...readable].map(([id, b]) => [id, b.url]))
    this.slaveBacked = new Set([...readable].filter(([, b]) => b.slave).map(([id]) => id))
    const before = this.brokers
    this.brokers = brokers
    for (const [id, conn] of this.connections) {
      const url = brokers.get(id)
      if (url === before.get(id) || (url !== undefined && before.get(id) === undefined)) continue
      // The broker left (or moved): close our connection; a later use reconnects to the new URL.
      this.log.info('broker left the cluster', {brokerId: id})
      conn.close()
      this.connections.delete(id)
    }
    for (const [id, url] of brokers) this.noteReadFrom(id, url, this.slaveBacked.has(id))
    if ([...brokers.keys()].join() !== [...before.keys()].join()) this.emit('brokers', this.brokerIds())
  }

  /** A new session: every watch is gone; read everything again (retrying until it works). */
  private refreshAllRetrying(attempt: number): void {
    if (this.closed) return
    this.refreshAll().catch((error: Error) =>
      this.retryLater(attempt, 'cannot read the cluster under a new session', {error: error.message}, () => this.refreshAllRetrying(attempt + 1)),
    )
  }

  private async refreshAll(): Promise<void> {
    const session = await this.sessionPromise
    await this.refreshBrokers(session)
    for (const topic of new Set([...this.pub.keys(), ...this.sub.keys()])) {
      this.invalidate(topic)
      this.emit('change', topic)
    }
  }
}

/** First probe of a suspected master (readFromSlave), in ms after the switch to its slave. */
const SUSPECT_PROBE_MIN_MS = 500
/** Longest interval between two probes of a suspected master, in ms (the back-off stops doubling here). */
const SUSPECT_PROBE_MAX_MS = 4000

/** A master a consumer could not reach: read from a slave until a probe reaches it. */
interface Suspect {
  masterUrl: string
  timer: NodeJS.Timeout | undefined
  /** Wait before the next probe. */
  delayMs: number
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new MetaError('TIMEOUT', `no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
