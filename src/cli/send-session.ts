/**
 * The engine of `meta send`: reads input, turns records into messages, keeps the producer's
 * window full without letting memory grow, and counts what was acknowledged.
 *
 *   stdin ──'data'──▶ RecordSplitter ──record──▶ toMessage ──▶ producer.sendCallback
 *     ▲                    │ handler returns false when the window is full,             │
 *     └── pause/resume ◀───┘ the rate limit is reached, or input must stop   'drain' ◀──┘
 *
 * - Input (send-input.ts): stdin split at a delimiter, or file arguments, each one message.
 *   Counts in send-tally.ts, --transaction in send-transactions.ts, --rate in send-rate.ts.
 * - Backpressure: the splitter stops right after the record that filled the window; the
 *   producer's 'drain' resumes it on the next turn (so a socket read of many acks refills the
 *   window in one go rather than one message per ack).
 * - Stops: end of input, -c reached, interrupt(), an oversize record with --oversize fail, or
 *   a send that failed for connection loss after the producer's retries. In every case what is
 *   in flight is awaited (after interrupt() for at most graceMs), then the summary is final and
 *   late callbacks are ignored.
 */
import {createProducer, type Producer} from '../client/producer.js'
import {createTopology, type Topology} from '../client/topology.js'
import type {SelectorName} from '../client/partition-selector.js'
import type {SendResult} from '../client/types.js'
import type {SendCallback} from '../client/producer-options.js'
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import {decodeEnvelope} from './envelope.js'
import {ProblemReporter} from './problems.js'
import {createSendSpooler, type SendSpoolOptions} from './send-spool.js'
import type {SpoolingProducer} from '../client/spool/spooling-producer.js'
import type {SpoolingStats} from '../client/spool/types.js'
import {FollowInput, type FollowOptions} from './follow/follow-input.js'
import {checkFile, SendInput, type InputHandler, type RecordInput, type Source} from './send-input.js'
import {TokenBucket} from './send-rate.js'
import {SendTally, type PartitionSummary} from './send-tally.js'
import {SendTransactions, type TransactionsSummary} from './send-transactions.js'

export type {PartitionSummary} from './send-tally.js'
export type {TransactionsSummary} from './send-transactions.js'

/** MetaQ's default maxTransferSize (1 MiB) minus a record header: used when the broker does not say. */
const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 - 20
/** How long an interrupted send waits for acknowledgements of what is in flight. */
const INTERRUPT_GRACE_MS = 5000

type OversizePolicy = 'skip' | 'fail'

interface SendSessionOptions {
  /** host:port of a standalone broker … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode). */
  zk?: string
  zkRoot?: string
  /** Required unless envelopes name their topics. */
  topic?: string
  /** A partition for every message; -1 = always the partitioner (even over envelope partitions). */
  partition?: number
  /** A fixed attribute for every message (wins over an envelope's). */
  attribute?: string
  /** Split each record at the first occurrence into attribute and payload. */
  keyDelimiter?: Buffer
  /** Record delimiter for stdin (default "\n"). */
  delimiter?: Buffer
  /** Records are JSON envelopes (meta tail -J). */
  envelopes?: boolean
  /** Files to send, each one message; '-' = stdin. Empty = stdin. */
  files?: string[]
  /** Stop after this many messages. */
  count?: number
  /** Messages per second. */
  rate?: number
  maxInFlight?: number
  partitioner?: SelectorName
  ackTimeoutMs?: number
  retries?: number
  oversize?: OversizePolicy
  /** How long interrupt() waits for in-flight acks. */
  graceMs?: number
  /** Problem lines (first few of each run) go here. */
  report: (line: string) => void
  logger?: Logger
  /** Where stdin comes from; read only when needed (default process.stdin). */
  stdin?: () => NodeJS.ReadableStream
  /**
   * Send everything in local transactions: committed at the end (or every `transactionSize`
   * messages), rolled back on any failure, skipped record or interrupt.
   */
  transaction?: boolean
  /** With `transaction`: commit every this many messages. */
  transactionSize?: number
  /** Keep what the broker cannot take now in a disk spool (undefined: fail fast; ignored with `transaction`). */
  spool?: SendSpoolOptions
  /** Follow these files line by line (--follow) instead of reading `files`; never ends on its own. */
  follow?: FollowOptions
}

export interface SendSummary {
  /** Messages acknowledged by the broker. */
  sent: number
  /** Messages the broker rejected or that failed after retries. */
  failed: number
  /** Records not sent: too large, or an invalid envelope. */
  skipped: number
  /** Empty records (blank lines), ignored. */
  empty: number
  /** With a spool: messages kept during outages, sent from it, found left by an earlier run, still in it. */
  spool?: SpoolingStats & {dir: string}
  /** In flight when an interrupted send stopped waiting (with a spool: still in the spool). */
  unacknowledged: number
  /** Payload bytes acknowledged. */
  bytes: number
  elapsedMs: number
  /** True when stopped by a signal. */
  interrupted: boolean
  /** Per partition; keys are "<p>", or "<topic>:<p>" when more than one topic was written. */
  partitions: Record<string, PartitionSummary>
  /** Why sending stopped early (--oversize fail, connection lost), if it did. */
  error?: {code: string; message: string}
  /** With --transaction: what was committed and rolled back (`sent` counts committed messages only). */
  transactions?: TransactionsSummary
}

type StopReason = 'count' | 'interrupt' | 'oversize' | 'connection' | 'transaction'

export class SendSession {
  private readonly options: SendSessionOptions
  private readonly producer: Producer
  private readonly topology: Topology
  readonly maxMessageBytes: number
  private readonly problems: ProblemReporter
  private readonly fixedPartition: number | undefined
  private readonly tally = new SendTally()
  private readonly input: RecordInput
  /** --transaction, else undefined. */
  private readonly transactions: SendTransactions | undefined
  /** --rate, made when run() starts. */
  private bucket: TokenBucket | undefined

  private attempted = 0
  private startMs = 0
  private finalized = false
  private stopReason: StopReason | undefined
  private fatal: MetaError | undefined

  private waitingDrain = false
  private waitingRate = false
  private waitingCommit = false
  private resumeScheduled = false
  private graceTimer: NodeJS.Timeout | undefined
  private graceOver: (() => void) | undefined
  private readonly graceElapsed: Promise<void>
  /** With a spool, messages go through it. */
  private spooler: SpoolingProducer | undefined
  /** Followed lines sent through the spooler: what to do once the spool file holds one. */
  private readonly storedHooks = new Map<SendCallback, () => void>()

  private constructor(options: SendSessionOptions, topology: Topology, maxMessageBytes: number) {
    this.options = options
    this.topology = topology
    this.maxMessageBytes = maxMessageBytes
    this.fixedPartition = options.partition !== undefined && options.partition >= 0 ? options.partition : undefined
    this.problems = new ProblemReporter(options.report)
    // Only a bound on memory: anything longer cannot be a valid message. A JSON envelope may be
    // up to 6× its payload (\u00XX escapes) plus its other fields.
    const maxRecordBytes = options.envelopes ? 6 * maxMessageBytes + 64 * 1024 : maxMessageBytes + (options.keyDelimiter?.length ?? 0)
    const handler: InputHandler = {
      record: (record, size, source, index, wholeFile) => this.onRecord(record, size, source, index, wholeFile),
      stopped: () => this.stopReason !== undefined,
    }
    const {delimiter, envelopes = false} = options
    this.input =
      options.follow === undefined
        ? new SendInput({files: options.files ?? [], envelopes, delimiter, maxRecordBytes, stdin: options.stdin}, handler)
        : new FollowInput(
            {...options.follow, delimiter: (envelopes ? undefined : delimiter) ?? Buffer.from('\n'), maxRecordBytes, report: options.report},
            handler,
          )
    this.producer = createProducer({
      topology,
      maxInFlight: options.maxInFlight ?? 4096,
      selector: options.partitioner ?? 'round-robin',
      sendTimeoutMs: options.ackTimeoutMs,
      retries: options.retries,
      maxMessageBytes,
      logger: options.logger,
    })
    if (options.transaction) {
      this.transactions = new SendTransactions({
        producer: this.producer,
        tally: this.tally,
        problems: this.problems,
        size: options.transactionSize,
        stopped: () => this.stopReason !== undefined,
        commitFailed: (error) => {
          this.fatal ??= error
          this.stop('transaction')
        },
      })
    } else if (options.spool !== undefined) {
      // A followed file's position may pass a line once the spool file holds it (not before:
      // a kill -9 would lose what is only in memory).
      const onStored = options.follow === undefined ? undefined : (callback: SendCallback) => this.storedHooks.get(callback)?.()
      this.spooler = createSendSpooler(this.producer, options.spool, options.maxInFlight, onStored)
      this.spooler.on('error', (error: MetaError) => {
        this.fatal ??= error
        this.stop('connection')
      })
    }
    ;(this.spooler ?? this.producer).on('drain', () => {
      if (!this.waitingDrain) return
      this.waitingDrain = false
      this.scheduleResume()
    })
    this.graceElapsed = new Promise((resolve) => (this.graceOver = resolve))
  }

  /**
   * Connect and check what can be checked before reading any input: the broker answers, the
   * topic is accepted, the partition exists. Throws CONNECTION_FAILED (`cannot reach broker …`)
   * or INVALID_ARGUMENT.
   */
  static async open(options: SendSessionOptions): Promise<SendSession> {
    if (options.follow === undefined) for (const file of options.files ?? []) if (file !== '-') await checkFile(file)
    const topology = createTopology({
      broker: options.zk === undefined ? options.broker : undefined,
      zk: options.zk,
      zkRoot: options.zkRoot,
      requestTimeoutMs: options.ackTimeoutMs,
      logger: options.logger,
    })
    try {
      const partitions = options.topic === undefined ? [] : await topology.publishPartitions(options.topic)
      // A cluster topic no broker registered yet has no partitions: the first broker picks one.
      const conn = await topology.connection(partitions[0]?.brokerId ?? topology.brokerIds()[0] ?? 0)
      if (options.topic !== undefined) {
        const wanted = options.partition
        // Partition numbers count the topic's partitions in MetaQ's order (the broker's own in standalone mode).
        if (wanted !== undefined && wanted >= 0 && partitions.length > 0 && wanted >= partitions.length) {
          throw MetaError.invalidArgument(`invalid partition "${wanted}" for topic "${options.topic}": expected 0..${partitions.length - 1}`)
        }
      }
      return new SendSession(options, topology, conn.capabilities.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES)
    } catch (error) {
      // --max-outage covers a broker not reached yet: spool from the start, within the limit.
      if (options.spool?.maxOutageMs !== undefined && !options.transaction && isMetaError(error) && isConnectionLoss(error)) {
        return new SendSession(options, topology, DEFAULT_MAX_MESSAGE_BYTES)
      }
      await topology.close()
      throw error
    }
  }

  /** Messages acknowledged so far. */
  get sent(): number {
    return this.tally.sent
  }

  get inFlight(): number {
    return this.spooler?.inFlight ?? this.producer.inFlight
  }

  /** Messages in the spool during an outage or its drain, not yet acknowledged (0 while the broker takes them direct). */
  get spooled(): number {
    return this.spooler?.inOutage === true ? this.spooler.stats.pending : 0
  }

  get elapsedMs(): number {
    return this.startMs === 0 ? 0 : performance.now() - this.startMs
  }

  /** Read every input, send, wait for acknowledgements; resolves with the final counts. */
  async run(): Promise<SendSummary> {
    this.startMs = performance.now()
    if (this.options.rate !== undefined) this.bucket = new TokenBucket(this.options.rate, this.startMs)
    this.transactions?.begin()
    // A spool left behind for this topic is sent first.
    if (this.spooler !== undefined && this.options.topic !== undefined) this.spooler.open(this.options.topic)
    await this.input.readAll()
    const flushed = this.spooler === undefined ? this.producer.flush() : this.spooler.flush().catch((error: MetaError) => void (this.fatal ??= error))
    await Promise.race([flushed, this.graceElapsed])
    await this.input.settle?.()
    await this.transactions?.end(
      () => this.tally.failed === 0 && this.tally.skipped === 0 && this.fatal === undefined && (this.stopReason === undefined || this.stopReason === 'count'),
    )
    return this.finish()
  }

  /** Stop reading (Ctrl-C); what is in flight gets graceMs to be acknowledged. */
  interrupt(): void {
    if (this.graceTimer !== undefined) return
    this.stop('interrupt')
    this.graceTimer = setTimeout(() => this.graceOver?.(), this.options.graceMs ?? INTERRUPT_GRACE_MS)
  }

  /** Close the connection (after run()). */
  async close(): Promise<void> {
    if (this.graceTimer !== undefined) clearTimeout(this.graceTimer)
    this.finalized = true
    await this.spooler?.close()
    await this.topology.close()
  }

  /** Why sending stopped early (--oversize fail, connection lost), if it did. */
  get error(): MetaError | undefined {
    return this.fatal
  }

  /** `… and 995 more problems not shown (…)`, if any were hidden. */
  problemSummary(): string | undefined {
    return this.problems.summary()
  }

  /** One record of input; returns false to pause the input. */
  private onRecord(record: Buffer | undefined, size: number, source: Source, index: number, wholeFile: boolean): boolean {
    if (this.stopReason !== undefined) return false
    if (record === undefined) {
      this.oversize(source.label(index), size)
      if (this.options.oversize !== 'fail') source.done?.(index) // --oversize fail: a restart tries it again
      return this.stopReason === undefined
    }
    if (size === 0 && !wholeFile) {
      this.tally.empty += 1
      source.done?.(index)
      return true
    }
    let topic = this.options.topic
    let partition = this.fixedPartition
    let attribute = this.options.attribute
    let payload = record
    if (this.options.envelopes) {
      let envelope
      try {
        envelope = decodeEnvelope(record)
      } catch (error) {
        source.done?.(index)
        return this.skip(source.label(index), error)
      }
      topic ??= envelope.topic
      if (this.options.partition === undefined) partition = envelope.partition
      attribute ??= envelope.attribute
      payload = envelope.payload
      if (topic === undefined) {
        source.done?.(index)
        return this.skip(source.label(index), MetaError.invalidArgument('no topic: the envelope has none and -t was not given'))
      }
    } else if (this.options.keyDelimiter !== undefined) {
      const at = record.indexOf(this.options.keyDelimiter)
      if (at >= 0) {
        attribute = record.toString('utf8', 0, at)
        payload = record.subarray(at + this.options.keyDelimiter.length)
      }
    }
    const encodedBytes = payload.length + (attribute === undefined ? 0 : 4 + Buffer.byteLength(attribute))
    if (encodedBytes > this.maxMessageBytes) {
      this.oversize(source.label(index), encodedBytes)
      if (this.options.oversize !== 'fail') source.done?.(index)
      return this.stopReason === undefined
    }
    return this.send(topic!, payload, attribute, partition, source, index)
  }

  private send(topic: string, payload: Buffer, attribute: string | undefined, partition: number | undefined, source: Source, index: number): boolean {
    const bytes = payload.length
    let more: boolean
    try {
      const done = source.done
      const callback =
        this.spooler === undefined || done === undefined
          ? (result: SendResult) => this.onAck(result, source, index, bytes)
          : this.trackStored(source, index, bytes, done)
      more = (this.spooler ?? this.producer).sendCallback(topic, payload, {attribute, partition}, callback)
    } catch (error) {
      source.done?.(index)
      return this.skip(source.label(index), error) // a bad topic name in an envelope
    }
    this.attempted += 1
    if (this.options.count !== undefined && this.attempted >= this.options.count) {
      this.stop('count')
      return false
    }
    const part = this.transactions?.sent()
    if (part !== undefined) {
      // Commit this part before reading on.
      this.waitingCommit = true
      void part.finally(() => {
        this.waitingCommit = false
        this.scheduleResume()
      })
      return false
    }
    if (!more) {
      this.waitingDrain = true
      return false
    }
    return this.bucket === undefined || this.takeToken(this.bucket)
  }

  /** A followed line's callback, remembered until the spool file holds the line or it is answered. */
  private trackStored(source: Source, index: number, bytes: number, done: (index: number) => void): SendCallback {
    const callback = (result: SendResult): void => {
      this.storedHooks.delete(callback)
      this.onAck(result, source, index, bytes)
    }
    this.storedHooks.set(callback, () => {
      this.storedHooks.delete(callback)
      done(index) // the spool sends it: a restart must not read it again
    })
    return callback
  }

  private onAck(result: SendResult, source: Source, index: number, bytes: number): void {
    if (this.finalized) return
    if (result.success) {
      if (this.transactions !== undefined) this.transactions.acknowledged(result, bytes)
      else this.tally.acknowledged(result.topic, result.partition, result.offset, bytes)
      source.done?.(index)
      return
    }
    this.tally.failed += 1
    const error = result.error ?? new MetaError('INTERNAL', result.errorMessage ?? 'send failed')
    this.problems.report({where: source.label(index), code: error.code, message: `send failed: ${error.message}`})
    if (error.code === 'STORAGE_ERROR') return // a spool could not keep it: a followed file reads it again
    if (!isConnectionLoss(error))
      source.done?.(index) // refused for good: sending it again would not help
    else if (this.stopReason === undefined) {
      this.fatal = new MetaError(error.code, `giving up: ${error.message}`, {cause: error})
      this.stop('connection')
    }
  }

  private oversize(where: string, size: number): void {
    const message = `message of ${size} bytes is larger than the broker's limit of ${this.maxMessageBytes} bytes`
    this.tally.skipped += 1
    if (this.options.oversize === 'fail') {
      this.fatal = MetaError.invalidArgument(`${where}: ${message} (--oversize fail: stopped)`, {size})
      this.stop('oversize')
      return
    }
    this.problems.report({where, code: 'INVALID_ARGUMENT', message: `${message}: skipped`})
  }

  private skip(where: string, error: unknown): boolean {
    this.tally.skipped += 1
    const code = isMetaError(error) ? error.code : 'ERROR'
    this.problems.report({where, code, message: `${(error as Error).message}: skipped`})
    return this.stopReason === undefined
  }

  private stop(reason: StopReason): void {
    if (this.stopReason !== undefined) return
    this.stopReason = reason
    this.input.stop()
  }

  /** --rate: false = pause until the bucket has a token again. */
  private takeToken(bucket: TokenBucket): boolean {
    const waitMs = bucket.take()
    if (waitMs === 0) return true
    this.waitingRate = true
    setTimeout(() => {
      this.waitingRate = false
      this.scheduleResume()
    }, waitMs)
    return false
  }

  /** Resume input on the next turn, after every ack of the current socket read is counted. */
  private scheduleResume(): void {
    if (this.resumeScheduled) return
    this.resumeScheduled = true
    setImmediate(() => {
      this.resumeScheduled = false
      if (this.waitingDrain || this.waitingRate || this.waitingCommit || this.stopReason !== undefined) return
      this.input.resume()
    })
  }

  private finish(): SendSummary {
    const unacknowledged = this.spooler?.stats.pending ?? this.producer.inFlight
    this.finalized = true
    const {sent, failed, skipped, empty, bytes} = this.tally
    const summary: SendSummary = {
      sent,
      failed,
      skipped,
      empty,
      unacknowledged,
      bytes,
      elapsedMs: Math.round(this.elapsedMs),
      interrupted: this.stopReason === 'interrupt',
      partitions: this.tally.partitionSummary(),
    }
    if (this.fatal !== undefined) summary.error = {code: this.fatal.code, message: this.fatal.message}
    if (this.transactions !== undefined) summary.transactions = {...this.transactions.outcome}
    if (this.spooler !== undefined) summary.spool = {...this.spooler.stats, dir: this.options.spool!.dir}
    return summary
  }
}

/** A failure that will hit every following message too: stop instead of failing them one by one. */
function isConnectionLoss(error: MetaError): boolean {
  return error.code === 'CONNECTION_FAILED' || error.code === 'CONNECTION_CLOSED' || error.code === 'TIMEOUT'
}
