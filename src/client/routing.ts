/**
 * The producer's routing: which partition, on which broker, a message goes to.
 *
 * Per topic it looks the partitions up once (through the topology) and connects to their
 * brokers; messages sent meanwhile wait in order and are handed back when the lookup ends.
 * A message pinned to a partition goes there; any other is placed by the selector among the
 * partitions that are {@link Router.available}: not on a broker that failed at the connection
 * level in the last {@link BROKER_DOWN_MS}, nor answered "closed" (MetaQ's 403) in that time,
 * nor, for a message that may move, answered DISK_FULL or SERVICE_UNAVAILABLE (a failing
 * partition). A failing partition is avoided for a back-off ({@link FAILING_BACKOFF_MIN_MS},
 * doubling per failed probe up to {@link FAILING_BACKOFF_MAX_MS}); then one message is let
 * through as a probe, and the first success clears it. Messages that must not move (pinned to
 * a partition, hash-keyed, or placed by a selector of the application's own, which may be
 * keyed) still go to a failing partition and fail there. When every partition is
 * avoided, all are tried.
 */
import {MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import type {BrokerConnection} from './connection.js'
import type {PartitionSelector, SelectorName} from './partition-selector.js'
import type {Topology} from './topology.js'
import type {OutgoingMessage, Partition} from './types.js'

/** How long a broker that failed a send at the connection level is avoided by the selector (ms). */
const BROKER_DOWN_MS = 3_000
/** How long a partition that answered DISK_FULL or SERVICE_UNAVAILABLE is first avoided (ms). */
export const FAILING_BACKOFF_MIN_MS = 1_000
/** The longest it is avoided between probes; the back-off doubles per failed probe up to this (ms). */
export const FAILING_BACKOFF_MAX_MS = 30_000

/** A partition that refused writes for want of space or service. */
interface Failing {
  /** Avoided until then (ms since the epoch). */
  until: number
  backoffMs: number
  /** A probe message is on its way to it. */
  probing: boolean
}

/**
 * Which messages the selector may place away from a failing partition: the built-in
 * round-robin and random selectors' (any), the hash selector's without a key; never those of a
 * selector function of the application's own (it may keep per-key order).
 */
export function movableMessages(selector: SelectorName | PartitionSelector | undefined): (message: OutgoingMessage) => boolean {
  if (typeof selector === 'function') return () => false
  if (selector === 'hash') return (message) => message.attribute === undefined
  return () => true
}

/** What routing needs of a message. */
interface Routable {
  message: OutgoingMessage
  /** The partition the sender named, or undefined for the selector's choice. */
  pinned: number | undefined
}

interface TopicState<T> {
  partitions: Partition[] | undefined
  waiting: T[]
  lookup: Promise<void> | undefined
}

interface RouterHost<T> {
  topology: Topology
  selector: PartitionSelector
  log: Logger
  /** A message that waited for its topic's lookup: route it with these partitions. */
  ready(task: T, partitions: Partition[]): void
  /** The lookup of a waiting message's topic failed. */
  failed(task: T, error: MetaError): void
  /** Whether a message the selector places may avoid a failing partition (see movableMessages). */
  movable(message: OutgoingMessage): boolean
}

export class Router<T extends Routable> {
  private readonly topics = new Map<string, TopicState<T>>()
  private readonly connections = new Map<number, BrokerConnection>()
  /** Brokers that failed at the connection level recently: id → until (ms). */
  private readonly downUntil = new Map<number, number>()
  /** Partitions that answered 403 (closed) recently: `topic\0brokerId-partition` → until (ms). */
  private readonly closedUntil = new Map<string, number>()
  /** Partitions that answered DISK_FULL or SERVICE_UNAVAILABLE, until a put succeeds: key as closedUntil. */
  private readonly failing = new Map<string, Failing>()

  constructor(private readonly host: RouterHost<T>) {
    // The cluster changed (a broker came or went): look the topic's partitions up again.
    host.topology.on('change', (topic: string) => this.forget(topic))
  }

  /**
   * The topic's partitions when known; else undefined, and the task waits for the lookup
   * (handed to `ready` or `failed` when it ends, in send order).
   */
  partitions(task: T): Partition[] | undefined {
    const topic = task.message.topic
    let state = this.topics.get(topic)
    if (state === undefined) {
      state = {partitions: undefined, waiting: [], lookup: undefined}
      this.topics.set(topic, state)
    }
    if (state.partitions !== undefined) return state.partitions
    state.waiting.push(task)
    state.lookup ??= this.lookup(topic, state)
    return undefined
  }

  /** Where the task goes among `partitions`, or the INVALID_ARGUMENT of a pinned partition out of range. */
  target(task: T, partitions: Partition[]): Partition | MetaError {
    const topic = task.message.topic
    if (task.pinned !== undefined) {
      if (partitions.length === 0) return {brokerId: this.firstBrokerId(), partition: task.pinned}
      // Partition numbers count the topic's partitions in MetaQ's order (broker id, then
      // partition): in standalone mode that is the partition itself.
      if (task.pinned < partitions.length) return partitions[task.pinned]
      return MetaError.invalidArgument(`invalid partition "${task.pinned}" for topic "${topic}": expected 0..${partitions.length - 1}`)
    }
    if (partitions.length === 0) return {brokerId: this.firstBrokerId(), partition: -1}
    if (this.failing.size === 0) return this.host.selector(topic, this.available(topic, partitions), task.message)
    const chosen = this.host.selector(topic, this.available(topic, partitions, this.host.movable(task.message)), task.message)
    // A failing partition chosen after its back-off: this message is the probe; the others keep away until it answers.
    const failing = this.failing.get(partitionKey(topic, chosen.brokerId, chosen.partition))
    if (failing !== undefined && failing.until <= Date.now()) {
      failing.probing = true
      failing.until = Date.now() + failing.backoffMs
    }
    return chosen
  }

  /** The open connection to a broker, if any. */
  connection(brokerId: number): BrokerConnection | undefined {
    const conn = this.connections.get(brokerId)
    return conn === undefined || conn.isClosed ? undefined : conn
  }

  /** The smallest message limit the connected brokers announced, if any did. */
  maxMessageBytes(): number | undefined {
    let limit: number | undefined
    for (const conn of this.connections.values()) {
      const max = conn.capabilities.maxMessageBytes
      if (max !== undefined) limit = limit === undefined ? max : Math.min(limit, max)
    }
    return limit
  }

  /** The topic's partitions are stale: look them up again at its next message. */
  forget(topic: string): void {
    const state = this.topics.get(topic)
    if (state !== undefined && state.lookup === undefined) state.partitions = undefined
  }

  /** Avoid the broker for BROKER_DOWN_MS (it failed at the connection level). */
  markDown(brokerId: number): void {
    this.downUntil.set(brokerId, Date.now() + BROKER_DOWN_MS)
  }

  /** Avoid the partition for BROKER_DOWN_MS (it answered "closed"). */
  markClosed(topic: string, brokerId: number, partition: number): void {
    this.closedUntil.set(partitionKey(topic, brokerId, partition), Date.now() + BROKER_DOWN_MS)
  }

  /**
   * The partition answered DISK_FULL or SERVICE_UNAVAILABLE: avoid it for its back-off, which
   * doubles (up to FAILING_BACKOFF_MAX_MS) when it fails again after the back-off. Replies to
   * puts sent before it was avoided do not lengthen the back-off.
   */
  markFailing(topic: string, brokerId: number, partition: number, error: MetaError): void {
    const key = partitionKey(topic, brokerId, partition)
    const now = Date.now()
    const known = this.failing.get(key)
    if (known === undefined) {
      this.failing.set(key, {until: now + FAILING_BACKOFF_MIN_MS, backoffMs: FAILING_BACKOFF_MIN_MS, probing: false})
      this.host.log.warn('partition refuses writes; sending to the others while it recovers', {
        topic,
        brokerId,
        partition,
        retryInMs: FAILING_BACKOFF_MIN_MS,
        error: error.message,
      })
      return
    }
    if (!known.probing && known.until > now) return
    known.probing = false
    known.backoffMs = Math.min(known.backoffMs * 2, FAILING_BACKOFF_MAX_MS)
    known.until = now + known.backoffMs
  }

  /** A put to the partition succeeded: it is no longer failing. */
  succeeded(topic: string, brokerId: number, partition: number): void {
    if (this.failing.size === 0) return
    if (this.failing.delete(partitionKey(topic, brokerId, partition))) {
      this.host.log.info('partition accepts writes again', {topic, brokerId, partition})
    }
  }

  /**
   * Partitions whose broker has not failed recently and that did not answer "closed" lately,
   * nor, when `skipFailing`, are failing within their back-off (all of them if none is left).
   */
  available(topic: string, partitions: Partition[], skipFailing = false): Partition[] {
    const failing = skipFailing && this.failing.size > 0
    if (this.downUntil.size === 0 && this.closedUntil.size === 0 && !failing) return partitions
    const now = Date.now()
    for (const [id, until] of this.downUntil) if (until <= now) this.downUntil.delete(id)
    for (const [key, until] of this.closedUntil) if (until <= now) this.closedUntil.delete(key)
    const up = partitions.filter((p) => {
      if (this.downUntil.has(p.brokerId)) return false
      if (this.closedUntil.size === 0 && !failing) return true
      const key = partitionKey(topic, p.brokerId, p.partition)
      if (this.closedUntil.has(key)) return false
      return !failing || !((this.failing.get(key)?.until ?? 0) > now)
    })
    return up.length > 0 ? up : partitions
  }

  private async lookup(topic: string, state: TopicState<T>): Promise<void> {
    const {topology, log} = this.host
    try {
      const partitions = await topology.publishPartitions(topic)
      const brokerIds = partitions.length > 0 ? new Set(partitions.map((p) => p.brokerId)) : new Set(topology.brokerIds())
      for (const id of brokerIds) {
        const known = this.connections.get(id)
        if (known !== undefined && !known.isClosed) continue
        try {
          this.connections.set(id, await topology.connection(id))
        } catch (error) {
          // One unreachable broker must not stop sends to the others.
          log.warn('no connection to broker; avoiding it for a while', {topic, brokerId: id, avoidMs: BROKER_DOWN_MS, error: (error as Error).message})
          this.markDown(id)
        }
      }
      state.partitions = partitions
    } catch (error) {
      state.lookup = undefined
      const err = error instanceof MetaError ? error : new MetaError('INTERNAL', String(error))
      const waiting = state.waiting
      state.waiting = []
      for (const task of waiting) this.host.failed(task, err)
      return
    }
    state.lookup = undefined
    const waiting = state.waiting
    state.waiting = []
    for (const task of waiting) this.host.ready(task, state.partitions)
  }

  private firstBrokerId(): number {
    const [first] = this.connections.keys()
    return first ?? 0
  }
}

/** A partition's key in the closed and failing maps. */
function partitionKey(topic: string, brokerId: number, partition: number): string {
  return `${topic}\0${brokerId}-${partition}`
}
