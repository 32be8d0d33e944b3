/**
 * Which topics and partitions this broker serves: resolved topic settings (cached, as the put path
 * asks for every message), partition choice for `-1`, and closed partitions
 * (docs/protocol.md#broker-administration: close-partitions makes put and get answer 403). Beyond
 * MetaQ, which forgets them at a restart, closed partitions are kept in
 * `<dataPath>/__meta_state/closed-partitions.json`. Creating a partition is bounded: {@link
 * TopicRegistry.creationRefusal} applies `autoCreateTopics` and `maxPartitions` before a put
 * (plain, batch or transactional) creates one.
 */
import {isValidTopicName} from '../protocol/names.js'
import {MetaError, Status} from '../protocol/errors.js'
import {loadClosedPartitions, saveClosedPartitions, type ClosedPartitionMap} from '../storage/index.js'
import {resolveTopic, type BrokerConfig, type ResolvedTopic} from './config/index.js'

/** What {@link TopicRegistry.creationRefusal} needs of the store. */
interface PartitionCounter {
  readonly partitionCount: number
  get(topic: string, partition: number): unknown
  topics(): string[]
}

/** Beyond this many partitions a topic's existence is looked up in the store's topic list instead of partition by partition. */
const EXISTENCE_PROBE_PARTITIONS = 4096

export class TopicRegistry {
  private cache = new Map<string, ResolvedTopic | null>()
  /** The name resolved last and its resolution: a hit is a pointer comparison (PartitionLogs#get says why). */
  private lastName: string | undefined = undefined
  private lastResolved: ResolvedTopic | null = null
  private closed: ClosedPartitionMap = new Map()
  /** Where closed partitions are kept; undefined = in memory only. */
  private stateDir: string | undefined
  private saving: Promise<void> = Promise.resolve()
  /** Topics being deleted (topic-delete.ts): no put creates a partition of them meanwhile. */
  private readonly deleting = new Set<string>()

  constructor(private config: BrokerConfig) {}

  /** From now until endDelete(), creationRefusal() refuses every partition of `topic`. */
  beginDelete(topic: string): void {
    this.deleting.add(topic)
  }

  endDelete(topic: string): void {
    this.deleting.delete(topic)
  }

  /** Load the closed partitions kept in `dataPath` and keep them there from now on. */
  loadClosed(dataPath: string): void {
    this.stateDir = dataPath
    this.closed = loadClosedPartitions(dataPath)
  }

  /** Replace the config (reload); cached resolutions are dropped. */
  setConfig(config: BrokerConfig): void {
    this.config = config
    this.cache.clear()
    this.lastName = undefined
  }

  /** The topic's settings, or undefined when this broker does not accept it. */
  resolve(topic: string): ResolvedTopic | undefined {
    if (topic === this.lastName) {
      this.lastName = topic // PartitionLogs#get says why
      return this.lastResolved ?? undefined
    }
    let resolved = this.cache.get(topic)
    if (resolved === undefined) {
      resolved = isValidTopicName(topic) ? (resolveTopic(this.config, topic) ?? null) : null
      // Bound the cache: names come from clients, and unaccepted ones are cheap to recompute.
      if (this.cache.size > 100_000) this.cache.clear()
      this.cache.set(topic, resolved)
    }
    this.lastName = topic
    this.lastResolved = resolved
    return resolved ?? undefined
  }

  /**
   * Why a put may not create partition `partition` of the accepted topic `topic` (undefined:
   * it may): TOPIC_NOT_ACCEPTED when `autoCreateTopics` is false and the topic is neither
   * named exactly in a [topic=…] section nor has a partition here; PARTITION_LIMIT when the
   * broker already serves `maxPartitions`. Called only when the partition does not exist.
   */
  creationRefusal(topic: ResolvedTopic, partition: number, store: PartitionCounter): MetaError | undefined {
    const {autoCreateTopics, maxPartitions} = this.config.system
    const name = topic.topic
    if (this.deleting.size > 0 && this.deleting.has(name)) {
      return new MetaError(
        'SERVICE_UNAVAILABLE',
        `cannot create partition ${partition} of topic "${name}": the topic is being deleted; try again once the delete is done`,
      )
    }
    if (!autoCreateTopics && !this.config.topics.some((t) => t.pattern === name) && !topicExists(store, topic)) {
      return new MetaError(
        'TOPIC_NOT_ACCEPTED',
        `The server do not accept topic ${name}: it has no partition on this broker and autoCreateTopics=false (name it in a [topic=${name}] section)`,
      )
    }
    if (store.partitionCount >= maxPartitions) {
      return new MetaError(
        'PARTITION_LIMIT',
        `cannot create partition ${partition} of topic "${name}": this broker serves ${store.partitionCount} partitions, its limit (maxPartitions=${maxPartitions})`,
      )
    }
    return undefined
  }

  /**
   * Why `meta topic create|alter` may not give `topic` `numPartitions` partitions (undefined:
   * it may). Against the broker's partition limit (`maxPartitions`) count every partition it
   * would then serve: those with files (`withFiles`) and every partition of each topic named
   * in the configuration (server.ini and the topic overlay), files or not, so that topics
   * created online hold their partitions before their first put. A change that adds no
   * partition is never refused.
   */
  onlineCreationRefusal(topic: string, numPartitions: number, withFiles: ReadonlyArray<{topic: string; partition: number}>): MetaError | undefined {
    const limit = this.config.system.maxPartitions
    const served = new Set<string>()
    const add = (name: string, partition: number) => served.add(`${name}\u0000${partition}`)
    for (const log of withFiles) add(log.topic, log.partition)
    for (const name of this.configuredTopics()) {
      const count = this.resolve(name)?.numPartitions ?? 0
      for (let p = 0; p < count; p++) add(name, p)
    }
    const before = served.size
    for (let p = 0; p < numPartitions; p++) add(topic, p)
    if (served.size === before || served.size <= limit) return undefined
    return new MetaError(
      'PARTITION_LIMIT',
      `cannot give topic "${topic}" ${numPartitions} partition${numPartitions === 1 ? '' : 's'}: this broker would serve ${served.size} partitions (with files or configured), past its limit of ${limit} (maxPartitions)`,
    )
  }

  /** A random partition in [0, numPartitions), MetaQ's choice for partition -1. */
  randomPartition(topic: ResolvedTopic): number {
    return Math.floor(Math.random() * topic.numPartitions)
  }

  isClosed(topic: string, partition: number): boolean {
    return this.closed.size > 0 && this.closed.get(topic)?.has(partition) === true
  }

  /** The closed partitions of a topic, ascending. */
  closedPartitions(topic: string): number[] {
    return [...(this.closed.get(topic) ?? [])].sort((a, b) => a - b)
  }

  /** Every topic with a closed partition. */
  topicsWithClosedPartitions(): string[] {
    return [...this.closed.keys()].sort()
  }

  /**
   * Close partitions [start, end] of a topic (default: all of its partitions): put and get
   * answer 403 until reopened. Takes effect at once; resolves once it is saved. Returns the
   * partitions that were open before. Throws INVALID_ARGUMENT for a topic this broker does not
   * accept or a range outside its partitions.
   */
  close(topic: string, start?: number, end?: number): Promise<number[]> {
    const [from, to] = this.range(topic, start, end, 'close')
    const set = this.closed.get(topic) ?? new Set<number>()
    const changed: number[] = []
    for (let p = from; p <= to; p++) {
      if (!set.has(p)) changed.push(p)
      set.add(p)
    }
    this.closed.set(topic, set)
    return this.persist(topic, changed, () => {
      for (const p of changed) set.delete(p)
      if (set.size === 0) this.closed.delete(topic)
    })
  }

  /** Reopen partitions [start, end] of a topic (default: every closed one). Returns those that were closed. */
  open(topic: string, start?: number, end?: number): Promise<number[]> {
    const set = this.closed.get(topic)
    if (set === undefined) return Promise.resolve([])
    const from = start ?? 0
    const to = end ?? Number.MAX_SAFE_INTEGER
    const changed = [...set].filter((p) => p >= from && p <= to).sort((a, b) => a - b)
    for (const p of changed) set.delete(p)
    if (set.size === 0) this.closed.delete(topic)
    return this.persist(topic, changed, () => {
      const again = this.closed.get(topic) ?? new Set<number>()
      for (const p of changed) again.add(p)
      this.closed.set(topic, again)
    })
  }

  /** Configured topic patterns without wildcards (registered and listed even before data). */
  configuredTopics(): string[] {
    return this.config.topics.map((t) => t.pattern).filter((p) => !p.includes('*'))
  }

  private range(topic: string, start: number | undefined, end: number | undefined, what: string): [number, number] {
    const resolved = this.resolve(topic)
    if (resolved === undefined) {
      // A code of its own (answered 400): in a cluster `meta partitions close|open` skips brokers without the topic.
      throw new MetaError('TOPIC_NOT_ACCEPTED', `cannot ${what} partitions of topic "${topic}": this broker does not accept it`, {status: Status.BAD_REQUEST})
    }
    const last = resolved.numPartitions - 1
    const from = start ?? 0
    const to = end ?? last
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from || to > last) {
      throw MetaError.invalidArgument(`invalid partition range ${from}..${to} for topic "${topic}": expected a range within 0..${last}`)
    }
    return [from, to]
  }

  /** Save the closed set after a change; on failure undo the change and reject. */
  private persist(topic: string, changed: number[], undo: () => void): Promise<number[]> {
    if (this.stateDir === undefined || changed.length === 0) return Promise.resolve(changed)
    const dir = this.stateDir
    const next = this.saving.then(() => saveClosedPartitions(dir, this.closed))
    this.saving = next.catch(() => undefined)
    return next.then(
      () => changed,
      (error: Error) => {
        undo()
        throw new MetaError('STORAGE_ERROR', `partitions of "${topic}" unchanged: ${error.message}`, {cause: error})
      },
    )
  }
}

/** Whether `topic` has at least one partition in the store. */
function topicExists(store: PartitionCounter, topic: ResolvedTopic): boolean {
  if (topic.numPartitions > EXISTENCE_PROBE_PARTITIONS) return store.topics().includes(topic.topic)
  for (let p = 0; p < topic.numPartitions; p++) if (store.get(topic.topic, p) !== undefined) return true
  return false
}
