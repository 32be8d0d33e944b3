/**
 * A producer that never loses a message to a broker outage: every message is appended to a
 * disk spool (spool/) before it counts as taken, sent from there in order, and removed once
 * the broker acknowledged it. MetaQ's ordered producer with local storage and its async
 * (one-way) producer, over the plain Producer.
 *
 *   sendCallback ──append──▶ Spool (one per topic) ──pump, window of maxInFlight──▶ Producer
 *        ▲ false while the spool is full                 ▲ cursor back to the first
 *        └──────────── 'drain' on room ◀── ack ──────────┘ unacknowledged record on an outage
 *
 * - Order: records are sent in spool order. A send that fails in a retriable way (connection
 *   lost, timeout, broker busy, disk full) starts an outage: nothing new is sent, what is in
 *   flight is awaited, then the first unacknowledged record is sent alone (a probe, with
 *   backoff) until the broker takes it; then everything after it follows in order. So the
 *   records of one partition are stored in the order written, unless a broker accepted a later
 *   one while an earlier one failed (it does not, when a whole connection fails).
 * - A non-retriable failure (a message the broker refuses) is final: the record leaves the
 *   spool and its callback gets the failure.
 * - Bounded: sendCallback() returns false while a spool holds maxBytes; 'drain' follows.
 * - A spool left by an earlier process (kill, crash, give-up) is sent before anything new.
 * - maxOutageMs: an outage longer than this emits 'error' (GIVE UP) and fails flush(); the
 *   spool keeps everything unacknowledged for the next run.
 * - Delivery is at-least-once: a record whose acknowledgement is lost (crash, a timeout the
 *   broker did store) is sent again.
 *
 * Events: 'outage' (topic, error), 'recovered' (topic), 'drain', 'error' (MetaError).
 */
import {EventEmitter} from 'node:events'
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {Producer, SendCallback, SendOptions} from './producer.js'
import type {SendResult} from './types.js'
import {Spool, topicSpoolDir, type SpoolRecord} from './spool/index.js'

/** Default most records sent and not yet acknowledged, per topic. */
export const DEFAULT_SPOOL_IN_FLIGHT = 4096
/** Records appended and not yet sent kept in memory too (bytes), so a healthy send does not read the disk. */
const MEMORY_TAIL_BYTES = 16 * 1024 * 1024
/**
 * While the broker takes messages, input pauses once this many bytes are stored and not yet
 * sent (as the plain producer pauses at a full window): the spool grows only during an outage.
 */
const HEALTHY_BACKLOG_BYTES = 1024 * 1024
/** First and largest wait before a probe during an outage (ms). */
const PROBE_BACKOFF_MIN_MS = 50
const PROBE_BACKOFF_MAX_MS = 1000
/** Smallest and largest --max-outage (ms): 1 s .. 30 days. */
export const MAX_OUTAGE_FLOOR_MS = 1000
export const MAX_OUTAGE_CEILING_MS = 30 * 24 * 3600 * 1000

export interface SpoolingProducerOptions {
  /** The producer that talks to the brokers (its window bounds memory; retries apply per send). */
  producer: Producer
  /** Spool root: one directory per topic below it. */
  spoolDir: string
  /** Bound per topic spool (bytes); default 1 GiB. */
  maxBytes?: number
  /** Give up after an outage this long (ms); default: never. */
  maxOutageMs?: number
  /** Records in flight per topic (default DEFAULT_SPOOL_IN_FLIGHT). */
  maxInFlight?: number
}

export interface SpoolingStats {
  /** Records in the spool when an outage began, or appended during one. */
  spooled: number
  /** Records acknowledged after an outage, or left in the spool by an earlier run. */
  resent: number
  /** Records found in spools left by an earlier run. */
  leftover: number
  /** Records in the spools, not yet acknowledged. */
  pending: number
}

type LaneState = 'sending' | 'outage' | 'probing' | 'failed'

interface Lane {
  topic: string
  spool: Spool
  state: LaneState
  /** Position of the next record to send. */
  cursor: number
  /** Records appended in this process and not yet sent (a copy of the spool's tail). */
  memory: RecordQueue
  memoryBytes: number
  /** Records read from disk, not yet sent. */
  readAhead: RecordQueue
  inFlight: number
  /** Sends of an older epoch belong to a window cut short by an outage. */
  epoch: number
  callbacks: Map<number, SendCallback>
  /** Records before this position were in the spool during an outage (or left by an earlier run). */
  recoveryEnd: number
  outageSinceMs: number
  backoffMs: number
  timer: NodeJS.Timeout | undefined
  pumpScheduled: boolean
}

export class SpoolingProducer extends EventEmitter {
  private readonly options: SpoolingProducerOptions
  private readonly producer: Producer
  private readonly lanes = new Map<string, Lane>()
  private readonly maxInFlight: number
  private waitingRoom = false
  private failure: MetaError | undefined
  private flushWaiters: Array<{resolve: () => void; reject: (e: Error) => void}> = []
  private flushScheduled = false
  private closed = false
  private readonly counts = {spooled: 0, resent: 0, leftover: 0}

  constructor(options: SpoolingProducerOptions) {
    super()
    const outage = options.maxOutageMs
    if (outage !== undefined && (!Number.isInteger(outage) || outage < MAX_OUTAGE_FLOOR_MS || outage > MAX_OUTAGE_CEILING_MS)) {
      throw MetaError.invalidArgument(`invalid max outage ${outage} ms: expected ${MAX_OUTAGE_FLOOR_MS}..${MAX_OUTAGE_CEILING_MS}`)
    }
    this.options = options
    this.producer = options.producer
    this.maxInFlight = options.maxInFlight ?? DEFAULT_SPOOL_IN_FLIGHT
  }

  get stats(): SpoolingStats {
    let pending = 0
    for (const lane of this.lanes.values()) pending += lane.spool.pending
    return {...this.counts, pending}
  }

  /** Records sent and not yet acknowledged. */
  get inFlight(): number {
    let n = 0
    for (const lane of this.lanes.values()) n += lane.inFlight
    return n
  }

  /** True while some topic's broker is not taking messages. */
  get inOutage(): boolean {
    for (const lane of this.lanes.values()) if (lane.state !== 'sending') return true
    return false
  }

  /** The spool of a topic (opened, and its leftovers sent, on first use). */
  open(topic: string): Spool {
    return this.lane(topic).spool
  }

  /** Fire and forget: stored before it returns; false = the spool is full, wait for 'drain'. */
  send(topic: string, payload: Uint8Array | string, options: SendOptions = {}): boolean {
    return this.sendCallback(topic, payload, options, () => {})
  }

  /**
   * Store a message, then send it; the callback gets the acknowledgement (after any outage) or
   * a final refusal. Returns false while the topic's spool is full: stop until 'drain'.
   */
  sendCallback(topic: string, payload: Uint8Array | string, options: SendOptions, callback: SendCallback): boolean {
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'spooling producer is closed')
    const lane = this.lane(topic)
    const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
    const entry = {partition: options.partition ?? -1, attribute: options.attribute, payload: data}
    const position = lane.spool.append(entry)
    const record: SpoolRecord = {...entry, position, end: lane.spool.end}
    lane.callbacks.set(position, callback)
    if (lane.state !== 'sending') this.counts.spooled += 1
    if (lane.memoryBytes < MEMORY_TAIL_BYTES) {
      lane.memory.push(record)
      lane.memoryBytes += record.end - record.position
    }
    this.scheduleFlush(lane)
    if (lane.spool.full || (lane.state === 'sending' && lane.spool.end - lane.cursor >= HEALTHY_BACKLOG_BYTES)) {
      this.waitingRoom = true
      return false
    }
    return true
  }

  /** Resolves when every spooled record is acknowledged; rejects when an outage outlasted maxOutageMs. */
  flush(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure)
    for (const lane of this.lanes.values()) lane.spool.flush()
    if (this.stats.pending === 0) return Promise.resolve()
    return new Promise((resolve, reject) => this.flushWaiters.push({resolve, reject}))
  }

  /** Stop sending, save the spools (what is unacknowledged stays for the next run). */
  close(): void {
    if (this.closed) return
    this.closed = true
    for (const lane of this.lanes.values()) {
      if (lane.timer !== undefined) clearTimeout(lane.timer)
      lane.spool.close()
    }
  }

  private lane(topic: string): Lane {
    let lane = this.lanes.get(topic)
    if (lane !== undefined) return lane
    const spool = Spool.open(topicSpoolDir(this.options.spoolDir, topic), {maxBytes: this.options.maxBytes})
    lane = {
      topic,
      spool,
      state: 'sending',
      cursor: spool.position,
      memory: new RecordQueue(),
      memoryBytes: 0,
      readAhead: new RecordQueue(),
      inFlight: 0,
      epoch: 0,
      callbacks: new Map(),
      recoveryEnd: spool.end,
      outageSinceMs: 0,
      backoffMs: PROBE_BACKOFF_MIN_MS,
      timer: undefined,
      pumpScheduled: false,
    }
    this.counts.leftover += spool.pending
    spool.on('room', () => this.onRoom())
    this.lanes.set(topic, lane)
    if (spool.pending > 0) queueMicrotask(() => this.pump(lane!))
    return lane
  }

  /** Write what this turn appended, then send: one write(2) per burst of input. */
  private scheduleFlush(lane: Lane): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    queueMicrotask(() => {
      this.flushScheduled = false
      if (this.closed) return
      lane.spool.flush()
      for (const l of this.lanes.values()) {
        l.spool.flush()
        this.pump(l)
      }
    })
  }

  /** The next record to send at the cursor, from memory or from the disk. */
  private next(lane: Lane): SpoolRecord | undefined {
    for (;;) {
      for (let head = lane.memory.peek(); head !== undefined && head.position < lane.cursor; head = lane.memory.peek()) {
        lane.memoryBytes -= head.end - head.position
        lane.memory.shift()
      }
      for (let head = lane.readAhead.peek(); head !== undefined && head.position < lane.cursor; head = lane.readAhead.peek()) lane.readAhead.shift()
      let record = lane.memory.peek()?.position === lane.cursor ? lane.memory.peek() : lane.readAhead.peek()
      if (record === undefined || record.position !== lane.cursor) {
        if (lane.cursor >= lane.spool.end) return undefined
        lane.readAhead = new RecordQueue(lane.spool.read(lane.cursor))
        record = lane.readAhead.peek()
        if (record === undefined) return undefined
      }
      lane.cursor = record.end
      if (!lane.spool.isAcked(record.position)) return record
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
    const window = lane.state === 'probing' ? 1 : this.maxInFlight
    if (lane.state !== 'sending' && lane.state !== 'probing') return
    while (lane.inFlight < window) {
      const record = this.next(lane)
      if (record === undefined) break
      this.dispatch(lane, record)
    }
    if (this.waitingRoom) this.onRoom()
  }

  private dispatch(lane: Lane, record: SpoolRecord): void {
    const epoch = lane.epoch
    lane.inFlight += 1
    const options: SendOptions = {attribute: record.attribute}
    if (record.partition >= 0) options.partition = record.partition
    try {
      this.producer.sendCallback(lane.topic, record.payload, options, (result) => this.onResult(lane, record, epoch, result))
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
    if (!lane.spool.isAcked(record.position)) {
      if (result.success && record.position < lane.recoveryEnd) this.counts.resent += 1
      lane.spool.ack(record.position, record.end)
      const callback = lane.callbacks.get(record.position)
      lane.callbacks.delete(record.position)
      callback?.(result)
    }
    if (lane.state === 'probing' && epoch === lane.epoch) {
      lane.state = 'sending'
      lane.backoffMs = PROBE_BACKOFF_MIN_MS
      this.emit('recovered', lane.topic)
    }
    if (lane.state === 'outage') this.afterSettle(lane)
    else this.schedulePump(lane)
    this.checkFlushed()
  }

  private startOutage(lane: Lane, error: MetaError): void {
    const first = lane.state === 'sending'
    lane.epoch += 1
    lane.state = 'outage'
    lane.cursor = lane.spool.position
    lane.readAhead = new RecordQueue()
    lane.recoveryEnd = lane.spool.end
    if (!first) return
    // What the spool holds now waits for the broker too (sent and unanswered, or not sent yet).
    this.counts.spooled += lane.spool.pending
    lane.outageSinceMs = Date.now()
    this.emit('outage', lane.topic, error)
  }

  /** In an outage, once nothing is in flight: probe after a backoff (or give up past maxOutageMs). */
  private afterSettle(lane: Lane): void {
    if (lane.state !== 'outage' || lane.inFlight > 0 || lane.timer !== undefined) return
    const maxOutage = this.options.maxOutageMs
    if (maxOutage !== undefined && Date.now() - lane.outageSinceMs >= maxOutage) {
      this.giveUp(lane, new MetaError('CONNECTION_FAILED', `gave up after an outage of ${Math.round((Date.now() - lane.outageSinceMs) / 1000)} s (max outage ${maxOutage / 1000} s): ${lane.spool.pending} messages kept in ${lane.spool.dir}`))
      return
    }
    lane.timer = setTimeout(() => {
      lane.timer = undefined
      lane.recoveryEnd = lane.spool.end
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
    this.onRoom() // a writer waiting for room must not wait forever
  }

  private onRoom(): void {
    if (!this.waitingRoom) return
    for (const lane of this.lanes.values()) {
      if (lane.state === 'failed') continue
      if (lane.spool.full || (lane.state === 'sending' && lane.spool.end - lane.cursor >= HEALTHY_BACKLOG_BYTES / 2)) return
    }
    this.waitingRoom = false
    this.emit('drain')
  }

  private checkFlushed(): void {
    if (this.flushWaiters.length === 0 || this.stats.pending > 0) return
    for (const waiter of this.flushWaiters.splice(0)) waiter.resolve()
  }
}

/** A FIFO with O(1) shift (Array#shift moves every element of a large array). */
class RecordQueue {
  private items: SpoolRecord[]
  private head = 0

  constructor(items: SpoolRecord[] = []) {
    this.items = items
  }

  peek(): SpoolRecord | undefined {
    return this.items[this.head]
  }

  push(record: SpoolRecord): void {
    this.items.push(record)
  }

  shift(): void {
    this.head += 1
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head >= 4096 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}

/** A failure the broker (or the network) will get over: keep the record and try again later. */
function isOutage(error: MetaError): boolean {
  return error.retriable && error.code !== 'NOT_FOUND'
}
