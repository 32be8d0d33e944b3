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
 * - A spool that cannot be written (a full disk, an I/O error) stops the input ('stalled'):
 *   what it could not write stays in memory and is written when a retry succeeds
 *   ('writable'); past maxOutageMs it gives up, and the records never written fail their
 *   callbacks (STORAGE_ERROR) rather than vanish.
 * - Destinations: with `destination`, a spool left for another one is left alone
 *   ('elsewhere'), one that records none is adopted (said in 'opened'); the spools this
 *   producer writes record it.
 * - Delivery is at-least-once: a record whose acknowledgement is lost (crash, a timeout the
 *   broker did store) is sent again. A process killed while the broker is healthy loses its
 *   unacknowledged window (it was never written to disk).
 *
 * Events: 'outage' (topic, error), 'recovered' (topic, messages in the spool then), 'drain',
 * 'error' (MetaError); about spools: 'stalled' (topic, dir, error, held, pending), 'writable'
 * (topic), 'lost' (topic, dir, count, error: records never written, at close), 'opened' (topic,
 * dir, SpoolOpened: damage found, adopted or retargeted), 'elsewhere' (topic, dir, destination
 * or undefined when unreadable), 'unavailable' (topic, dir, error: a leftover that cannot be
 * opened).
 */
import {Buffer} from 'node:buffer'
import {EventEmitter} from 'node:events'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import type {Producer, SendCallback, SendOptions} from '../producer.js'
import type {SendResult} from '../types.js'
import {defaultSpoolRoot, processSpoolDir, topicSpoolDir} from './dirs.js'
import type {SpoolEntry, SpoolRecord} from './format.js'
import {
  asBuffer,
  closeSpool,
  isOutage,
  newLane,
  openLeftovers,
  PROBE_BACKOFF_MAX_MS,
  PROBE_BACKOFF_MIN_MS,
  sendOptions,
  STALL_RETRY_MAX_MS,
  STALL_RETRY_MIN_MS,
  type Lane,
  type LaneEmit,
} from './lane.js'
import {failUnwritten, forgetReadState, keepInMemory, keptText, nextRecord} from './lane-read.js'
import {Queue} from './queue.js'
import {Spool} from './spool.js'
import type {SpoolingProducerEvents, SpoolingProducerOptions, SpoolingStats} from './types.js'

/** Default most records sent from a spool and not yet acknowledged, per topic. */
export const DEFAULT_SPOOL_IN_FLIGHT = 4096
/**
 * While a spool is being drained, input pauses once this many bytes are stored and not yet
 * sent: the spool grows only during an outage.
 */
const DRAIN_BACKLOG_BYTES = 1024 * 1024
/** Smallest and largest --max-outage (ms): 1 s .. 30 days. */
export const MAX_OUTAGE_FLOOR_MS = 1000
export const MAX_OUTAGE_CEILING_MS = 30 * 24 * 3600 * 1000

export class SpoolingProducer extends EventEmitter<SpoolingProducerEvents> {
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
  private readonly counts = {spooled: 0, resent: 0, leftover: 0, damaged: 0, damagedBytes: 0}
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
    const {spooled, resent, leftover, damaged, damagedBytes} = this.counts
    return {spooled, resent, leftover, pending, damaged, damagedBytes}
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
      if (lane.stallTimer !== undefined) clearTimeout(lane.stallTimer)
      if (lane.state === 'failed') continue
      try {
        this.spoolWindow(lane)
      } catch {} // no spool to keep them in: the summary counts them unacknowledged
    }
    this.closed = true
    let failure: MetaError | undefined
    for (const lane of this.lanes.values()) {
      if (lane.spool === undefined) continue
      const error = await closeSpool(lane.topic, lane.spool, this.forward)
      failure ??= error
    }
    if (this.ownsProducer) await this.producer.close()
    if (failure !== undefined) throw failure
  }

  /** A lane's event that is the producer's too, emitted as it is. */
  private readonly forward: LaneEmit = (event, ...args) => (this.emit as (name: string, ...rest: unknown[]) => boolean)(event, ...args)

  private lane(topic: string): Lane {
    const known = this.lanes.get(topic)
    if (known !== undefined) return known
    const lane: Lane = newLane(topic, (result, record) => this.onSpooledResult(lane, record, result))
    this.lanes.set(topic, lane)
    this.takeLeftovers(lane)
    return lane
  }

  /** The spools an earlier run left for this topic and destination are sent first. */
  private takeLeftovers(lane: Lane): void {
    const spool = openLeftovers(
      this.root,
      lane.topic,
      this.options,
      (dir) => this.openSpool(lane, dir),
      (event, ...args) => {
        if (event === 'merged') this.reportOpened(lane, args[0] as string, args[1] as Spool['opened'])
        else this.forward(event, ...args)
      },
    )
    if (spool === undefined) return
    this.counts.leftover += spool.pending
    if (spool.pending > 0) {
      lane.state = 'sending'
      lane.cursor = spool.position
      queueMicrotask(() => this.pump(lane))
    }
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
    const spool = Spool.open(dir, {maxBytes: this.options.maxBytes, destination: this.options.destination, retarget: this.options.retarget})
    spool.on('room', () => this.onRoom())
    spool.on('writable', () => queueMicrotask(() => this.onWritable(lane)))
    lane.spool = spool
    this.reportOpened(lane, dir, spool.opened)
    return spool
  }

  /** Damage found, a spool adopted or retargeted: counted, and told once. */
  private reportOpened(lane: Lane, dir: string, opened: Spool['opened']): void {
    for (const range of opened.damaged) {
      this.counts.damaged += 1
      this.counts.damagedBytes += Math.max(range.to - range.from, range.end - range.position)
    }
    if (opened.damaged.length > 0 || opened.tornBytes > 0 || opened.positionDamaged || opened.adopted || opened.retargetedFrom !== undefined) {
      this.emit('opened', lane.topic, dir, opened)
    }
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
    keepInMemory(lane, record)
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
    const spool = lane.spool
    if (spool === undefined) return
    if (!spool.flush()) {
      this.onStalled(lane)
      return
    }
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
      const record = nextRecord(lane)
      if (record === undefined) break
      this.dispatch(lane, record)
    }
    if (lane.state === 'sending' && lane.cursor >= lane.spool!.end) {
      // Every spool record is out: new messages go direct again (behind those still in flight).
      lane.state = 'direct'
      forgetReadState(lane)
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
      this.onResult(lane, record, epoch, {
        success: false,
        topic: lane.topic,
        partition: record.partition,
        brokerId: -1,
        offset: -1,
        id: undefined,
        error: err,
        errorMessage: err.message,
      })
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
    const recovered = lane.state === 'probing' && epoch === lane.epoch
    // What the spool holds as the broker comes back, the probe that found it back included.
    const backlog = recovered ? this.pendingOf(lane.topic) : 0
    // Acknowledged, or refused for good: either way it leaves the spool.
    this.acknowledge(lane, record.position, record.end, result, true)
    if (recovered) {
      lane.state = 'sending'
      lane.backoffMs = PROBE_BACKOFF_MIN_MS
      this.emit('recovered', lane.topic, backlog)
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
        this.giveUp(
          lane,
          new MetaError('STORAGE_ERROR', `cannot keep messages of topic ${lane.topic} in a spool under ${this.root}: ${(e as Error).message}`, {cause: error}),
        )
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
      this.giveUp(
        lane,
        new MetaError(
          'CONNECTION_FAILED',
          `gave up after an outage of ${Math.round((Date.now() - lane.outageSinceMs) / 1000)} s (max outage ${maxOutage / 1000} s): ${keptText(lane)}`,
        ),
      )
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
    if (lane.stallTimer !== undefined) clearTimeout(lane.stallTimer)
    lane.stallTimer = undefined
    this.failure ??= error
    for (const waiter of this.flushWaiters.splice(0)) waiter.reject(error)
    this.emit('error', error)
    failUnwritten(lane)
    // A writer waiting for room must not wait forever.
    this.waitingRoom = false
    this.emit('drain')
  }

  /** The spool could not be written: say so once, try again after a backoff, give up past maxOutageMs. */
  private onStalled(lane: Lane): void {
    const spool = lane.spool!
    const stall = spool.stalled!
    if (lane.stallTimer !== undefined || lane.state === 'failed' || this.closed) return
    if (!lane.stallReported) {
      lane.stallReported = true
      this.emit('stalled', lane.topic, spool.dir, stall.error, spool.held, spool.pending)
    }
    const maxOutage = this.options.maxOutageMs
    if (maxOutage !== undefined && Date.now() - stall.sinceMs >= maxOutage) {
      const error = new MetaError(
        'STORAGE_ERROR',
        `gave up after the spool could not be written for ${Math.round((Date.now() - stall.sinceMs) / 1000)} s (max outage ${maxOutage / 1000} s): ${keptText(lane)}`,
      )
      this.giveUp(lane, error)
      return
    }
    lane.stallTimer = setTimeout(() => {
      lane.stallTimer = undefined
      if (!this.closed && lane.state !== 'failed') this.flushSpool(lane)
    }, lane.stallBackoffMs)
    lane.stallBackoffMs = Math.min(lane.stallBackoffMs * 2, STALL_RETRY_MAX_MS)
  }

  /** A stalled spool was written: input and sending go on. */
  private onWritable(lane: Lane): void {
    if (lane.stallTimer !== undefined) clearTimeout(lane.stallTimer)
    lane.stallTimer = undefined
    lane.stallBackoffMs = STALL_RETRY_MIN_MS
    if (this.closed || lane.state === 'failed') return
    if (lane.stallReported) this.emit('writable', lane.topic)
    lane.stallReported = false
    this.flushSpool(lane)
    this.pump(lane)
    this.onRoom()
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

/** The callback of send(): failures are kept and sent again. */
function ignore(): void {}
