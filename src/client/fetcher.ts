/**
 * The fetch loop of one partition (docs/protocol.md#fetching, with meta's long poll):
 *
 *   get(offset, maxSize[, maxWaitMs]) ─┬─ value  → decode whole records (CRC checked), deliver,
 *                                      │           advance past them; refetch at once
 *                                      ├─ 301    → offset := body; refetch at once (from a
 *                                      │           slave, a move back is waited out instead)
 *                                      ├─ 404/403→ nothing yet: refetch (a long poll already
 *                                      │           waited; a MetaQ broker is polled with back-off)
 *                                      ├─ retriable error (timeout, lost connection, storage)
 *                                      │         → report (sink.retrying), back off, refetch
 *                                      └─ any other error (unknown topic, invalid partition,
 *                                                  corrupt data, auth) → stop; sink.failed
 *
 * The next get is sent as soon as a value arrives, before its records are checked and
 * delivered (its start read from the records' length fields), so the broker reads and sends
 * the next records while this process checks these: still one get in flight per partition,
 * but no idle round trip between them. If the records fail their checks the early get is
 * stale and its answer ignored; one that comes back while the sink is paused is held (one
 * body per partition) until resume().
 *
 * A value holding no whole record means the next message is larger than maxSize: maxSize
 * grows to fit it (read from its length field). A CRC mismatch asks the broker for the nearest
 * valid offset (`offset`) and restarts there, skipping what was already delivered. The offset
 * advances only past whole messages, and only as batches are handed to the sink.
 */
import {encodeGet} from '../protocol/commands/get.js'
import {encodeOffset} from '../protocol/commands/offset.js'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES, walkRecords, wholeRecordsEnd} from '../protocol/message-set.js'
import type {ResponseFrame} from '../protocol/frames.js'
import type {Logger} from '../log.js'
import type {BrokerConnection} from './connection.js'
import {checkRecords, FetchedBatch, type RecordCheck, type RecordSpan} from './fetched-batch.js'
import type {Partition} from './types.js'

/** Fetch tuning shared by the fetchers of one consumer. */
export interface FetchSettings {
  group: string
  /** Initial (and minimum) bytes per get. */
  maxSizeBytes: number
  /** Upper bound maxSize may grow to for big messages. */
  maxSizeLimitBytes: number
  /** Long-poll wait when the broker supports it. */
  maxWaitMs: number
  /** Deadline of a get beyond its long-poll wait. */
  fetchTimeoutMs: number
  /** Back-off bounds when polling (no long poll) or after errors. */
  minDelayMs: number
  maxDelayMs: number
  verifyChecksum: boolean
  /** Filter expression sent on every get (meta brokers listing `filter`); undefined = every message. */
  filter?: string
  log: Logger
}

let nextEpoch = 1

/** Where fetchers deliver. */
export interface FetchSink {
  /** Deliver a batch; return false to pause this fetcher until resume() is called. */
  deliver(batch: FetchedBatch): boolean
  /** The fetcher reached its stop offset (or was asked to stop) and will fetch no more. */
  finished(fetcher: PartitionFetcher): void
  /** A retriable error: the fetcher tries again after `delayMs`. */
  retrying(fetcher: PartitionFetcher, err: MetaError, delayMs: number): void
  /** An error retrying cannot fix (MetaError.retriable false): the fetcher has stopped. */
  failed(fetcher: PartitionFetcher, err: MetaError): void
  /**
   * The fetcher's connection was closed for good (in a cluster: its broker left, or its master
   * went and a slave now serves that broker id): where to fetch now.
   */
  reconnect?(brokerId: number): Promise<BrokerConnection>
  /** True while `brokerId` is read from a slave (whose log may end before its master's). */
  readsFromSlave?(brokerId: number): boolean
}

export class PartitionFetcher {
  /** Unique per fetcher: batches carry it, so stale ones are recognised after a reassignment. */
  readonly epoch = nextEpoch++
  /** Next offset to fetch (the position after the last delivered message). */
  offset: number
  private maxSize: number
  private delayMs: number
  private skipBelow = -1
  private running = false
  private paused = false
  private inFlight = false
  /** Numbers the requests: an answer to any but the latest is stale and ignored. */
  private requestToken = 0
  /** A get's answer that came while the sink was paused (an early get's): handled on resume(). */
  private heldReply: {requestOffset: number; frame: ResponseFrame; longPoll: boolean} | undefined
  private timer: NodeJS.Timeout | undefined
  /** The code of the error the current run of failures started with (logged once at warn). */
  private failingWith: string | undefined
  /** Offset at which to stop (tail -e); undefined = follow forever. */
  stopAt: number | undefined
  /** Set when the partition is to be read elsewhere (a slave): the next fetch asks the sink for a connection. */
  switchConnection = false

  constructor(
    readonly topic: string,
    readonly target: Partition,
    private conn: BrokerConnection,
    startOffset: number,
    private readonly settings: FetchSettings,
    private readonly sink: FetchSink,
  ) {
    this.offset = startOffset
    this.maxSize = settings.maxSizeBytes
    this.delayMs = settings.minDelayMs
  }

  get key(): string {
    return `${this.topic}:${this.target.brokerId}-${this.target.partition}`
  }

  get isRunning(): boolean {
    return this.running
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.fetchSoon(0)
  }

  /** Stop fetching; a get in flight is ignored when it returns. */
  stop(): void {
    this.running = false
    this.heldReply = undefined
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** The sink has room again. */
  resume(): void {
    if (!this.paused) return
    this.paused = false
    const held = this.heldReply
    if (held === undefined) return this.fetchSoon(0)
    this.heldReply = undefined
    this.onResponse(held.requestOffset, held.frame, held.longPoll)
  }

  private fetchSoon(delayMs: number): void {
    if (!this.running || this.inFlight || this.timer !== undefined) return
    if (this.stopAt !== undefined && this.offset >= this.stopAt) {
      this.running = false
      this.sink.finished(this)
      return
    }
    if (delayMs <= 0) {
      this.fetch()
      return
    }
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.fetch()
    }, delayMs)
  }

  private fetch(requestOffset = this.offset): void {
    if (!this.running || this.paused) return
    this.inFlight = true
    if ((this.conn.isClosed || this.switchConnection) && this.sink.reconnect !== undefined) {
      this.switchConnection = false
      const old = this.conn
      this.sink.reconnect(this.target.brokerId).then(
        (conn) => {
          this.inFlight = false
          // The connection given up on (a master that does not answer) must not keep reconnecting.
          if (conn !== old) old.close()
          this.conn = conn
          this.fetchSoon(0)
        },
        (error: unknown) => {
          this.inFlight = false
          this.onError(error instanceof MetaError ? error : new MetaError('CONNECTION_FAILED', String(error)))
        },
      )
      return
    }
    const filter = this.settings.filter
    if (filter !== undefined && !this.conn.capabilities.filter) {
      this.inFlight = false
      return this.onError(
        new MetaError('UNSUPPORTED', `broker ${this.conn.name} does not run filters (a MetaQ broker, or an older meta): consume without --filter`),
      )
    }
    const longPoll = this.conn.capabilities.longPoll && this.stopAt === undefined
    const maxWaitMs = longPoll ? this.settings.maxWaitMs : 0
    const token = ++this.requestToken
    this.conn.request(
      (out, opaque) =>
        encodeGet(out, {
          topic: this.topic,
          group: this.settings.group,
          partition: this.target.partition,
          offset: requestOffset,
          maxSize: this.maxSize,
          opaque,
          maxWaitMs,
          ...(filter === undefined ? {} : {filter}),
        }),
      (err, frame) => {
        if (token !== this.requestToken) return
        this.inFlight = false
        if (!this.running) return
        if (err !== null) return this.onError(err)
        if (this.paused) {
          this.heldReply = {requestOffset, frame: frame!, longPoll}
          return
        }
        this.onResponse(requestOffset, frame!, longPoll)
      },
      maxWaitMs + this.settings.fetchTimeoutMs,
    )
  }

  private onResponse(requestOffset: number, frame: ResponseFrame, longPoll: boolean): void {
    if (frame.type === 'value') return this.onValue(requestOffset, frame.body)
    const body = frame.body.toString('utf8')
    switch (frame.code) {
      case 301: {
        const moved = Number(body)
        if (body === '' || !Number.isFinite(moved)) return this.onError(new MetaError('DECODE_ERROR', `bad 301 body "${body}"`))
        this.recovered()
        if (moved < requestOffset && this.sink.readsFromSlave?.(this.target.brokerId) === true) {
          // A slave whose log ends before what was read from its master: wait here (polling
          // with back-off) for the master to answer again, rather than read those messages twice.
          this.delayMs = Math.min(this.delayMs * 2, this.settings.maxDelayMs)
          return this.fetchSoon(this.delayMs)
        }
        this.offset = moved
        return this.fetchSoon(0)
      }
      case 404:
      case 403: {
        // Nothing there yet (MetaQ's clients read both as "no messages now"), unless a meta
        // broker's code says waiting cannot help (a topic it does not accept, a partition the
        // topic does not have).
        const error = MetaError.fromWire(frame.code, body)
        if (!error.retriable) return this.onError(error)
        this.recovered()
        if (longPoll && frame.code === 404) return this.fetchSoon(0)
        this.delayMs = Math.min(this.delayMs * 2, this.settings.maxDelayMs)
        // A closed partition answers "closed" until reopened: the application is told (a
        // 'fetchError' event), so it can choose to wait, skip it or stop (meta tail -e does).
        if (error.code === 'PARTITION_CLOSED') this.sink.retrying(this, error, this.delayMs)
        return this.fetchSoon(this.delayMs)
      }
      default:
        return this.onError(MetaError.fromWire(frame.code, body))
    }
  }

  private onValue(requestOffset: number, body: Buffer): void {
    if (this.settings.filter !== undefined) return this.onFilteredValue(requestOffset, body)
    this.recovered()
    this.fetchEarly(requestOffset, body)
    const {span, bytesConsumed, error} = this.decodeRecords(requestOffset, body)
    this.delayMs = this.settings.minDelayMs
    this.offset = requestOffset + bytesConsumed
    if (this.skipBelow >= 0 && this.offset >= this.skipBelow) this.skipBelow = -1
    if (error !== undefined) {
      // The whole records before the bad one are good: hand them over first.
      if (span !== undefined) this.deliver(body, span)
      return this.onCorruptRecord(error)
    }
    if (bytesConsumed === 0) this.growFor(body)
    else if (body.length < this.maxSize / 2 && this.maxSize > this.settings.maxSizeBytes) {
      this.maxSize = Math.max(this.settings.maxSizeBytes, this.maxSize / 2)
    }
    if (span !== undefined && !this.deliver(body, span)) return
    this.fetchSoon(0)
  }

  /**
   * Send the get for what follows `body` now, before its records are checked (see the top of
   * this file): when the body holds whole records with sane lengths, the connection is usable
   * as it is and the stop offset is not reached.
   */
  private fetchEarly(requestOffset: number, body: Buffer): void {
    if (this.paused || this.timer !== undefined || this.conn.isClosed || this.switchConnection) return
    const end = wholeRecordsEnd(body, this.settings.maxSizeLimitBytes)
    if (end <= 0) return
    const next = requestOffset + end
    if (this.stopAt !== undefined && next >= this.stopAt) return
    this.fetch(next)
  }

  /** Hand a batch to the sink; false (and paused) when it wants no more for now. */
  private deliver(body: Buffer, span: RecordSpan): boolean {
    const more = this.sink.deliver(new FetchedBatch(this.topic, this.target.brokerId, this.target.partition, this.epoch, this.offset, body, span, this.conn))
    if (!more) this.paused = true
    return more
  }

  /**
   * Where the whole records of a fetched body are (checked as decodeMessageSet checks them);
   * records below skipBelow (already delivered before a realignment) are read but not included.
   */
  private decodeRecords(baseOffset: number, body: Buffer): RecordCheck {
    const options = {baseOffset, verifyChecksum: this.settings.verifyChecksum, maxPayloadBytes: this.settings.maxSizeLimitBytes}
    return checkRecords(body, options, this.skipBelow)
  }

  /**
   * The answer to a get that carried a filter (docs/protocol.md#filtered-get): `next` (where
   * the scanned range ends), then each match as its offset and the stored record. No early get
   * here: each get already covers a whole slice of the log.
   */
  private onFilteredValue(requestOffset: number, body: Buffer): void {
    this.recovered()
    this.delayMs = this.settings.minDelayMs
    if (body.length < 8) return this.onError(new MetaError('DECODE_ERROR', `filtered value of ${body.length} bytes from ${this.key}: expected at least 8`))
    const next = Number(body.readBigInt64BE(0))
    const skipBelow = this.skipBelow
    let span: RecordSpan | undefined
    let pos = 8
    while (body.length - pos >= 8 + RECORD_HEADER_BYTES) {
      const offset = Number(body.readBigInt64BE(pos))
      const at = pos + 8
      const record = body.subarray(at, at + RECORD_HEADER_BYTES + Math.max(0, body.readInt32BE(at)))
      const options = {baseOffset: offset, verifyChecksum: this.settings.verifyChecksum, maxPayloadBytes: this.settings.maxSizeLimitBytes}
      const {bytesConsumed, error} = walkRecords(record, options, () => {
        if (span !== undefined) {
          span.last = at
          span.count += 1
        } else if (offset >= skipBelow) {
          span = {baseOffset: undefined, first: at, last: at, count: 1}
        }
      })
      if (error !== undefined) {
        this.offset = offset
        if (span !== undefined) this.deliver(body, span)
        return this.onCorruptRecord(error)
      }
      if (bytesConsumed === 0) {
        if (pos > 8) break
        // No whole record at the requested offset: the broker sent the start of the one that does not fit.
        this.growFor(record)
        return this.fetchSoon(0)
      }
      pos += 8 + bytesConsumed
    }
    if (pos === 8 && next === requestOffset) {
      // Less than a record header at the requested offset (a tiny fetch size): grow.
      this.growFor(body.subarray(16))
      return this.fetchSoon(0)
    }
    this.offset = next
    if (this.skipBelow >= 0 && this.offset >= this.skipBelow) this.skipBelow = -1
    if (span !== undefined && !this.deliver(body, span)) return
    this.fetchSoon(0)
  }

  /** The next record does not fit in maxSize: grow to its size (read from its header). */
  private growFor(body: Buffer): void {
    const needed = body.length >= 4 ? RECORD_HEADER_BYTES + body.readInt32BE(0) : this.maxSize * 2
    const grown = Math.min(Math.max(this.maxSize * 2, needed), this.settings.maxSizeLimitBytes)
    if (grown <= this.maxSize) {
      this.onError(
        new MetaError(
          'INVALID_MESSAGE',
          `message at offset ${this.offset} of ${this.key} needs ${needed} bytes, more than the limit of ${this.settings.maxSizeLimitBytes}`,
        ),
      )
      return
    }
    this.settings.log.debug('growing fetch size', {partition: this.key, from: this.maxSize, to: grown})
    this.maxSize = grown
  }

  /**
   * A record failed its CRC: the offset may be misaligned (a user-given offset) or the log
   * damaged. Ask the broker for the nearest valid offset: before the bad position, walk from
   * there, skipping what precedes it; after it, a meta broker found a damaged range there and
   * says where the next record is: skip to it; at it, we are at a valid boundary and the
   * record itself is damaged: report it and retry later rather than deliver it.
   */
  private onCorruptRecord(error: MetaError): void {
    const badOffset = this.offset
    this.inFlight = true
    // An early get for what followed the bad record (if any) is stale now.
    const token = ++this.requestToken
    this.conn.request(
      (out, opaque) => encodeOffset(out, {topic: this.topic, group: this.settings.group, partition: this.target.partition, offset: badOffset, opaque}),
      (err, frame) => {
        if (token !== this.requestToken) return
        this.inFlight = false
        if (!this.running) return
        if (err !== null && err.retriable) return this.onError(err) // ask again after the back-off
        const nearest = err === null && frame?.type === 'result' && frame.code === 200 ? Number(frame.body.toString()) : Number.NaN
        if (Number.isFinite(nearest) && nearest < badOffset) {
          this.settings.log.warn('checksum failure; realigning', {partition: this.key, offset: badOffset, restartAt: nearest})
          this.offset = nearest
          this.skipBelow = badOffset
          this.fetchSoon(0)
          return
        }
        if (Number.isFinite(nearest) && nearest > badOffset) {
          this.settings.log.warn('damaged range on the broker; skipping it', {partition: this.key, offset: badOffset, restartAt: nearest})
          this.offset = nearest
          this.fetchSoon(0)
          return
        }
        this.onError(error)
      },
    )
  }

  /**
   * Retry what retrying can fix (with back-off, logged at warn once per run of failures);
   * stop on anything else and hand it to the sink, which surfaces it to the application.
   */
  private onError(err: MetaError): void {
    if (!err.retriable) {
      this.stop()
      this.sink.failed(this, err)
      return
    }
    this.delayMs = Math.min(Math.max(this.delayMs * 2, this.settings.minDelayMs), this.settings.maxDelayMs)
    const context = {partition: this.key, offset: this.offset, code: err.code, error: err.message, retryInMs: this.delayMs}
    if (this.failingWith !== err.code) {
      this.failingWith = err.code
      this.settings.log.warn('fetch failed; retrying', context)
    } else {
      this.settings.log.debug('fetch failed again; retrying', context)
    }
    this.sink.retrying(this, err, this.delayMs)
    this.fetchSoon(this.delayMs)
  }

  /** A fetch got an answer: a run of failures (if any) is over. */
  private recovered(): void {
    if (this.failingWith === undefined) return
    this.settings.log.info('fetching again', {partition: this.key, offset: this.offset})
    this.failingWith = undefined
  }
}
