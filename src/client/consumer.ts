/**
 * The consumer: reads one or more topics, all their partitions or the ones you name, from an
 * offset you choose. (Consumer groups with committed offsets build on this; see group.ts.)
 *
 *   const consumer = createConsumer({broker: '127.0.0.1:8123', topics: ['orders'], from: 'earliest'})
 *   for await (const message of consumer) { … }            // one message at a time
 *   for await (const batch of consumer.batches()) { … }     // one fetch at a time (fastest)
 *   await consumer.run({eachMessage: async (m) => { … }})   // callback API; resolves on stop()
 *
 * With a meta broker every partition keeps one long-poll get parked, so an idle consumer
 * costs nothing and a new message arrives within milliseconds; with a MetaQ broker it polls
 * with back-off. Fetched batches wait in a bounded queue; fetchers pause while it is full.
 */
import {EventEmitter} from 'node:events'
import {encodeOffset} from '../protocol/commands/offset.js'
import {MetaError} from '../protocol/errors.js'
import {validateTopicName} from '../protocol/names.js'
import {silentLogger, type Logger} from '../log.js'
import {resultText} from './connection.js'
import {PartitionFetcher, type FetchSettings, type FetchSink, type MessageBatch} from './fetcher.js'
import {QueuedIterator} from './queued-iterator.js'
import {StandaloneTopology, type Topology} from './topology.js'
import {partitionName, type Message, type Partition} from './types.js'

export type {MessageBatch} from './fetcher.js'

/** Where a partition starts: the first message, the end (only new messages), or a byte offset. */
export type StartPosition = 'earliest' | 'latest' | number

/** Long.MAX_VALUE on the wire: the broker answers 301 with the end of the log. */
export const TAIL_OFFSET = Number.MAX_SAFE_INTEGER

export interface ConsumerOptions {
  broker?: string
  topology?: Topology
  topics: string[]
  /** Only these partition numbers (default: every partition of each topic). */
  partitions?: number[]
  /** Group name sent in get requests (MetaQ requires one; default "meta"). */
  group?: string
  /** Start position for every partition (default 'earliest'), or per partition key `topic:brokerId-partition`. */
  from?: StartPosition | ((topic: string, partition: Partition) => StartPosition | Promise<StartPosition>)
  /** Stop each partition at the end offset it had when the consumer started (tail -e). */
  stopAtEnd?: boolean
  maxSizeBytes?: number
  maxWaitMs?: number
  fetchTimeoutMs?: number
  /** Batches buffered before fetchers pause (default 64). */
  maxBufferedBatches?: number
  verifyChecksum?: boolean
  logger?: Logger
}

export interface RunHandlers {
  eachMessage?: (message: Message) => void | Promise<void>
  eachBatch?: (batch: MessageBatch) => void | Promise<void>
}

/** Key of a partition in offset maps: `topic:brokerId-partition`. */
export function partitionKey(topic: string, partition: Partition): string {
  return `${topic}:${partitionName(partition)}`
}

export class Consumer extends EventEmitter implements FetchSink, AsyncIterable<Message> {
  readonly topics: string[]
  private readonly topology: Topology
  private readonly ownsTopology: boolean
  private readonly options: ConsumerOptions
  private readonly settings: FetchSettings
  private readonly log: Logger
  private readonly fetchers = new Map<string, PartitionFetcher>()
  private readonly queue: QueuedIterator<MessageBatch>
  private started: Promise<void> | undefined
  private stopped = false
  private finishedCount = 0
  /** Offsets after the last message handed to the application, per partition key. */
  private readonly delivered = new Map<string, number>()

  constructor(options: ConsumerOptions) {
    super()
    if (options.topics.length === 0) throw MetaError.invalidArgument('no topic given: expected at least one')
    for (const topic of options.topics) validateTopicName(topic)
    this.topics = options.topics
    this.options = options
    this.log = (options.logger ?? silentLogger).child('consumer')
    this.ownsTopology = options.topology === undefined
    this.topology = options.topology ?? new StandaloneTopology({broker: options.broker ?? '127.0.0.1:8123', logger: options.logger})
    const maxSizeBytes = options.maxSizeBytes ?? 1024 * 1024
    this.settings = {
      group: options.group ?? 'meta',
      maxSizeBytes,
      maxSizeLimitBytes: Math.max(maxSizeBytes, 64 * 1024 * 1024),
      maxWaitMs: options.maxWaitMs ?? 10_000,
      fetchTimeoutMs: options.fetchTimeoutMs ?? 10_000,
      minDelayMs: 50,
      maxDelayMs: 1000,
      verifyChecksum: options.verifyChecksum ?? true,
      log: this.log,
    }
    this.queue = new QueuedIterator<MessageBatch>(options.maxBufferedBatches ?? 64)
    this.queue.onDrain = () => {
      for (const fetcher of this.fetchers.values()) fetcher.resume()
    }
    // Avoid an unhandled 'error' crash: errors are retried; listeners may log them.
    this.on('error', () => {})
  }

  /** Resolve partitions and start positions, and start fetching (called by the iterators). */
  start(): Promise<void> {
    this.started ??= this.assignAll()
    return this.started
  }

  /**
   * Batches as fetched; ends when every partition reached its stop offset, or on stop().
   * Leaving the loop (break, return, throw, or the end) stops the consumer.
   */
  async *batches(): AsyncGenerator<MessageBatch> {
    try {
      await this.start()
      for await (const batch of this.queue) {
        yield batch
        this.markDelivered(batch)
      }
    } finally {
      await this.stop()
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Message> {
    for await (const batch of this.batches()) {
      for (const message of batch.messages) yield message
    }
  }

  /** Callback API: runs until stop() (or the end with stopAtEnd). */
  async run(handlers: RunHandlers): Promise<void> {
    for await (const batch of this.batches()) {
      if (handlers.eachBatch) await handlers.eachBatch(batch)
      if (handlers.eachMessage) for (const m of batch.messages) await handlers.eachMessage(m)
    }
  }

  /** The next offset per partition key, after the last message handed out. */
  positions(): Map<string, number> {
    const positions = new Map<string, number>()
    for (const [key, fetcher] of this.fetchers) positions.set(key, this.delivered.get(key) ?? fetcher.offset)
    return positions
  }

  /** End offsets each partition stops at (stopAtEnd). */
  stopOffsets(): Map<string, number> {
    const stops = new Map<string, number>()
    for (const [key, fetcher] of this.fetchers) if (fetcher.stopAt !== undefined) stops.set(key, fetcher.stopAt)
    return stops
  }

  /** Stop fetching; iterators end after what is already queued is discarded. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    for (const fetcher of this.fetchers.values()) fetcher.stop()
    this.queue.end()
    if (this.ownsTopology) await this.topology.close()
  }

  deliver(batch: MessageBatch): boolean {
    if (this.stopped) return false
    this.queue.push(batch)
    return this.queue.wantsMore
  }

  finished(fetcher: PartitionFetcher): void {
    this.finishedCount += 1
    this.emit('partitionEnd', {topic: fetcher.topic, ...fetcher.target, offset: fetcher.offset})
    if (this.options.stopAtEnd && this.finishedCount === this.fetchers.size) this.queue.end()
  }

  error(fetcher: PartitionFetcher, err: MetaError): void {
    this.log.debug('fetch failed', {partition: fetcher.key, error: err.message})
    this.emit('error', err)
  }

  private markDelivered(batch: MessageBatch): void {
    this.delivered.set(`${batch.topic}:${batch.brokerId}-${batch.partition}`, batch.nextOffset)
  }

  private async assignAll(): Promise<void> {
    for (const topic of this.topics) {
      let partitions = await this.topology.subscribePartitions(topic)
      if (partitions.length === 0) partitions = [{brokerId: this.topology.brokerIds()[0] ?? 0, partition: 0}]
      if (this.options.partitions !== undefined) {
        const wanted = new Set(this.options.partitions)
        const known = new Set(partitions.map((p) => p.partition))
        for (const p of wanted) {
          if (!known.has(p)) {
            throw MetaError.invalidArgument(`invalid partition "${p}" for topic "${topic}": expected ${describe(partitions)}`)
          }
        }
        partitions = partitions.filter((p) => wanted.has(p.partition))
      }
      for (const partition of partitions) await this.addFetcher(topic, partition)
    }
    if (this.options.stopAtEnd && this.finishedCount === this.fetchers.size) this.queue.end()
    for (const fetcher of this.fetchers.values()) fetcher.start()
  }

  private async addFetcher(topic: string, partition: Partition): Promise<void> {
    const conn = await this.topology.connection(partition.brokerId)
    const from = this.options.from ?? 'earliest'
    const position = typeof from === 'function' ? await from(topic, partition) : from
    const start = position === 'earliest' ? 0 : position === 'latest' ? TAIL_OFFSET : position
    const fetcher = new PartitionFetcher(topic, partition, conn, start, this.settings, this)
    if (this.options.stopAtEnd) {
      fetcher.stopAt = await endOffset(conn, this.settings.group, topic, partition.partition)
      if (start === TAIL_OFFSET) fetcher.offset = fetcher.stopAt
    }
    this.fetchers.set(fetcher.key, fetcher)
  }
}

/** The end of a partition's log now (the `offset` command at Long.MAX_VALUE); 0 if it has none. */
export async function endOffset(
  conn: {requestAsync: StandaloneTopology['conn']['requestAsync']},
  group: string,
  topic: string,
  partition: number,
): Promise<number> {
  const frame = await conn.requestAsync((out, opaque) => encodeOffset(out, {topic, group, partition, offset: TAIL_OFFSET, opaque}))
  if (frame.type === 'result' && frame.code === 404) return 0
  return Number(resultText(frame))
}

function describe(partitions: Partition[]): string {
  const numbers = partitions.map((p) => p.partition).sort((a, b) => a - b)
  if (numbers.length === 0) return 'no partitions'
  return numbers.length > 1 && numbers.at(-1)! - numbers[0] === numbers.length - 1
    ? `${numbers[0]}..${numbers.at(-1)}`
    : numbers.join(', ')
}

export function createConsumer(options: ConsumerOptions): Consumer {
  return new Consumer(options)
}
