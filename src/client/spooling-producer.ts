/**
 * A producer that never loses a message to a broker outage: MetaQ's ordered producer with
 * local storage and its async (one-way) producer, over the plain Producer. While the broker
 * takes messages they go straight to it and only the unacknowledged window is kept, in memory:
 * the producer's own unanswered sends, which it keeps in send order (Producer.sendKept), and
 * whose answers go straight to the callbacks; the first failure writes that window, and
 * everything sent after it, to a disk spool (one per topic), which is sent in order once a
 * broker accepts again.
 *
 *   sendCallback ─direct (kept)─▶ Producer ──ack──▶ callback      (healthy: no disk, no copy)
 *        │ outage: the window and what follows ──append──▶ Spool ──pump, in order──▶ Producer
 *        └ false while the producer's window or the spool is full; 'drain' on room
 *
 * - Order: a send that fails in a retriable way (connection lost, timeout, broker busy, disk
 *   full) starts an outage: the unacknowledged window goes to the spool in send order, nothing
 *   new is sent, what is in flight is awaited, then the first unacknowledged record is sent
 *   alone (a probe, with backoff) until the broker takes it; then everything after it follows
 *   in order. Once the spool's last record has left, sends go direct again. So the records of
 *   one partition are stored in the order sent, unless a broker accepted a later one while an
 *   earlier one failed (it does not, when a whole connection fails). A topic is one lane: while
 *   a partition refuses a message pinned or keyed to it, the topic's messages wait in the spool
 *   (they do not move to another partition).
 * - A non-retriable failure (a message the broker refuses) is final: its callback gets it.
 * - Bounded: sendCallback() returns false while the producer's window is full (healthy) or a
 *   spool holds maxBytes (outage); 'drain' follows.
 * - A spool left by an earlier process (kill, crash, give-up) is sent before anything new, and
 *   close() keeps what is still unacknowledged in the spool for the next run.
 * - maxOutageMs: an outage longer than this emits 'error' (GIVE UP) and fails flush(); the
 *   spool keeps everything unacknowledged for the next run.
 * - Delivery is at-least-once: a record whose acknowledgement is lost (crash, a timeout the
 *   broker did store) is sent again. A process killed while the broker is healthy loses its
 *   unacknowledged window (it was never written to disk).
 *
 * Events: 'outage' (topic, error), 'recovered' (topic), 'drain', 'error' (MetaError).
 */
import {Buffer} from 'node:buffer'
import {EventEmitter} from 'node:events'
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {Producer, SendCallback, SendOptions} from './producer.js'
import type {SendResult} from './types.js'
import {defaultSpoolRoot, leftoverSpoolDirs, processSpoolDir, Spool, topicSpoolDir, type SpoolEntry, type SpoolRecord} from './spool/index.js'
import {mergeSpool} from './spool/dirs.js'
import {Queue} from './spool/queue.js'
import type {SpoolingProducerOptions, SpoolingStats} from './spool/types.js'

/** Default most records sent from a spool and not yet acknowledged, per topic. */
export const DEFAULT_SPOOL_IN_FLIGHT = 4096
/** Records appended and not yet sent kept in memory too (bytes, with RECORD_HEAP_BYTES each), so a drain does not read the disk. */
const MEMORY_TAIL_BYTES = 16 * 1024 * 1024
/** What a record kept in memory costs beyond its bytes (its object and payload Buffer), counted against MEMORY_TAIL_BYTES. */
const RECORD_HEAP_BYTES = 160
/**
 * While a spool is being drained, input pauses once this many bytes are stored and not yet
 * sent: the spool grows only during an outage.
 */
const DRAIN_BACKLOG_BYTES = 1024 * 1024
/** First and largest wait before a probe during an outage (ms). */
const PROBE_BACKOFF_MIN_MS = 50
const PROBE_BACKOFF_MAX_MS = 1000
/** Smallest and largest --max-outage (ms): 1 s .. 30 days. */
export const MAX_OUTAGE_FLOOR_MS = 1000
export const MAX_OUTAGE_CEILING_MS = 30 * 24 * 3600 * 1000

/**
 * direct: sending straight to the producer (no spool in the way); sending: draining the spool;
 * outage: waiting to probe; probing: one record out to see whether the broker is back.
 */
type LaneState = 'direct' | 'sending' | 'outage' | 'probing' | 'failed'

interface Lane {
  topic: string
  /** Opened at the first outage, or at start for a spool left behind. */
  spool: Spool | undefined
  state: LaneState
  /** The callback of a direct send written to the spool (handed over); its context is its spool record. */
  spooledResult: (result: SendResult, record: SpoolRecord) => void
  /** Direct sends written to the spool and not answered yet. */
  spooledInFlight: number
  /** Position of the next spool record to send. */
  cursor: number
  /** Spool records appended in this process and not yet sent (a copy of the spool's tail). */
  memory: Queue<SpoolRecord>
  memoryBytes: number
  /** Spool records read from disk, not yet sent. */
  readAhead: Queue<SpoolRecord>
  /** Spool records sent and not answered. */
  inFlight: number
  /** Sends of an older epoch belong to a window cut short by an outage. */
  epoch: number
  callbacks: Map<number, SendCallback>
  /** Callbacks of records appended since the spool's last flush (only with onStored). */
  unstored: SendCallback[]
  outageSinceMs: number
  backoffMs: number
  timer: NodeJS.Timeout | undefined
  pumpScheduled: boolean
}

export class SpoolingProducer extends EventEmitter {
  private readonly options: SpoolingProducerOptions
  private readonly producer: Producer
  private readonly root: string
  private readonly lanes = new Map<string, Lane>()
  /** The lane of the last send (sends usually repeat a topic). */
  private lastLane: Lane | undefined
  private readonly maxInFlight: number
  private waitingRoom = false
  /** The producer's window is full (a direct send returned false): wait for its 'drain'. */
  private producerFull = false
  private failure: MetaError | undefined
  private flushWaiters: Array<{resolve: () => void; reject: (e: Error) => void}> = []
  private flushScheduled = false
  /** checkFlushed() waits for the producer's flush() (direct sends unanswered). */
  private awaitingDirect = false
  private closed = false
  private readonly counts = {spooled: 0, resent: 0, leftover: 0}
  /** Close the producer too (made by createSpoolingProducer, spool/create.ts). */
  ownsProducer = false

  constructor(options: SpoolingProducerOptions) {
    super()
    const outage = options.maxOutageMs
    if (outage !== undefined && (!Number.isInteger(outage) || outage < MAX_OUTAGE_FLOOR_MS || outage > MAX_OUTAGE_CEILING_MS)) {
      throw MetaError.invalidArgument(`invalid max outage ${outage} ms: expected ${MAX_OUTAGE_FLOOR_MS}..${MAX_OUTAGE_CEILING_MS}`)
    }
    this.options = options
    this.producer = options.producer
    this.root = options.spoolDir ?? defaultSpoolRoot()
    this.maxInFlight = options.maxInFlight ?? DEFAULT_SPOOL_IN_FLIGHT
    this.producer.on('drain', () => {
      this.producerFull = false
      this.onRoom()
    })
    this.producer.onKeptFailure = (topic, result) => this.onDirectFailure(topic, result)
  }

  get stats(): SpoolingStats {
    let pending = this.producer.keptCount
    for (const lane of this.lanes.values()) pending += lane.spool?.pending ?? 0
    return {...this.counts, pending}
  }

  /** Records sent and not yet acknowledged. */
  get inFlight(): number {
    let n = this.producer.keptCount
    for (const lane of this.lanes.values()) n += lane.inFlight
    return n
  }

  /** True while some topic's broker is not taking messages (or a spool is being drained). */
  get inOutage(): boolean {
    for (const lane of this.lanes.values()) if (lane.state !== 'direct') return true
    return false
  }

  /** Get ready to send to a topic: a spool an earlier run left for it is sent first, from now on. */
  open(topic: string): void {
    this.lane(topic)
  }

  /** Records of a topic not yet acknowledged. */
  pendingOf(topic: string): number {
    const lane = this.lanes.get(topic)
    return lane === undefined ? 0 : (lane.spool?.pending ?? 0) + this.producer.keptOf(topic)
  }

  /** The spool directory a topic uses, once it has one. */
  spoolDirOf(topic: string): string | undefined {
    return this.lanes.get(topic)?.spool?.dir
  }

  /** Fire and forget (MetaQ's one-way send): false = wait for 'drain'; failures are kept and sent again. */
  send(topic: string, payload: Uint8Array | string, options: SendOptions = {}): boolean {
    return this.sendCallback(topic, payload, options, ignore)
  }

  /**
   * Send a message; the callback gets the acknowledgement (after any outage) or a final
   * refusal. Returns false while the producer's window or the topic's spool is full: stop until
   * 'drain'. Throws INVALID_ARGUMENT for what the producer refuses at once (a bad topic name).
   */
  sendCallback(topic: string, payload: Uint8Array | string, options: SendOptions, callback: SendCallback): boolean {
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'spooling producer is closed')
    let lane = this.lastLane
    if (lane === undefined || lane.topic !== topic) this.lastLane = lane = this.lane(topic)
    if (lane.state === 'direct') {
      // The producer keeps it until answered: an outage hands it to the spool (onDirectFailure).
      const more = this.producer.sendKept(topic, payload, options, callback)
      if (!more) {
        this.producerFull = true
        this.waitingRoom = true
      }
      return more
    }
    const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : asBuffer(payload)
    this.append(lane, {partition: options.partition ?? -1, attribute: options.attribute, payload: data}, callback)
    if (lane.spool!.full || (lane.state === 'sending' && lane.spool!.end - lane.cursor >= DRAIN_BACKLOG_BYTES)) {
      this.waitingRoom = true
      return false
    }
    return true
  }

  /** Resolves when every record is acknowledged; rejects when an outage outlasted maxOutageMs. */
  flush(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    for (const lane of this.lanes.values()) this.flushSpool(lane)
    if (this.stats.pending === 0) return Promise.resolve()
    const flushed = new Promise<void>((resolve, reject) => this.flushWaiters.push({resolve, reject}))
    this.awaitDirect()
    return flushed
  }

  /**
   * Stop sending and save the spools: what is unacknowledged (sent direct and unanswered too)
   * stays in them for the next run. Closes the producer when createSpoolingProducer made it.
   */
  async close(): Promise<void> {
    if (this.closed) return
    for (const lane of this.lanes.values()) {
      if (lane.timer !== undefined) clearTimeout(lane.timer)
      if (lane.state === 'failed') continue
      try {
        this.spoolWindow(lane)
      } catch {} // no spool to keep them in: the summary counts them unacknowledged
    }
    this.closed = true
    for (const lane of this.lanes.values()) lane.spool?.close()
    if (this.ownsProducer) await this.producer.close()
  }

  private lane(topic: string): Lane {
    const known = this.lanes.get(topic)
    if (known !== undefined) return known
    const lane: Lane = {
      topic,
      spool: undefined,
      state: 'direct',
      spooledResult: (result, record) => this.onSpooledResult(lane, record, result),
      spooledInFlight: 0,
      cursor: 0,
      memory: new Queue(),
      memoryBytes: 0,
      readAhead: new Queue(),
      inFlight: 0,
      epoch: 0,
      callbacks: new Map(),
      unstored: [],
      outageSinceMs: 0,
      backoffMs: PROBE_BACKOFF_MIN_MS,
      timer: undefined,
      pumpScheduled: false,
    }
    this.lanes.set(topic, lane)
    const leftovers = leftoverSpoolDirs(this.root, topic)
    if (leftovers.length > 0) {
      const spool = this.openSpool(lane, leftovers[0]!)
      for (const dir of leftovers.slice(1)) mergeSpool(spool, dir)
      this.counts.leftover += spool.pending
      if (spool.pending > 0) {
        lane.state = 'sending'
        lane.cursor = spool.position
        queueMicrotask(() => this.pump(lane))
      }
    }
    return lane
  }

  /** The topic's spool, opened on first need: its own, or one of this process's beside it while another process holds that. */
  private ensureSpool(lane: Lane): Spool {
    if (lane.spool !== undefined) return lane.spool
    let spool: Spool
    try {
      spool = this.openSpool(lane, topicSpoolDir(this.root, lane.topic))
    } catch (error) {
      if (!isMetaError(error) || error.code !== 'DATA_DIR_LOCKED') throw error
      spool = this.openSpool(lane, processSpoolDir(this.root, lane.topic))
    }
    // Left by a process that ended since this one started: it goes first.
    this.counts.leftover += spool.pending
    return spool
  }

  private openSpool(lane: Lane, dir: string): Spool {
    const spool = Spool.open(dir, {maxBytes: this.options.maxBytes})
    spool.on('room', () => this.onRoom())
    lane.spool = spool
    return spool
  }

  /** A direct send failed (before its callback runs): an outage hands the topic's window, this send too, to the spool. */
  private onDirectFailure(topic: string, result: SendResult): void {
    const lane = this.lanes.get(topic)
    if (lane === undefined || this.closed || lane.state !== 'direct') return
    const error = result.error
    // Otherwise refused for good: the callback gets the failure.
    if (error === undefined || isOutage(error)) this.startOutage(lane, error ?? new MetaError('INTERNAL', result.errorMessage ?? 'send failed'))
  }

  /** The answer to a direct send written to the spool since: an acknowledgement counts there; a failure is sent again from it. */
  private onSpooledResult(lane: Lane, record: SpoolRecord, result: SendResult): void {
    lane.spooledInFlight -= 1
    if (this.closed) return
    if (result.success) this.acknowledge(lane, record.position, record.end, result, false)
    this.afterSettle(lane)
    this.checkFlushed()
  }

  /** Store a record at the end of the topic's spool (an outage, or a spool being drained). */
  private append(lane: Lane, entry: SpoolEntry, callback: SendCallback): SpoolRecord {
    const spool = this.ensureSpool(lane)
    const position = spool.append(entry)
    const record: SpoolRecord = {partition: entry.partition, attribute: entry.attribute, payload: entry.payload, position, end: spool.end}
    lane.callbacks.set(position, callback)
    if (this.options.onStored !== undefined) lane.unstored.push(callback)
    this.counts.spooled += 1
    if (lane.memoryBytes < MEMORY_TAIL_BYTES) {
      lane.memory.push(record)
      lane.memoryBytes += record.end - record.position + RECORD_HEAP_BYTES
    }
    this.scheduleFlush()
    return record
  }

  /** An outage began (or close): the direct window, unanswered, goes to the spool in send order. */
  private spoolWindow(lane: Lane): void {
    this.producer.handOver(lane.topic, lane.spooledResult, (payload, attribute, partition, callback) => {
      const record = this.append(lane, {partition, attribute, payload: asBuffer(payload)}, callback)
      lane.spooledInFlight += 1
      return record
    })
    this.flushSpool(lane)
  }

  /** Write what the lane's spool buffers, then tell onStored which records are now on disk. */
  private flushSpool(lane: Lane): void {
    lane.spool?.flush()
    const onStored = this.options.onStored
    if (onStored === undefined || lane.unstored.length === 0) return
    const stored = lane.unstored
    lane.unstored = []
    for (const callback of stored) onStored(callback)
  }

  /** Write what this turn appended, then send: one write(2) per burst of input. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    queueMicrotask(() => {
      this.flushScheduled = false
      if (this.closed) return
      for (const lane of this.lanes.values()) {
        this.flushSpool(lane)
        this.pump(lane)
      }
    })
  }

  /** The next spool record to send at the cursor, from memory or from the disk. */
  private next(lane: Lane): SpoolRecord | undefined {
    const spool = lane.spool!
    for (;;) {
      for (let head = lane.memory.peek(); head !== undefined && head.position < lane.cursor; head = lane.memory.peek()) {
        lane.memoryBytes -= head.end - head.position + RECORD_HEAP_BYTES
        lane.memory.shift()
      }
      for (let head = lane.readAhead.peek(); head !== undefined && head.position < lane.cursor; head = lane.readAhead.peek()) lane.readAhead.shift()
      let record = lane.memory.peek()?.position === lane.cursor ? lane.memory.peek() : lane.readAhead.peek()
      if (record === undefined || record.position !== lane.cursor) {
        if (lane.cursor >= spool.end) return undefined
        lane.readAhead = new Queue(spool.read(lane.cursor))
        record = lane.readAhead.peek()
        if (record === undefined) return undefined
      }
      lane.cursor = record.end
      if (!spool.isAcked(record.position)) return record
    }
  }

  /**
   * Refill the window on the next turn, after every acknowledgement of the current socket read
   * is counted: the sends then go out together (the producer batches what one turn sends).
   */
  private schedulePump(lane: Lane): void {
    if (lane.pumpScheduled) return
    lane.pumpScheduled = true
    setImmediate(() => {
      lane.pumpScheduled = false
      this.pump(lane)
    })
  }

  private pump(lane: Lane): void {
    if (this.closed) return
    if (lane.state !== 'sending' && lane.state !== 'probing') return
    const window = lane.state === 'probing' ? 1 : this.maxInFlight
    while (lane.inFlight < window) {
      const record = this.next(lane)
      if (record === undefined) break
      this.dispatch(lane, record)
    }
    if (lane.state === 'sending' && lane.cursor >= lane.spool!.end) {
      // Every spool record is out: new messages go direct again (behind those still in flight).
      lane.state = 'direct'
      lane.memory = new Queue()
      lane.memoryBytes = 0
      lane.readAhead = new Queue()
    }
    if (this.waitingRoom) this.onRoom()
  }

  private dispatch(lane: Lane, record: SpoolRecord): void {
    const epoch = lane.epoch
    lane.inFlight += 1
    try {
      this.producer.sendCallback(lane.topic, record.payload, sendOptions(record), (result) => this.onResult(lane, record, epoch, result))
    } catch (error) {
      // Refused before sending (a bad topic name): final.
      const err = isMetaError(error) ? error : new MetaError('INTERNAL', (error as Error).message)
      this.onResult(lane, record, epoch, {success: false, topic: lane.topic, partition: record.partition, brokerId: -1, offset: -1, id: undefined, error: err, errorMessage: err.message})
    }
  }

  private onResult(lane: Lane, record: SpoolRecord, epoch: number, result: SendResult): void {
    lane.inFlight -= 1
    if (this.closed) return
    const error = result.error
    if (!result.success && (error === undefined || isOutage(error))) {
      if (epoch === lane.epoch) this.startOutage(lane, error ?? new MetaError('INTERNAL', result.errorMessage ?? 'send failed'))
      this.afterSettle(lane)
      return
    }
    // Acknowledged, or refused for good: either way it leaves the spool.
    this.acknowledge(lane, record.position, record.end, result, true)
    if (lane.state === 'probing' && epoch === lane.epoch) {
      lane.state = 'sending'
      lane.backoffMs = PROBE_BACKOFF_MIN_MS
      this.emit('recovered', lane.topic)
    }
    if (lane.state === 'outage') this.afterSettle(lane)
    else this.schedulePump(lane)
    this.checkFlushed()
  }

  /** A spool record was answered for good: it leaves the spool and its callback runs. */
  private acknowledge(lane: Lane, position: number, end: number, result: SendResult, fromSpool: boolean): void {
    const spool = lane.spool!
    if (spool.isAcked(position)) return
    if (result.success && fromSpool) this.counts.resent += 1
    spool.ack(position, end)
    const callback = lane.callbacks.get(position)
    lane.callbacks.delete(position)
    callback?.(result)
  }

  private startOutage(lane: Lane, error: MetaError): void {
    const first = lane.state === 'sending' || lane.state === 'direct'
    if (lane.state === 'direct') {
      try {
        this.spoolWindow(lane)
      } catch (e) {
        // No spool to keep the window in (a read-only state directory, a full disk): nothing to wait for.
        this.giveUp(lane, new MetaError('STORAGE_ERROR', `cannot keep messages of topic ${lane.topic} in a spool under ${this.root}: ${(e as Error).message}`, {cause: error}))
        return
      }
    }
    lane.epoch += 1
    lane.state = 'outage'
    lane.cursor = lane.spool!.position
    lane.readAhead = new Queue()
    if (!first) return
    lane.outageSinceMs = Date.now()
    this.emit('outage', lane.topic, error)
  }

  /** In an outage, once nothing is in flight: probe after a backoff (or give up past maxOutageMs). */
  private afterSettle(lane: Lane): void {
    if (lane.state !== 'outage' || lane.inFlight > 0 || lane.spooledInFlight > 0 || lane.timer !== undefined) return
    const maxOutage = this.options.maxOutageMs
    if (maxOutage !== undefined && Date.now() - lane.outageSinceMs >= maxOutage) {
      const spool = lane.spool!
      this.giveUp(lane, new MetaError('CONNECTION_FAILED', `gave up after an outage of ${Math.round((Date.now() - lane.outageSinceMs) / 1000)} s (max outage ${maxOutage / 1000} s): ${spool.pending} messages kept in ${spool.dir}`))
      return
    }
    lane.timer = setTimeout(() => {
      lane.timer = undefined
      lane.state = 'probing'
      this.pump(lane)
    }, lane.backoffMs)
    lane.backoffMs = Math.min(lane.backoffMs * 2, PROBE_BACKOFF_MAX_MS)
  }

  private giveUp(lane: Lane, error: MetaError): void {
    lane.state = 'failed'
    this.failure ??= error
    for (const waiter of this.flushWaiters.splice(0)) waiter.reject(error)
    this.emit('error', error)
    // A writer waiting for room must not wait forever.
    this.waitingRoom = false
    this.emit('drain')
  }

  private onRoom(): void {
    if (!this.waitingRoom) return
    for (const lane of this.lanes.values()) {
      if (lane.state === 'failed') continue
      if (lane.state === 'direct' && this.producerFull) return
      const spool = lane.spool
      if (spool !== undefined && (spool.full || (lane.state === 'sending' && spool.end - lane.cursor >= DRAIN_BACKLOG_BYTES / 2))) return
    }
    this.waitingRoom = false
    this.emit('drain')
  }

  private checkFlushed(): void {
    if (this.flushWaiters.length === 0) return
    if (this.producer.keptCount > 0) {
      this.awaitDirect()
      return
    }
    for (const lane of this.lanes.values()) if ((lane.spool?.pending ?? 0) > 0) return
    for (const waiter of this.flushWaiters.splice(0)) waiter.resolve()
  }

  /** Direct sends are answered straight to their callbacks, not through here: the producer says when they all are. */
  private awaitDirect(): void {
    if (this.awaitingDirect || this.producer.keptCount === 0) return
    this.awaitingDirect = true
    void this.producer.flush().then(() => {
      this.awaitingDirect = false
      this.checkFlushed()
    })
  }
}

/** The same bytes as a Buffer (a view, not a copy). */
function asBuffer(payload: Uint8Array): Buffer {
  return Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
}

/** The callback of send(): failures are kept and sent again. */
function ignore(): void {}

function sendOptions(entry: SpoolEntry): SendOptions {
  const options: SendOptions = {attribute: entry.attribute}
  if (entry.partition >= 0) options.partition = entry.partition
  return options
}

/** A failure the broker (or the network) will get over: keep the record and try again later. */
function isOutage(error: MetaError): boolean {
  return error.retriable && error.code !== 'NOT_FOUND'
}
