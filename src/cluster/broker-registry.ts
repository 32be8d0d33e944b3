/**
 * A broker's registration in ZooKeeper, exactly as a MetaQ 1.4 master writes it
 * (docs/protocol.md#zookeeper), so MetaQ's Java, Python, Ruby, PHP, Node and .NET clients find it:
 *
 *   1. `ids/<id>` (persistent, URL for pre-1.4 clients) and `ids/<id>/master` (ephemeral, URL);
 *      a `master` with another URL whose broker answers means another broker has this id:
 *      refuse; one whose broker does not answer is a crashed predecessor: wait for its session
 *      to expire; with the same URL it is this broker's own node from before a crash: replace it;
 *   2. `ids/<id>/master_config_checksum` (ephemeral);
 *   3. per topic: legacy `topics/<t>/<id>-m` = numPartitions, and the JSON nodes
 *      `topics-pub/<t>/<id>-m` (if acceptPublish and the broker is publishable) and
 *      `topics-sub/<t>/<id>-m` (if acceptSubscribe).
 *
 * After a session expiry everything is registered again (retried with back-off until it
 * succeeds: a broker missing from ZooKeeper is invisible to clients). `setPublishable(false)` takes the
 * broker out of `topics-pub` (e.g. its disk is full) so producers stop choosing it, and
 * `true` puts it back. `unregister()` removes every node on a clean stop.
 */
import {MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import {CreateMode, type ZkSession} from './zk-session.js'
import {connect} from 'node:net'
import {encodeTopicBroker, parseBrokerUrl, type ZkPaths} from './paths.js'

export interface RegisteredTopic {
  topic: string
  numPartitions: number
  acceptPublish: boolean
  acceptSubscribe: boolean
}

interface BrokerRegistryOptions {
  session: ZkSession
  paths: ZkPaths
  brokerId: number
  /** `meta://host:port` */
  url: string
  configChecksum: number
  /** The ZooKeeper session timeout: how long a crashed broker's nodes may linger. */
  sessionTimeoutMs: number
  log: Logger
  /**
   * After a new session (the old one expired), another live broker holds `ids/<id>/master`
   * (a slave that failed over meanwhile): called once with its URL; registering stops.
   */
  onIdTaken?: (other: string) => void
}

/** True if something accepts TCP connections at host:port within a second. */
export function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({host, port})
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

export class BrokerRegistry {
  private readonly topics = new Map<string, RegisteredTopic>()
  /** Topics whose nodes this session has written (a failed write is not one). */
  private readonly written = new Set<string>()
  private publishable = true
  private registered = false
  private queue: Promise<void> = Promise.resolve()
  private retryTimer: NodeJS.Timeout | undefined
  /** Set when a live broker with another URL holds the master node (see waitForDeadRegistration). */
  private takenBy: string | undefined

  constructor(private readonly options: BrokerRegistryOptions) {
    options.session.on('session', () => this.registerAgain(1))
  }

  /** A new session: write everything again, retrying with back-off until it succeeds. */
  private registerAgain(attempt: number): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    this.retryTimer = undefined
    if (!this.registered) return
    this.serial(() => this.registerAll(true)).catch((error: Error) => {
      if (!this.registered) return
      if (this.takenBy !== undefined && this.options.onIdTaken !== undefined) {
        this.registered = false
        this.options.log.error('another broker holds this broker id in ZooKeeper now (a failover while this session was gone): not registering again', {
          brokerId: this.options.brokerId,
          other: this.takenBy,
        })
        this.options.onIdTaken(this.takenBy)
        return
      }
      const delayMs = Math.min(500 * 2 ** (attempt - 1), 30_000)
      this.options.log.warn('cannot register in ZooKeeper again after a new session; retrying', {
        brokerId: this.options.brokerId,
        attempt,
        retryInMs: delayMs,
        error: error.message,
      })
      this.retryTimer = setTimeout(() => this.registerAgain(attempt + 1), delayMs)
      this.retryTimer.unref()
    })
  }

  /** Register the broker and the given topics; throws CLUSTER_ERROR if the id is taken. */
  async register(topics: RegisteredTopic[]): Promise<void> {
    for (const t of topics) this.topics.set(t.topic, t)
    await this.serial(() => this.registerAll(false))
    this.registered = true
  }

  /** Register one more topic (its first put), or update it; again after a failed attempt. */
  registerTopic(topic: RegisteredTopic): Promise<void> {
    if (this.takenBy !== undefined) return Promise.resolve() // the nodes are another broker's now
    const known = this.topics.get(topic.topic)
    if (known && JSON.stringify(known) === JSON.stringify(topic) && this.written.has(topic.topic)) return Promise.resolve()
    this.topics.set(topic.topic, topic)
    this.written.delete(topic.topic)
    return this.serial(() => this.writeTopic(topic))
  }

  /** Remove a topic's nodes (a reload made the broker stop accepting it). */
  unregisterTopic(topic: string): Promise<void> {
    if (this.takenBy !== undefined) return Promise.resolve() // the nodes are another broker's now
    if (!this.topics.delete(topic)) return Promise.resolve()
    const {session, paths, brokerId} = this.options
    return this.serial(async () => {
      await session.remove(paths.topicBroker(topic, brokerId))
      await session.remove(paths.topicPubBroker(topic, brokerId))
      await session.remove(paths.topicSubBroker(topic, brokerId))
    })
  }

  /** Topics registered now. */
  registeredTopics(): string[] {
    return [...this.topics.keys()].sort()
  }

  /** Publish a new config checksum (`master_config_checksum`, after a reload). */
  setConfigChecksum(checksum: number): Promise<void> {
    if (this.takenBy !== undefined) return Promise.resolve() // the nodes are another broker's now
    this.options.configChecksum = checksum
    const {session, paths, brokerId} = this.options
    return this.serial(() => session.put(paths.configChecksum(brokerId), String(checksum), CreateMode.EPHEMERAL))
  }

  /** Take the broker out of (false) or back into (true) topics-pub. */
  setPublishable(publishable: boolean): Promise<void> {
    if (this.takenBy !== undefined) return Promise.resolve() // the nodes are another broker's now
    if (publishable === this.publishable) return Promise.resolve()
    this.publishable = publishable
    this.options.log.warn(publishable ? 'accepting puts again: back in topics-pub' : 'puts failing: leaving topics-pub', {
      brokerId: this.options.brokerId,
    })
    return this.serial(async () => {
      for (const t of this.topics.values()) await this.writePub(t)
    })
  }

  get isPublishable(): boolean {
    return this.publishable
  }

  /** Remove every node this broker wrote. */
  async unregister(): Promise<void> {
    this.registered = false
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    if (this.takenBy !== undefined) return // the nodes are another broker's now: leave them
    await this.serial(async () => {
      const {session, paths, brokerId} = this.options
      for (const t of this.topics.keys()) {
        await session.remove(paths.topicBroker(t, brokerId))
        await session.remove(paths.topicPubBroker(t, brokerId))
        await session.remove(paths.topicSubBroker(t, brokerId))
      }
      await session.remove(paths.configChecksum(brokerId))
      await session.remove(paths.master(brokerId))
      // As MetaQ does: with slaves registered under it, `ids/<id>` stays, with empty data.
      if ((await session.children(paths.broker(brokerId))).length > 0) await session.put(paths.broker(brokerId), '')
      else await session.remove(paths.broker(brokerId))
    })
  }

  /** Run ZooKeeper writes one at a time, in order. */
  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work)
    this.queue = next.catch(() => {
      // The caller of this work gets its error through `next` (and logs or retries it);
      // the queue moves on to the next piece of work.
    })
    return next
  }

  private async registerAll(again: boolean): Promise<void> {
    const {session, paths, brokerId, url, configChecksum, log} = this.options
    const master = paths.master(brokerId)
    if (!(await session.create(master, url, CreateMode.EPHEMERAL))) {
      const stat = await session.exists(master)
      const owner = stat?.ephemeralOwner.toString('hex')
      if (owner !== undefined && owner !== session.sessionId) {
        const other = await session.getString(master)
        if (other !== undefined && other !== url) await this.waitForDeadRegistration(master, other)
        // Our own node from before a crash (same URL) or a dead broker's whose session has
        // just expired: take it over, or it would vanish when that old session ends.
        log.info('replacing the registration of a previous run', {brokerId, url})
        const current = await session.exists(master)
        const replaced =
          current === undefined
            ? await session.create(master, url, CreateMode.EPHEMERAL)
            : await session.replace(master, url, CreateMode.EPHEMERAL, current.version)
        if (!replaced) throw new MetaError('CLUSTER_ERROR', `cannot register ${master}`)
      }
    }
    await session.put(paths.broker(brokerId), url)
    await session.put(paths.configChecksum(brokerId), String(configChecksum), CreateMode.EPHEMERAL)
    this.written.clear()
    for (const t of this.topics.values()) await this.writeTopic(t)
    this.takenBy = undefined
    log.info(again ? 're-registered in ZooKeeper after a new session' : 'registered in ZooKeeper', {
      brokerId,
      url,
      topics: this.topics.size,
    })
  }

  /**
   * Another URL holds this broker id. If that broker answers, it is alive: refuse. If it does
   * not (it crashed and this is its replacement on another port), wait for its ZooKeeper
   * session to expire, which frees the node, for at most the session timeout.
   */
  private async waitForDeadRegistration(master: string, other: string): Promise<void> {
    const {session, brokerId, log} = this.options
    const refuse = (why: string) =>
      new MetaError(
        'CLUSTER_ERROR',
        `broker id ${brokerId} is already registered in ZooKeeper by ${other} (${master})${why}; give this broker another brokerId`,
      )
    const address = parseBrokerUrl(other)
    if (address === undefined || (await reachable(address.host, address.port))) {
      this.takenBy = other
      throw refuse('')
    }
    const deadline = Date.now() + this.options.sessionTimeoutMs + 5_000
    log.warn('broker id held by an unreachable broker; waiting for its ZooKeeper session to expire', {brokerId, other})
    while ((await session.getString(master)) === other) {
      if (Date.now() > deadline) throw refuse(', and its session did not expire')
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }

  private async writeTopic(t: RegisteredTopic): Promise<void> {
    const {session, paths, brokerId} = this.options
    await session.put(paths.topicBroker(t.topic, brokerId), String(t.numPartitions), CreateMode.EPHEMERAL)
    await this.writePub(t)
    if (t.acceptSubscribe) {
      await session.put(paths.topicSubBroker(t.topic, brokerId), encodeTopicBroker(t.numPartitions, brokerId), CreateMode.EPHEMERAL)
    } else {
      await session.remove(paths.topicSubBroker(t.topic, brokerId))
    }
    this.written.add(t.topic)
  }

  private async writePub(t: RegisteredTopic): Promise<void> {
    const {session, paths, brokerId} = this.options
    if (t.acceptPublish && this.publishable) {
      await session.put(paths.topicPubBroker(t.topic, brokerId), encodeTopicBroker(t.numPartitions, brokerId), CreateMode.EPHEMERAL)
    } else {
      await session.remove(paths.topicPubBroker(t.topic, brokerId))
    }
  }
}
