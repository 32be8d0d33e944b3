/**
 * Consumers: read topics from brokers, one fetch loop per partition, delivering batches in a
 * bounded queue.
 *
 *   const consumer = createConsumer({broker: '127.0.0.1:8123', topics: ['orders'], from: 'earliest'})
 *   for await (const message of consumer) { … }            // one message at a time
 *   for await (const batch of consumer.batches()) { … }     // one fetch at a time (fastest)
 *   await consumer.run({eachMessage: async (m) => { … }})   // callback API; resolves on stop()
 *
 * `Consumer` reads the partitions you name (or all of them) from a position you choose;
 * `GroupConsumer` (group-consumer.ts) shares a topic's partitions among the members of a
 * group and commits offsets. Both build on `ConsumerBase`, which tracks what the application
 * has *processed*: a message counts as processed when the loop body that received it has
 * finished (the next iteration starts) or its handler has returned. Only processed positions
 * are reported by `positions()` and committed (at-least-once).
 *
 * With a meta broker every partition keeps one long-poll get parked, so an idle consumer
 * costs nothing and a new message arrives within milliseconds; with a MetaQ broker it polls
 * with back-off.
 *
 * Failover (cluster mode, beyond MetaQ): when a broker id's master does not accept connections
 * and a slave of it is registered, its partitions are read from the slave at once: fetches and
 * the offset queries made at start (start positions, end offsets). The topology probes the
 * master and switches back when it answers or another master registers; each switch is
 * emitted as 'readFrom' (ReadFromEvent in types.ts).
 *
 * Errors: what retrying can fix (a timeout, a lost connection, a storage error the broker
 * reports as retriable) is retried with back-off and reported as a 'fetchError' event
 * ({@link FetchErrorEvent}). Anything else (a topic the broker does not accept, a partition
 * the topic does not have, a corrupt record, an unknown error code) stops the consumer: the
 * iterators throw it, run() rejects with it, and it is emitted as 'error' when a listener is
 * registered.
 */
import {EventEmitter} from 'node:events'
import {encodeOffset} from '../protocol/commands/offset.js'
import {isMetaError, MetaError} from '../protocol/errors.js'
import {validateTopicName} from '../protocol/names.js'
import {parseFilter} from '../protocol/filter-expression.js'
import {silentLogger, type Logger} from '../log.js'
import type {BrokerConnection} from './connection.js'
import {resultText} from './connection-errors.js'
import type {FetchedBatch, MessageBatch} from './fetched-batch.js'
import {PartitionFetcher, type FetchSettings, type FetchSink} from './fetcher.js'
import {QueuedIterator} from './queued-iterator.js'
import {createTopology, type Topology} from './topology.js'
import type {OwnedPartition} from './membership.js'
import {partitionName, type Message, type Partition, type ReadFromEvent} from './types.js'

export type {MessageBatch} from './fetched-batch.js'

/** Where a partition starts: the first message, the end (only new messages), or a byte offset. */
export type StartPosition = 'earliest' | 'latest' | number

/**
 * A start position per partition; `conn` reaches the partition's broker (for seeks by time or
 * by message count).
 */
export type StartResolver = (topic: string, partition: Partition, conn: BrokerConnection) => StartPosition | Promise<StartPosition>

/** Long.MAX_VALUE on the wire: the broker answers 301 with the end of the log. */
export const TAIL_OFFSET = Number.MAX_SAFE_INTEGER

/** Options every consumer takes. */
export interface ConsumerBaseOptions {
  /** `host:port` of a standalone broker (default 127.0.0.1:8123) … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode: brokers and partitions from ZooKeeper) … */
  zk?: string
  /** Root znode with `zk` (default /meta). */
  zkRoot?: string
  /** … or a topology of your own. A topology passed in is not closed by the consumer. */
  topology?: Topology
  topics: string[]
  /** Initial bytes per fetch (default 1 MiB); grows for bigger messages. */
  maxSizeBytes?: number
  /** Long-poll wait per fetch on meta brokers (default 10000). */
  maxWaitMs?: number
  fetchTimeoutMs?: number
  /**
   * Batches buffered before fetchers pause (default 64). A paused fetcher may also hold the
   * answer to the get it sent before pausing (one body of up to maxSizeBytes per partition).
   */
  maxBufferedBatches?: number
  verifyChecksum?: boolean
  /**
   * Receive only messages matching this filter expression (docs/protocol.md#filtered-get):
   * the broker skips the others, offsets still move past them. Needs a meta broker; checked
   * here (INVALID_ARGUMENT naming the position).
   */
  filter?: string
  logger?: Logger
}

export interface ConsumerOptions extends ConsumerBaseOptions {
  /** Only these partition numbers (default: every partition of each topic). */
  partitions?: number[]
  /** Group name sent in get requests (MetaQ requires one; default "meta"). */
  group?: string
  /** Start position for every partition (default 'earliest'), or a function of the partition. */
  from?: StartPosition | StartResolver
  /** Stop each partition at the end offset it had when the consumer started (tail -e). */
  stopAtEnd?: boolean
}

/** The 'partitionsAdded' event: partitions a topic gained while the consumer reads it, read from their beginning. */
export interface PartitionsAddedEvent {
  topic: string
  partitions: Partition[]
}

export interface RunHandlers {
  eachMessage?: (message: Message) => void | Promise<void>
  eachBatch?: (batch: MessageBatch) => void | Promise<void>
}

/** The 'fetchError' event: a retriable fetch failure, tried again after `retryInMs`. */
export interface FetchErrorEvent {
  error: MetaError
  topic: string
  brokerId: number
  partition: number
  /** Where the fetch will continue. */
  offset: number
  retryInMs: number
}

/** The 'partitionEnd' event (`stopAtEnd`): a partition read to its end, and the offset there. */
export interface PartitionEndEvent extends Partition {
  topic: string
  offset: number
}

/** The 'rebalance' event of a group consumer: the partitions it owns now, and those it gave up. */
export interface RebalanceEvent {
  generation: number
  assigned: OwnedPartition[]
  revoked: OwnedPartition[]
}

/** The 'messageFailed' event of a group consumer: a message its handler failed on after every retry. */
export interface MessageFailedEvent {
  message: Message
  error: unknown
}

/**
 * The events of a consumer, by name, with their arguments: `consumer.on('readFrom', (e) => …)`
 * is checked against this map (a typed EventEmitter), so a misspelt event or a listener of
 * the wrong arguments does not compile (docs/architecture.md#client-events).
 */
export interface ConsumerEvents {
  /** A partition's reads moved to another broker of its id (a master, or its slave). */
  readFrom: [event: ReadFromEvent]
  partitionEnd: [event: PartitionEndEvent]
  fetchError: [event: FetchErrorEvent]
  partitionsAdded: [event: PartitionsAddedEvent]
  /** The error the consumer stopped with (its iterators throw it too). */
  error: [error: Error]
  /** Group consumers only. */
  rebalance: [event: RebalanceEvent]
  /** Group consumers only. */
  messageFailed: [event: MessageFailedEvent]
}

/** A processed position: the next offset, and the id of the last message processed. */
export interface Position {
  offset: number
  msgId: string
}

/** Key of a partition in position maps: `topic:brokerId-partition`. */
export function partitionKey(topic: string, partition: Partition): string {
  return `${topic}:${partitionName(partition)}`
}

function batchKey(batch: MessageBatch): string {
  return `${batch.topic}:${batch.brokerId}-${batch.partition}`
}

export abstract class ConsumerBase extends EventEmitter<ConsumerEvents> implements FetchSink, AsyncIterable<Message> {
  readonly topics: string[]
  protected readonly topology: Topology
  protected readonly ownsTopology: boolean
  protected readonly settings: FetchSettings
  protected readonly log: Logger
  protected readonly fetchers = new Map<string, PartitionFetcher>()
  protected readonly queue: QueuedIterator<FetchedBatch>
  protected stopped = false
  private stopping: Promise<void> | undefined
  /** Processed positions, per partition key. */
  protected readonly processed = new Map<string, Position>()
  /** Keys whose processed position changed since the last commit. */
  protected readonly dirty = new Set<string>()
  private started: Promise<void> | undefined
  private inHand: FetchedBatch | undefined
  private idleWaiters: Array<() => void> = []
  private readonly forwardReadFrom = (event: ReadFromEvent) => this.emit('readFrom', event)

  constructor(options: ConsumerBaseOptions, group: string) {
    super()
    if (options.topics.length === 0) throw MetaError.invalidArgument('no topic given: expected at least one')
    for (const topic of options.topics) validateTopicName(topic)
    if (options.filter !== undefined) parseFilter(options.filter)
    this.topics = [...new Set(options.topics)]
    this.log = (options.logger ?? silentLogger).child('consumer')
    this.ownsTopology = options.topology === undefined
    this.topology = options.topology ?? createTopology(options)
    const maxSizeBytes = options.maxSizeBytes ?? 1024 * 1024
    this.settings = {
      group,
      maxSizeBytes,
      maxSizeLimitBytes: Math.max(maxSizeBytes, 64 * 1024 * 1024),
      maxWaitMs: options.maxWaitMs ?? 10_000,
      fetchTimeoutMs: options.fetchTimeoutMs ?? 10_000,
      minDelayMs: 50,
      maxDelayMs: 1000,
      verifyChecksum: options.verifyChecksum ?? true,
      ...(options.filter === undefined ? {} : {filter: options.filter}),
      log: this.log,
    }
    this.queue = new QueuedIterator<FetchedBatch>(options.maxBufferedBatches ?? 64)
    this.queue.onDrain = () => {
      for (const fetcher of this.fetchers.values()) fetcher.resume()
    }
    this.topology.on('readFrom', this.forwardReadFrom)
  }

  /** Start fetching (called by the iterators and run(); safe to call more than once). */
  start(): Promise<void> {
    this.started ??= this.begin()
    return this.started
  }

  /**
   * Batches as fetched; ends on stop() (or at the end with stopAtEnd). A batch counts as
   * processed when the loop asks for the next one. Leaving the loop stops the consumer.
   * Its messages are made when `messages` is first read.
   */
  async *batches(): AsyncGenerator<FetchedBatch> {
    try {
      await this.start()
      for await (const batch of this.queue) {
        if (!this.isCurrent(batch)) continue
        this.inHand = batch
        yield batch
        this.markProcessed(batch, batch.count)
        this.release()
      }
    } finally {
      this.release()
      await this.stop()
    }
  }

  /** One message at a time; a message counts as processed when the loop asks for the next. */
  async *[Symbol.asyncIterator](): AsyncIterator<Message> {
    try {
      await this.start()
      for await (const batch of this.queue) {
        for (let i = 0; i < batch.messages.length; i++) {
          if (!this.isCurrent(batch)) break
          this.inHand = batch
          yield batch.messages[i]
          this.markProcessed(batch, i + 1)
          this.release()
        }
      }
    } finally {
      this.release()
      await this.stop()
    }
  }

  /** Callback API: runs until stop() (or the end with stopAtEnd). */
  async run(handlers: RunHandlers): Promise<void> {
    for await (const batch of this.batches()) {
      if (handlers.eachBatch) await handlers.eachBatch(batch)
      if (handlers.eachMessage) for (const m of batch.messages) await handlers.eachMessage(m)
    }
  }

  /** The processed position of every partition this consumer reads (fetch position if none yet). */
  positions(): Map<string, number> {
    const positions = new Map<string, number>()
    for (const [key, fetcher] of this.fetchers) positions.set(key, this.processed.get(key)?.offset ?? fetcher.offset)
    return positions
  }

  /**
   * Stop fetching and end the iterators (queued batches are dropped). Every call resolves
   * when the consumer has finished stopping (offsets committed, group left, connections closed).
   */
  stop(): Promise<void> {
    if (this.stopping === undefined) {
      this.stopping = this.stopOnce()
      // Every caller gets a failure through the promise it awaits; one that does not await
      // (a signal handler's `void consumer.stop()`) must not make it an unhandled rejection.
      this.stopping.catch(() => undefined)
    }
    return this.stopping
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true
    for (const fetcher of this.fetchers.values()) fetcher.stop()
    this.queue.end()
    try {
      await this.shutdown()
    } finally {
      this.topology.off('readFrom', this.forwardReadFrom)
      if (this.ownsTopology) await this.topology.close()
    }
  }

  deliver(batch: FetchedBatch): boolean {
    if (this.stopped) return false
    this.queue.push(batch)
    return this.queue.wantsMore
  }

  finished(fetcher: PartitionFetcher): void {
    this.emit('partitionEnd', {topic: fetcher.topic, ...fetcher.target, offset: fetcher.offset})
  }

  retrying(fetcher: PartitionFetcher, error: MetaError, retryInMs: number): void {
    // Beyond MetaQ: a master that stops answering is read from its slave at once, not after its ZooKeeper session expires.
    if (unreachable(error) && this.topology.readFromSlave?.(fetcher.target.brokerId) === true) {
      fetcher.switchConnection = true
    }
    const event: FetchErrorEvent = {error, topic: fetcher.topic, ...fetcher.target, offset: fetcher.offset, retryInMs}
    this.emit('fetchError', event)
  }

  failed(fetcher: PartitionFetcher, err: MetaError): void {
    this.fail(
      new MetaError(err.code, `cannot fetch ${fetcher.topic} partition ${fetcher.target.brokerId}-${fetcher.target.partition}: ${err.message}`, {
        cause: err,
        status: err.status,
        details: {...err.details, topic: fetcher.topic, brokerId: fetcher.target.brokerId, partition: fetcher.target.partition, offset: fetcher.offset},
      }),
    )
  }

  /**
   * An error the consumer cannot get past: the iterators throw it (run() rejects) and the
   * consumer stops. Listeners of 'error' hear it too (without one, emitting would throw).
   */
  protected fail(error: Error): void {
    if (this.stopped) return
    this.queue.end(error)
    if (this.listenerCount('error') > 0) this.emit('error', error)
    this.stop().catch((stopError: Error) => this.log.warn('stopping after an error failed', {error: stopError.message}))
  }

  /** Assign partitions and start fetchers. */
  protected abstract begin(): Promise<void>

  /** Extra work when stopping (commit, leave); the topology is still open. */
  protected async shutdown(): Promise<void> {}

  /**
   * A query made before a partition is fetched (its start position, its end offset) on the
   * broker that serves `brokerId`: when its master does not accept connections and a slave of
   * it is registered, on that slave (from then on the topology reads the broker id there).
   * Resolves with the answer and the connection that gave it, for the partition's fetcher.
   */
  protected async queryBroker<T>(brokerId: number, query: (conn: BrokerConnection) => Promise<T>): Promise<{conn: BrokerConnection; value: T}> {
    // Connected first: queries choose by the broker's capabilities (a seek needs a meta broker).
    const conn = await this.topology.connection(brokerId)
    try {
      await conn.ready()
      return {conn, value: await query(conn)}
    } catch (error) {
      if (!isMetaError(error) || !unreachable(error) || this.topology.readFromSlave?.(brokerId) !== true) throw error
      this.log.debug('start query failed on the master; asking its slave', {brokerId, error: error.message})
      const slave = await this.topology.connection(brokerId)
      await slave.ready()
      return {conn: slave, value: await query(slave)}
    }
  }

  /** FetchSink: true while the broker id is read from a slave (cluster mode). */
  readsFromSlave(brokerId: number): boolean {
    return this.topology.readsFromSlave?.(brokerId) === true
  }

  /** FetchSink: a fetcher's connection closed for good; the topology says where that broker id is read now. */
  reconnect(brokerId: number): Promise<BrokerConnection> {
    return this.topology.connection(brokerId)
  }

  /** Start reading a partition at `offset`. */
  protected addFetcher(topic: string, partition: Partition, conn: BrokerConnection, offset: number, stopAt?: number): PartitionFetcher {
    const fetcher = new PartitionFetcher(topic, partition, conn, offset, this.settings, this)
    fetcher.stopAt = stopAt
    this.fetchers.set(fetcher.key, fetcher)
    return fetcher
  }

  /**
   * Stop reading a partition: fetching stops, its queued batches are dropped, and this waits
   * until the application has finished with the message or batch of it in hand.
   */
  protected async removeFetcher(key: string): Promise<void> {
    const fetcher = this.fetchers.get(key)
    if (fetcher === undefined) return
    fetcher.stop()
    this.fetchers.delete(key)
    while (this.inHand !== undefined && batchKey(this.inHand) === key) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve))
    }
  }

  private isCurrent(batch: MessageBatch): boolean {
    return !this.stopped && this.fetchers.get(batchKey(batch))?.epoch === batch.epoch
  }

  private markProcessed(batch: FetchedBatch, count: number): void {
    if (count === 0) return
    const key = batchKey(batch)
    if (count === batch.count) {
      this.processed.set(key, {offset: batch.nextOffset, msgId: batch.lastIdText()})
    } else {
      const last = batch.messages[count - 1]
      this.processed.set(key, {offset: last.nextOffset, msgId: String(last.id)})
    }
    this.dirty.add(key)
  }

  private release(): void {
    this.inHand = undefined
    if (this.idleWaiters.length === 0) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const resolve of waiters) resolve()
  }
}

/**
 * Reads the partitions you name (default all) of some topics, from a position you choose.
 *
 * Reading every partition (no `partitions`, no `stopAtEnd`), it also reads partitions a topic
 * gains later (`meta topic alter --partitions`, a reload), from their beginning, as soon as the
 * topology reports them: a standalone topology asks the broker every `refreshMs`, a cluster
 * topology learns it from a ZooKeeper watch. Each addition is emitted as 'partitionsAdded'
 * ({@link PartitionsAddedEvent}).
 */
export class Consumer extends ConsumerBase {
  private readonly options: ConsumerOptions
  private finishedCount = 0
  /** Partition additions, one topic at a time. */
  private adding: Promise<void> = Promise.resolve()
  private readonly onTopologyChange = (topic: string): void => {
    if (this.stopped || !this.topics.includes(topic)) return
    this.adding = this.adding.then(() =>
      this.addNewPartitions(topic).catch((error: Error) => {
        // The next change (or refresh) tries again; a topic gone for good stops its fetchers on its own.
        this.log.warn('cannot start reading new partitions', {topic, error: error.message})
      }),
    )
  }

  constructor(options: ConsumerOptions) {
    super(options, options.group ?? 'meta')
    this.options = options
  }

  /** End offsets each partition stops at (stopAtEnd). */
  stopOffsets(): Map<string, number> {
    const stops = new Map<string, number>()
    for (const [key, fetcher] of this.fetchers) if (fetcher.stopAt !== undefined) stops.set(key, fetcher.stopAt)
    return stops
  }

  override finished(fetcher: PartitionFetcher): void {
    super.finished(fetcher)
    this.finishedCount += 1
    if (this.options.stopAtEnd && this.finishedCount === this.fetchers.size) this.queue.end()
  }

  protected async begin(): Promise<void> {
    const planned: Array<{topic: string; partition: Partition; conn: BrokerConnection; start: number; stopAt?: number}> = []
    const from = this.options.from ?? 'earliest'
    for (const topic of this.topics) {
      for (const partition of await this.partitionsOf(topic)) {
        const {conn, value} = await this.queryBroker(partition.brokerId, async (conn) => {
          const position = typeof from === 'function' ? await from(topic, partition, conn) : from
          let start = position === 'earliest' ? 0 : position === 'latest' ? TAIL_OFFSET : position
          let stopAt: number | undefined
          if (this.options.stopAtEnd) {
            stopAt = await endOffset(conn, this.settings.group, topic, partition.partition)
            if (start === TAIL_OFFSET) start = stopAt
          }
          return {start, stopAt}
        })
        planned.push({topic, partition, conn, ...value})
      }
    }
    const fetchers = planned.map((p) => this.addFetcher(p.topic, p.partition, p.conn, p.start, p.stopAt))
    for (const fetcher of fetchers) fetcher.start()
    if (this.options.partitions === undefined && !this.options.stopAtEnd) this.topology.on('change', this.onTopologyChange)
  }

  // An addition in progress checks `stopped` after each wait and adds no fetcher after a stop.
  protected override async shutdown(): Promise<void> {
    this.topology.off('change', this.onTopologyChange)
  }

  /** Fetch the partitions of `topic` not read yet, from their beginning (every message in them is new to this consumer). */
  private async addNewPartitions(topic: string): Promise<void> {
    const partitions = await this.topology.subscribePartitions(topic)
    const added: Partition[] = []
    for (const partition of partitions) {
      if (this.stopped) return
      if (this.fetchers.has(partitionKey(topic, partition))) continue
      const {conn} = await this.queryBroker(partition.brokerId, async () => undefined)
      if (this.stopped) return
      this.addFetcher(topic, partition, conn, 0).start()
      added.push(partition)
    }
    if (added.length > 0) this.emit('partitionsAdded', {topic, partitions: added} satisfies PartitionsAddedEvent)
  }

  private async partitionsOf(topic: string): Promise<Partition[]> {
    let partitions = await this.topology.subscribePartitions(topic)
    if (partitions.length === 0) partitions = [{brokerId: this.topology.brokerIds()[0] ?? 0, partition: 0}]
    if (this.options.partitions === undefined) return partitions
    const known = new Set(partitions.map((p) => p.partition))
    for (const p of new Set(this.options.partitions)) {
      if (!known.has(p)) throw MetaError.invalidArgument(`invalid partition "${p}" for topic "${topic}": expected ${describe(partitions)}`)
    }
    return partitions.filter((p) => this.options.partitions!.includes(p.partition))
  }
}

/** The end of a partition's log now (the `offset` command past the end); 0 if it has none. */
export async function endOffset(conn: Pick<BrokerConnection, 'requestAsync'>, group: string, topic: string, partition: number): Promise<number> {
  const frame = await conn.requestAsync((out, opaque) => encodeOffset(out, {topic, group, partition, offset: TAIL_OFFSET, opaque}))
  if (frame.type === 'result' && frame.code === 404) return 0
  return Number(resultText(frame))
}

/** A broker that does not accept connections or does not answer: its slave may serve its reads. */
function unreachable(error: MetaError): boolean {
  return error.code === 'CONNECTION_FAILED' || error.code === 'TIMEOUT'
}

function describe(partitions: Partition[]): string {
  const numbers = partitions.map((p) => p.partition).sort((a, b) => a - b)
  if (numbers.length === 0) return 'no partitions'
  return numbers.length > 1 && numbers.at(-1)! - numbers[0] === numbers.length - 1 ? `${numbers[0]}..${numbers.at(-1)}` : numbers.join(', ')
}

export function createConsumer(options: ConsumerOptions): Consumer {
  return new Consumer(options)
}
