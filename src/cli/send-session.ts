/**
 * The engine of `meta send`: reads input, turns records into messages, keeps the producer's
 * window full without letting memory grow, and counts what was acknowledged.
 *
 *   stdin ──'data'──▶ RecordSplitter ──record──▶ toMessage ──▶ producer.sendCallback
 *     ▲                    │ handler returns false when the window is full,             │
 *     └── pause/resume ◀───┘ the rate limit is reached, or input must stop   'drain' ◀──┘
 *
 * - Input: stdin split at a delimiter (one message per line by default), or file arguments,
 *   each file one whole message (`-` among them reads stdin, split as usual). With file
 *   arguments stdin is never touched (natscli #1426). With envelopes (-J) a file is read as
 *   JSON lines, since an envelope is a line.
 * - Backpressure: the splitter stops right after the record that filled the window; the
 *   producer's 'drain' resumes it on the next turn (so a socket read of many acks refills the
 *   window in one go rather than one message per ack).
 * - Stops: end of input, -c reached, interrupt(), an oversize record with --oversize fail, or
 *   a send that failed for connection loss after the producer's retries. In every case what is
 *   in flight is awaited (after interrupt() for at most graceMs), then the summary is final and
 *   late callbacks are ignored.
 */
import {createReadStream} from 'node:fs'
import {stat} from 'node:fs/promises'
import type {Stats} from 'node:fs'
import {performance} from 'node:perf_hooks'
import {createProducer, type Producer} from '../client/producer.js'
import {createTopology, type Topology} from '../client/topology.js'
import type {SelectorName} from '../client/partition-selector.js'
import type {SendResult} from '../client/types.js'
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import {decodeEnvelope} from './envelope.js'
import {ProblemReporter} from './problems.js'
import {RecordSplitter} from './splitter.js'
import {createSendSpooler, type SendSpoolOptions} from './send-spool.js'
import type {SpoolingProducer, SpoolingStats} from '../client/spooling-producer.js'

/** MetaQ's default maxTransferSize (1 MiB) minus a record header: used when the broker does not say. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 - 20
/** How long an interrupted send waits for acknowledgements of what is in flight. */
export const INTERRUPT_GRACE_MS = 5000

export type OversizePolicy = 'skip' | 'fail'

export interface SendSessionOptions {
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
  /** Keep what the broker cannot take now in a disk spool (ignored with `transaction`). */
  spool?: SendSpoolOptions
}

/** What the transactions of `meta send --transaction` did. */
export interface TransactionsSummary {
  /** Transactions committed (their messages are counted in `sent`). */
  committed: number
  /** Transactions rolled back, and the messages acknowledged into them that are now gone. */
  rolledBack: number
  rolledBackMessages: number
}

export interface PartitionSummary {
  /** Byte offset of the first and last acknowledged message. */
  first: number
  last: number
  count: number
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

/** One input: stdin or a file. Labels say where a problem happened. */
interface Source {
  name: string
  label(index: number): string
}

type StopReason = 'count' | 'interrupt' | 'oversize' | 'connection' | 'transaction'

export class SendSession {
  private readonly options: SendSessionOptions
  private readonly producer: Producer
  private readonly topology: Topology
  readonly maxMessageBytes: number
  private readonly problems: ProblemReporter
  private readonly fixedPartition: number | undefined
  private readonly maxRecordBytes: number

  private sentCount = 0
  private failedCount = 0
  private skippedCount = 0
  private emptyCount = 0
  private attempted = 0
  private byteCount = 0
  private readonly partitionStats = new Map<string, Map<number, PartitionSummary>>()
  private startMs = 0
  private finalized = false
  private stopReason: StopReason | undefined
  private fatal: MetaError | undefined

  private waitingDrain = false
  private waitingRate = false
  /** --transaction: messages acknowledged into the open transaction, per topic and partition. */
  private txPending = new Map<string, {topic: string; partition: number; count: number; bytes: number}>()
  private txMessages = 0
  private txOutcome: TransactionsSummary | undefined
  private waitingCommit = false
  private committing: Promise<void> | undefined
  private resumeScheduled = false
  private tokens = 1
  private lastRefillMs = 0
  /** Continue the current input after a pause. */
  private resumeInput: (() => void) | undefined
  /** End the current input now. */
  private stopInput: (() => void) | undefined
  private stdinStream: NodeJS.ReadableStream | undefined
  private stdinEnded = false
  private graceTimer: NodeJS.Timeout | undefined
  private graceOver: (() => void) | undefined
  private readonly graceElapsed: Promise<void>
  /** With a spool, messages go through it. */
  private spooler: SpoolingProducer | undefined

  private constructor(options: SendSessionOptions, topology: Topology, maxMessageBytes: number) {
    this.options = options
    this.topology = topology
    this.maxMessageBytes = maxMessageBytes
    this.fixedPartition = options.partition !== undefined && options.partition >= 0 ? options.partition : undefined
    this.problems = new ProblemReporter(options.report)
    // Only a bound on memory: anything longer cannot be a valid message. A JSON envelope may be
    // up to 6× its payload (\u00XX escapes) plus its other fields.
    this.maxRecordBytes = options.envelopes
      ? 6 * maxMessageBytes + 64 * 1024
      : maxMessageBytes + (options.keyDelimiter?.length ?? 0)
    this.producer = createProducer({
      topology,
      maxInFlight: options.maxInFlight ?? 4096,
      selector: options.partitioner ?? 'round-robin',
      sendTimeoutMs: options.ackTimeoutMs,
      retries: options.retries,
      maxMessageBytes,
      logger: options.logger,
    })
    if (options.transaction) this.txOutcome = {committed: 0, rolledBack: 0, rolledBackMessages: 0}
    else if (options.spool !== undefined) {
      this.spooler = createSendSpooler(this.producer, options.spool, options.maxInFlight)
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
    for (const file of options.files ?? []) if (file !== '-') await checkFile(file)
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
          throw MetaError.invalidArgument(
            `invalid partition "${wanted}" for topic "${options.topic}": expected 0..${partitions.length - 1}`,
          )
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
    return this.sentCount
  }

  get inFlight(): number {
    return this.spooler?.inFlight ?? this.producer.inFlight
  }

  /** With a spool: messages in it, not yet acknowledged. */
  get spooled(): number | undefined {
    return this.spooler?.stats.pending
  }

  get elapsedMs(): number {
    return this.startMs === 0 ? 0 : performance.now() - this.startMs
  }

  /** Read every input, send, wait for acknowledgements; resolves with the final counts. */
  async run(): Promise<SendSummary> {
    this.startMs = performance.now()
    this.lastRefillMs = this.startMs
    const files = this.options.files ?? []
    if (this.txOutcome !== undefined) this.producer.beginTransaction()
    // A spool left behind for this topic is sent first.
    if (this.spooler !== undefined && this.options.topic !== undefined) this.spooler.open(this.options.topic)
    try {
      if (files.length === 0) await this.readStream(this.stdin(), {name: 'stdin', label: (i) => `line ${i}`})
      for (const file of files) {
        if (this.stopReason !== undefined) break
        if (file === '-') await this.readStream(this.stdin(), {name: 'stdin', label: (i) => `stdin line ${i}`})
        else if (this.options.envelopes) await this.readStream(createReadStream(file), {name: file, label: (i) => `${file}:${i}`})
        else await this.sendFile(file)
      }
    } finally {
      this.releaseStdin()
    }
    const flushed = this.spooler === undefined ? this.producer.flush() : this.spooler.flush().catch((error: MetaError) => void (this.fatal ??= error))
    await Promise.race([flushed, this.graceElapsed])
    await this.endTransaction()
    return this.finish()
  }

  /** --transaction at the end: commit if everything went well, else roll back. */
  private async endTransaction(): Promise<void> {
    if (this.txOutcome === undefined) return
    await this.committing
    if (this.producer.currentTransaction === undefined) return
    const clean = this.failedCount === 0 && this.skippedCount === 0 && this.fatal === undefined && (this.stopReason === undefined || this.stopReason === 'count')
    if (clean) await this.commitTransaction(false)
    else await this.rollbackTransaction()
  }

  /** Commit the open transaction; with `next`, begin another one after it. */
  private async commitTransaction(next: boolean): Promise<void> {
    try {
      const committed = await this.producer.commit()
      this.txOutcome!.committed += 1
      for (const p of this.txPending.values()) {
        this.sentCount += p.count
        this.byteCount += p.bytes
      }
      this.txPending.clear()
      // Offsets are known only now (a MetaQ broker does not say them: -1).
      for (const p of committed.partitions) this.countRange(p.topic, p.partition, p.firstOffset ?? -1, p.lastOffset ?? -1, p.messages)
      if (next && this.stopReason === undefined) this.producer.beginTransaction()
    } catch (error) {
      const err = isMetaError(error) ? error : new MetaError('INTERNAL', (error as Error).message)
      this.fatal ??= new MetaError(err.code, `transaction not committed: ${err.message}`, {cause: err})
      this.dropPending()
      this.stop('transaction')
    }
  }

  private async rollbackTransaction(): Promise<void> {
    try {
      await this.producer.rollback()
    } catch (error) {
      // Unanswered: the broker rolls it back when the connection closes or the transaction times out.
      this.problems.report({where: 'transaction', code: isMetaError(error) ? error.code : 'ERROR', message: `rollback failed: ${(error as Error).message}`})
    }
    this.dropPending()
  }

  private dropPending(): void {
    this.txOutcome!.rolledBack += 1
    for (const p of this.txPending.values()) this.txOutcome!.rolledBackMessages += p.count
    this.txPending.clear()
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
    this.spooler?.close()
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

  private stdin(): NodeJS.ReadableStream {
    this.stdinStream ??= (this.options.stdin ?? (() => process.stdin))()
    return this.stdinStream
  }

  /** Let the process exit when stdin was left unread (-c, a stop, an interrupt). */
  private releaseStdin(): void {
    const stream = this.stdinStream as (NodeJS.ReadableStream & {destroy?: () => void}) | undefined
    if (stream !== undefined && !this.stdinEnded) stream.destroy?.()
  }

  private readStream(stream: NodeJS.ReadableStream, source: Source): Promise<void> {
    return new Promise((resolve, reject) => {
      let settled = false
      const splitter = new RecordSplitter({
        delimiter: this.options.envelopes ? NEWLINE : this.options.delimiter ?? NEWLINE,
        maxRecordBytes: this.maxRecordBytes,
        onRecord: (record, size, index) => this.onRecord(record, size, source, index),
        onDone: () => settle(),
      })
      const onData = (chunk: Buffer) => {
        if (!splitter.push(chunk)) stream.pause()
      }
      const onEnd = () => {
        if (stream === this.stdinStream) this.stdinEnded = true
        splitter.end()
      }
      const onError = (error: Error) => settle(error)
      const settle = (error?: Error) => {
        if (settled) return
        settled = true
        stream.off('data', onData)
        stream.off('end', onEnd)
        stream.off('error', onError)
        this.resumeInput = undefined
        this.stopInput = undefined
        if (stream !== this.stdinStream) (stream as NodeJS.ReadableStream & {destroy(): void}).destroy()
        if (error === undefined) resolve()
        else reject(inputError(source, error))
      }
      this.resumeInput = () => {
        if (splitter.resume()) stream.resume()
      }
      this.stopInput = () => {
        stream.pause()
        settle()
      }
      stream.on('data', onData)
      stream.on('end', onEnd)
      stream.on('error', onError)
      if (this.stopReason !== undefined) this.stopInput()
    })
  }

  /** A file argument: one whole message (checked for size before it is read). */
  private async sendFile(file: string): Promise<void> {
    const source: Source = {name: file, label: () => `file ${file}`}
    const info = await checkFile(file)
    if (info.size > this.maxRecordBytes) {
      this.oversize(source.label(1), info.size)
      return
    }
    const chunks: Buffer[] = []
    for await (const chunk of createReadStream(file)) chunks.push(chunk as Buffer)
    const data = Buffer.concat(chunks)
    if (!this.onRecord(data, data.length, source, 1, true)) await this.whenResumed()
  }

  /** Resolve when the paused input may continue (or must stop). */
  private whenResumed(): Promise<void> {
    if (this.stopReason !== undefined) return Promise.resolve()
    return new Promise((resolve) => {
      const done = () => {
        this.resumeInput = undefined
        this.stopInput = undefined
        resolve()
      }
      this.resumeInput = done
      this.stopInput = done
    })
  }

  /** One record of input; returns false to pause the input. */
  private onRecord(record: Buffer | undefined, size: number, source: Source, index: number, wholeFile = false): boolean {
    if (this.stopReason !== undefined) return false
    if (record === undefined) {
      this.oversize(source.label(index), size)
      return this.stopReason === undefined
    }
    if (size === 0 && !wholeFile) {
      this.emptyCount += 1
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
        return this.skip(source.label(index), error)
      }
      topic ??= envelope.topic
      if (this.options.partition === undefined) partition = envelope.partition
      attribute ??= envelope.attribute
      payload = envelope.payload
      if (topic === undefined) {
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
      return this.stopReason === undefined
    }
    return this.send(topic!, payload, attribute, partition, source, index)
  }

  private send(topic: string, payload: Buffer, attribute: string | undefined, partition: number | undefined, source: Source, index: number): boolean {
    const bytes = payload.length
    let more: boolean
    try {
      more = (this.spooler ?? this.producer).sendCallback(topic, payload, {attribute, partition}, (result) => this.onAck(result, source, index, bytes))
    } catch (error) {
      return this.skip(source.label(index), error) // a bad topic name in an envelope
    }
    this.attempted += 1
    if (this.options.count !== undefined && this.attempted >= this.options.count) {
      this.stop('count')
      return false
    }
    if (this.options.transactionSize !== undefined && ++this.txMessages >= this.options.transactionSize) {
      // Commit this part before reading on.
      this.txMessages = 0
      this.waitingCommit = true
      this.committing = this.commitTransaction(true).finally(() => {
        this.committing = undefined
        this.waitingCommit = false
        this.scheduleResume()
      })
      return false
    }
    if (!more) {
      this.waitingDrain = true
      return false
    }
    return this.options.rate === undefined || this.takeToken()
  }

  private onAck(result: SendResult, source: Source, index: number, bytes: number): void {
    if (this.finalized) return
    if (result.success && this.txOutcome !== undefined) {
      const key = `${result.topic}\0${result.partition}`
      const pending = this.txPending.get(key)
      if (pending === undefined) this.txPending.set(key, {topic: result.topic, partition: result.partition, count: 1, bytes})
      else {
        pending.count += 1
        pending.bytes += bytes
      }
      return
    }
    if (result.success) {
      this.sentCount += 1
      this.byteCount += bytes
      this.countPartition(result.topic, result.partition, result.offset)
      return
    }
    this.failedCount += 1
    const error = result.error ?? new MetaError('INTERNAL', result.errorMessage ?? 'send failed')
    this.problems.report({where: source.label(index), code: error.code, message: `send failed: ${error.message}`})
    if (isConnectionLoss(error) && this.stopReason === undefined) {
      this.fatal = new MetaError(error.code, `giving up: ${error.message}`, {cause: error})
      this.stop('connection')
    }
  }

  /** A committed transaction's batch in one partition: its first and last offsets (-1 unknown). */
  private countRange(topic: string, partition: number, first: number, last: number, count: number): void {
    let partitions = this.partitionStats.get(topic)
    if (partitions === undefined) this.partitionStats.set(topic, (partitions = new Map()))
    const stats = partitions.get(partition)
    if (stats === undefined) {
      partitions.set(partition, {first, last, count})
      return
    }
    if (first >= 0 && (stats.first < 0 || first < stats.first)) stats.first = first
    if (last > stats.last) stats.last = last
    stats.count += count
  }

  private countPartition(topic: string, partition: number, offset: number): void {
    let partitions = this.partitionStats.get(topic)
    if (partitions === undefined) {
      partitions = new Map()
      this.partitionStats.set(topic, partitions)
    }
    const stats = partitions.get(partition)
    if (stats === undefined) {
      partitions.set(partition, {first: offset, last: offset, count: 1})
      return
    }
    if (offset < stats.first) stats.first = offset
    if (offset > stats.last) stats.last = offset
    stats.count += 1
  }

  private oversize(where: string, size: number): void {
    const message = `message of ${size} bytes is larger than the broker's limit of ${this.maxMessageBytes} bytes`
    if (this.options.oversize === 'fail') {
      this.skippedCount += 1
      this.fatal = MetaError.invalidArgument(`${where}: ${message} (--oversize fail: stopped)`, {size})
      this.stop('oversize')
      return
    }
    this.skippedCount += 1
    this.problems.report({where, code: 'INVALID_ARGUMENT', message: `${message}: skipped`})
  }

  private skip(where: string, error: unknown): boolean {
    this.skippedCount += 1
    const code = isMetaError(error) ? error.code : 'ERROR'
    this.problems.report({where, code, message: `${(error as Error).message}: skipped`})
    return this.stopReason === undefined
  }

  private stop(reason: StopReason): void {
    if (this.stopReason !== undefined) return
    this.stopReason = reason
    this.stopInput?.()
  }

  /** Rate limit: a token bucket holding at most 100 ms of messages. False = pause until refilled. */
  private takeToken(): boolean {
    const rate = this.options.rate!
    const now = performance.now()
    this.tokens = Math.min(Math.max(1, rate / 10), this.tokens + ((now - this.lastRefillMs) * rate) / 1000)
    this.lastRefillMs = now
    this.tokens -= 1
    if (this.tokens >= 0) return true
    this.waitingRate = true
    const waitMs = Math.max(1, Math.ceil((-this.tokens * 1000) / rate))
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
      this.resumeInput?.()
    })
  }

  private finish(): SendSummary {
    const unacknowledged = this.spooler?.stats.pending ?? this.producer.inFlight
    this.finalized = true
    const summary: SendSummary = {
      sent: this.sentCount,
      failed: this.failedCount,
      skipped: this.skippedCount,
      empty: this.emptyCount,
      unacknowledged,
      bytes: this.byteCount,
      elapsedMs: Math.round(this.elapsedMs),
      interrupted: this.stopReason === 'interrupt',
      partitions: this.partitionSummary(),
    }
    if (this.fatal !== undefined) summary.error = {code: this.fatal.code, message: this.fatal.message}
    if (this.txOutcome !== undefined) summary.transactions = {...this.txOutcome}
    if (this.spooler !== undefined) summary.spool = {...this.spooler.stats, dir: this.options.spool!.dir}
    return summary
  }

  private partitionSummary(): Record<string, PartitionSummary> {
    const out: Record<string, PartitionSummary> = {}
    const several = this.partitionStats.size > 1
    for (const [topic, partitions] of this.partitionStats) {
      for (const p of [...partitions.keys()].sort((a, b) => a - b)) out[several ? `${topic}:${p}` : String(p)] = partitions.get(p)!
    }
    return out
  }
}

const NEWLINE = Buffer.from('\n')

/** A failure that will hit every following message too: stop instead of failing them one by one. */
function isConnectionLoss(error: MetaError): boolean {
  return error.code === 'CONNECTION_FAILED' || error.code === 'CONNECTION_CLOSED' || error.code === 'TIMEOUT'
}

/** A file argument must be a readable regular file: checked before anything is sent. */
async function checkFile(file: string): Promise<Stats> {
  const info = await stat(file).catch((error: NodeJS.ErrnoException) => {
    throw inputError({name: file, label: () => file}, error)
  })
  if (!info.isFile()) throw MetaError.invalidArgument(`cannot send "${file}": not a regular file`)
  return info
}

function inputError(source: Source, error: NodeJS.ErrnoException): MetaError {
  const reasons: Record<string, string> = {ENOENT: 'no such file', EACCES: 'permission denied', EISDIR: 'is a directory'}
  const reason = (error.code && reasons[error.code]) ?? error.message
  return MetaError.invalidArgument(`cannot read "${source.name}": ${reason}`, {cause: error.code})
}
