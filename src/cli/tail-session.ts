/**
 * The engine of `meta tail`: consume, render each fetched batch into one buffer, write it to stdout
 * in one call (a write per line is about twenty times slower into a pipe), and stop for exactly the
 * reasons asked for.
 *
 * - Backpressure: when stdout is full the loop awaits 'drain'; meanwhile the consumer's
 *   bounded queue fills and its fetchers pause, so memory stays bounded.
 * - Stops: every partition reached the end offset it had at start (-e; the consumer pins the
 *   offsets, so new messages never keep it running — kcat #33), -c messages written, no
 *   message for --timeout, stop() (a signal), or the reader closed stdout (EPIPE). All of them
 *   are normal ends (exit 0).
 * - Status lines (`% Reached end of topic t [p] at offset N`) are printed after that
 *   partition's last message was written, not when it was fetched.
 *
 * Consumer groups (`--group`): openConsumer() makes a group member instead of a plain
 * consumer, with the stored offset as the default start; offsets are committed every 5 s
 * for messages written to stdout, and on stop. On joining and on every rebalance a status
 * line says which partitions this member now owns (as kcat -G does). `--broadcast`: every
 * member reads every partition, with its offsets in a local file (MetaQ's broadcast
 * consumer).
 *
 * Before reading: topics that do not exist are named (an error with -e, one warning without),
 * and byte offsets are aligned to message boundaries (src/cli/tail-start.ts).
 *
 * Following (no -e), partitions a topic gains (`meta topic alter --partitions`, a reload) are
 * read from their beginning once the metadata says so: every `rescanMs` (--rescan-interval)
 * a standalone broker is asked for the partition counts again; in a cluster a ZooKeeper watch
 * says it at once. A plain tail adds their fetchers (`% topic t: new partitions 2, 3 …` on
 * stderr), a group rebalances, a broadcast member reads them too.
 */
import {Consumer, createConsumer, partitionKey, type ConsumerBase, type FetchErrorEvent, type PartitionsAddedEvent} from '../client/consumer.js'
import {createGroupConsumer} from '../client/group-consumer.js'
import type {OwnedPartition} from '../client/membership.js'
import {FileOffsetStore} from '../client/offset-stores/file-offset-store.js'
import {createTopology, type Topology} from '../client/topology.js'
import type {RecordCursor} from '../client/fetched-batch.js'
import type {Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import {encodeEnvelope, encodeEnvelopes} from './envelope.js'
import type {MessageFormatter} from './message-format.js'
import type {OffsetSpec} from './offset-spec.js'
import {OutputSink} from './output-sink.js'
import {startSpinner, type Spinner} from './spinner.js'
import {missingTopics, startResolver} from './tail-start.js'

/** How often a following tail asks for topics and partition counts again, unless --rescan-interval says (ms; its bounds are the flag's, commands/tail.ts). */
export const RESCAN_DEFAULT_MS = 5_000

export interface TailOptions {
  /** host:port of a standalone broker … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode). */
  zk?: string
  zkRoot?: string
  /** Read as a member of this consumer group (partitions shared, offsets committed). */
  group?: {
    name: string
    /** Partitions without a committed offset start at the end. */
    fromLatest?: boolean
    /** Do not commit offsets (peek). */
    noCommit?: boolean
    sessionTimeoutMs?: number
    /** Read every partition (MetaQ's broadcast consumer); offsets in this local file (default ~/.meta_offsets). */
    broadcast?: {offsetsFile?: string}
  }
  topics: string[]
  /** Partition numbers (default: all). */
  partitions?: number[]
  /** Only messages matching this filter expression, selected by the broker (--filter). */
  filter?: string
  offset: OffsetSpec
  /** Stop when every partition reached the end offset it had at start (-e). */
  exitAtEnd?: boolean
  /** Stop after this many messages. */
  count?: number
  /** Stop when no message arrived for this long. */
  idleTimeoutMs?: number
  /** Following: how often the partition counts are asked again (standalone; default RESCAN_DEFAULT_MS). */
  rescanMs?: number
  /** How each message is written: a compiled -f format, or JSON envelopes (-J). */
  output: {kind: 'format'; formatter: MessageFormatter} | {kind: 'jsonl'}
  /** One write per message instead of one per batch (-u). */
  unbuffered?: boolean
  /** Status lines for stderr (omit for -q). */
  status?: (line: string) => void
  /** A spinner while waiting for a group assignment (a terminal, not -q). */
  spinner?: boolean
  logger?: Logger
  stdout?: NodeJS.WritableStream
}

type TailStopReason = 'end' | 'count' | 'timeout' | 'signal' | 'closed'

interface TailResult {
  /** Messages written. */
  messages: number
  reason: TailStopReason
}

interface PartitionEnd {
  topic: string
  brokerId: number
  partition: number
  offset: number
}

export class TailSession {
  private readonly options: TailOptions
  private readonly sink: OutputSink
  private consumer: ConsumerBase | undefined
  private written = 0
  private stopReason: TailStopReason | undefined
  /** Next offset after the last message written, per partition key. */
  private readonly positions = new Map<string, number>()
  /** Partitions the consumer finished whose last messages are not written yet. */
  private readonly pendingEnds = new Map<string, PartitionEnd>()
  private idleTimer: NodeJS.Timeout | undefined
  private waiting: Spinner | undefined
  /** Partitions the broker answered "closed" for (keys), each said once on stderr. */
  private readonly closedPartitions = new Set<string>()
  /** Partitions whose end was reported (written up to their end offset), with -e. */
  private readonly endsReported = new Set<string>()
  /** An error that ends the run once the loop has stopped (a closed partition named with -p and -e). */
  private failure: MetaError | undefined

  constructor(options: TailOptions) {
    this.options = options
    this.sink = new OutputSink(options.stdout ?? process.stdout)
    this.sink.onClosed = () => this.stop('closed')
  }

  /** Messages written so far. */
  get messages(): number {
    return this.written
  }

  /** Consume until a stop; rejects for start failures (unreachable broker, bad partition, unknown topic with -e). */
  async run(): Promise<TailResult> {
    const o = this.options
    // With -e the partitions are the ones of the start: no refresh.
    const refreshMs = o.exitAtEnd ? 0 : (o.rescanMs ?? RESCAN_DEFAULT_MS)
    const topology = createTopology({broker: o.broker, zk: o.zk, zkRoot: o.zkRoot, logger: o.logger, refreshMs})
    try {
      return await this.consume(topology)
    } finally {
      this.waiting?.stop()
      await topology.close()
    }
  }

  private async consume(topology: Topology): Promise<TailResult> {
    await this.checkTopics(topology)
    const consumer = this.openConsumer(topology)
    this.consumer = consumer
    if (this.stopReason !== undefined) await consumer.stop()
    try {
      // The idle clock starts once partitions are assigned: a slow connect is not idleness.
      await consumer.start()
      this.armIdleTimer()
      for await (const batch of consumer.batches()) {
        if (this.stopReason !== undefined) break
        this.idleTimer?.refresh()
        const left = this.options.count === undefined ? Number.POSITIVE_INFINITY : this.options.count - this.written
        const records = batch.records(left)
        await this.write(records)
        this.idleTimer?.refresh() // a slow reader is not idleness
        this.written += records.count
        const key = partitionKey(batch.topic, batch)
        // The cursor is at the last record written.
        this.positions.set(key, records.nextOffset)
        // Rendered into the output's own buffer: the body's memory can take the next get's answer.
        batch.release()
        this.reportEndIfWritten(key)
        if (this.written >= (this.options.count ?? Number.POSITIVE_INFINITY)) this.stop('count')
      }
      this.stopReason ??= 'end'
    } catch (error) {
      // Stopped while still connecting (Ctrl-C, --timeout): the start fails with
      // CONNECTION_CLOSED because we closed it; that is the stop we asked for, not an error.
      if (this.stopReason === undefined) throw error
    } finally {
      if (this.idleTimer !== undefined) clearTimeout(this.idleTimer)
      await consumer.stop()
    }
    if (this.stopReason === 'end' && this.failure === undefined) for (const end of this.pendingEnds.values()) this.reportEnd(end)
    await this.sink.flush()
    this.sink.dispose()
    if (this.failure !== undefined) throw this.failure
    return {messages: this.written, reason: this.stopReason}
  }

  /** Stop fetching (a signal, the idle timeout); run() then flushes and resolves. */
  stop(reason: TailStopReason = 'signal'): void {
    if (this.stopReason !== undefined) return
    this.stopReason = reason
    void this.consumer?.stop()
  }

  /** Topics that do not exist: an error with -e (nothing would ever be read), else one warning each. */
  private async checkTopics(topology: Topology): Promise<void> {
    const o = this.options
    const missing = await missingTopics(topology, {broker: o.broker, zk: o.zk, zkRoot: o.zkRoot}, o.topics)
    if (missing.length === 0) return
    if (o.exitAtEnd) {
      if (missing.length === 1) throw missing[0]
      const error = new MetaError('NOT_FOUND', missing.map((e) => e.message).join('; ')) as MetaError & {hint?: string}
      error.hint = missing
        .map((e) => e.hint)
        .filter(Boolean)
        .join('; ')
      throw error
    }
    for (const e of missing) o.status?.(`% ${e.message} (yet): waiting for it${e.hint === undefined ? '' : `; ${e.hint}`}`)
  }

  private openConsumer(topology: Topology): ConsumerBase {
    const o = this.options
    const resolve = startResolver(o.offset, {report: o.status, cluster: o.zk !== undefined})
    const common = {
      topology,
      topics: o.topics,
      stopAtEnd: o.exitAtEnd,
      // A 1 MiB fetch of small messages is ~10 MB of message objects: 8 batches keep stdout
      // busy while bounding memory when the reader is slow (the default 64 could hold 640 MB).
      maxBufferedBatches: 8,
      filter: o.filter,
      logger: o.logger,
    }
    const consumer: ConsumerBase =
      o.group === undefined
        ? createConsumer({...common, partitions: o.partitions, from: async (topic, p, conn) => (await resolve(topic, p, conn)) ?? 'earliest'})
        : createGroupConsumer({
            ...common,
            group: o.group.name,
            fromLatest: o.group.fromLatest,
            autoCommit: !o.group.noCommit,
            sessionTimeoutMs: o.group.sessionTimeoutMs,
            broadcast: o.group.broadcast !== undefined,
            offsetStore: o.group.broadcast === undefined ? undefined : new FileOffsetStore({path: o.group.broadcast.offsetsFile}),
            from: o.offset.kind === 'stored' ? undefined : async (topic, p, conn) => (await resolve(topic, p, conn)) ?? 'earliest',
          })
    if (o.group !== undefined) this.watchAssignments(consumer, o.group.name)
    consumer.on('partitionEnd', (end: PartitionEnd) => this.onPartitionEnd(end))
    consumer.on('partitionsAdded', (added: PartitionsAddedEvent) => {
      const names = added.partitions.map((p) => (o.zk === undefined ? `${p.partition}` : `${p.brokerId}-${p.partition}`))
      o.status?.(`% topic ${added.topic}: new partition${names.length === 1 ? '' : 's'} ${names.join(', ')}: reading from the beginning`)
    })
    consumer.on('fetchError', (event: FetchErrorEvent) => {
      if (event.error.code === 'PARTITION_CLOSED') this.onClosedPartition(event)
    })
    // Retriable fetch errors are logged (once per run of failures) by the consumer itself;
    // fatal ones end the loop in run() with the error.
    return consumer
  }

  /**
   * `% group billing: assigned orders [0], orders [1]` on joining and after every rebalance,
   * with a spinner on a terminal until the first assignment.
   */
  private watchAssignments(consumer: ConsumerBase, group: string): void {
    const o = this.options
    const cluster = o.zk !== undefined
    if (o.spinner) this.waiting = startSpinner(`joining group ${group}`)
    let first = true
    const name = (p: OwnedPartition) => `${p.topic} [${cluster ? `${p.partition.brokerId}-${p.partition.partition}` : p.partition.partition}]`
    consumer.on('rebalance', (r: {assigned: OwnedPartition[]; revoked: OwnedPartition[]}) => {
      this.waiting?.stop()
      const assigned = r.assigned.length === 0 ? 'no partitions (the other members own them all)' : r.assigned.map(name).join(', ')
      const revoked = first || r.revoked.length === 0 ? '' : ` (revoked ${r.revoked.map(name).join(', ')})`
      o.status?.(`% group ${group}${first ? '' : ' rebalanced'}: assigned ${assigned}${revoked}`)
      first = false
    })
  }

  /** Render the records (straight from the fetched body) and write them: one write, or one per message with -u. */
  private write(records: RecordCursor): Promise<void> | undefined {
    const output = this.options.output
    if (!this.options.unbuffered) {
      return this.sink.write(output.kind === 'jsonl' ? encodeEnvelopes(records) : output.formatter.format(records))
    }
    return this.writeEach(records)
  }

  private async writeEach(records: RecordCursor): Promise<void> {
    const output = this.options.output
    while (records.next()) {
      if (this.sink.closed) return
      const pending = this.sink.write(output.kind === 'jsonl' ? encodeEnvelope(records) : output.formatter.formatCurrent(records))
      if (pending !== undefined) await pending
    }
  }

  private armIdleTimer(): void {
    const idleMs = this.options.idleTimeoutMs
    if (idleMs === undefined) return
    this.idleTimer = setTimeout(() => this.stop('timeout'), idleMs)
  }

  private onPartitionEnd(end: PartitionEnd): void {
    const key = partitionKey(end.topic, end)
    const position = this.positions.get(key)
    const nothingToWrite = position === undefined ? this.startOffset() === end.offset : position >= end.offset
    if (nothingToWrite) this.reportEnd(end)
    else this.pendingEnds.set(key, end)
  }

  private reportEndIfWritten(key: string): void {
    const end = this.pendingEnds.get(key)
    if (end === undefined || (this.positions.get(key) ?? -1) < end.offset) return
    this.pendingEnds.delete(key)
    this.reportEnd(end)
  }

  private reportEnd(end: PartitionEnd): void {
    // After the reader closed stdout nothing more is said: the pipeline is over.
    if (this.stopReason === 'closed') return
    this.endsReported.add(partitionKey(end.topic, end))
    this.options.status?.(`% Reached end of topic ${end.topic} [${end.partition}] at offset ${end.offset}`)
    this.stopIfOnlyClosedLeft()
  }

  /**
   * The broker answers "closed" for a partition (`meta partitions close`): the consumer would
   * ask again forever, so tail decides. A partition named with -p and -e is an error (exit 1:
   * what was asked cannot be read); otherwise it is said once on stderr, and with -e tail ends
   * (exit 0) once every other partition reached its end. Without -e tail keeps waiting for the
   * partition to reopen, as it waits for a topic that does not exist yet.
   */
  private onClosedPartition(event: FetchErrorEvent): void {
    const o = this.options
    const key = partitionKey(event.topic, event)
    if (this.closedPartitions.has(key)) return
    this.closedPartitions.add(key)
    const name = `${event.topic} [${o.zk === undefined ? event.partition : `${event.brokerId}-${event.partition}`}]`
    if (o.exitAtEnd && o.partitions !== undefined) {
      const where = o.zk === undefined ? `broker ${o.broker}` : `broker ${event.brokerId}`
      const error = new MetaError(
        'PARTITION_CLOSED',
        `partition ${event.partition} of topic "${event.topic}" is closed on ${where}: it cannot be read to its end`,
        {
          details: {topic: event.topic, partition: event.partition},
        },
      ) as MetaError & {hint?: string}
      error.hint = `reopen it with: meta partitions open -t ${event.topic} --start ${event.partition} --end ${event.partition}, or leave it out of -p`
      this.failure ??= error
      this.stop('end')
      return
    }
    o.status?.(`% topic ${name} is closed${o.exitAtEnd ? ': skipping it' : ': waiting for it to reopen'}`)
    this.stopIfOnlyClosedLeft()
  }

  /** With -e: stop once every partition either reached its end (all written) or is closed. */
  private stopIfOnlyClosedLeft(): void {
    if (!this.options.exitAtEnd || this.closedPartitions.size === 0 || !(this.consumer instanceof Consumer)) return
    const total = this.consumer.stopOffsets().size
    if (total > 0 && this.endsReported.size + this.closedPartitions.size >= total) this.stop('end')
  }

  /** Where partitions start, when it is one number for all. */
  private startOffset(): number | undefined {
    const spec = this.options.offset
    return spec.kind === 'beginning' ? 0 : spec.kind === 'offset' ? spec.offset : undefined
  }
}
