/**
 * The producer: MetaQ's send semantics with a pipelined window.
 *
 *   const producer = createProducer({broker: '127.0.0.1:8123'})
 *   const result = await producer.send('orders', Buffer.from('…'), {attribute: 'customer-42'})
 *   await producer.close()
 *
 * `send()` resolves to MetaQ's SendResult (success, partition, offset, id, errorMessage) and
 * never rejects for broker or network failures. For throughput, `sendCallback()` takes a
 * callback instead of creating a promise per message and returns false once `maxInFlight`
 * messages or `maxQueuedBytes` bytes are unacknowledged (wait for 'drain', as with a stream).
 * Failures that are safe to retry (connection lost or refused, timeout, broker busy) are
 * retried `retries` times; a message whose partition was chosen by the selector may land on
 * another partition then (at-least-once: a retried put may be stored twice). A partition that
 * answers DISK_FULL or SERVICE_UNAVAILABLE is avoided by such messages until it recovers
 * (routing.ts); pinned, hash-keyed and custom-selector messages stay on their partition.
 *
 * Back-pressure: at most `maxInFlight` messages and `maxQueuedBytes` payload bytes are on
 * their way to brokers at once. Messages sent beyond that wait in the producer, in order, and
 * leave as acknowledgements come back: `send()` simply resolves later, so a loop that awaits
 * its sends never queues more than that, and one that does not await holds only references
 * to its own payloads (nothing is encoded or buffered for the socket until there is room).
 *
 * Callbacks: a `sendCallback()` callback that throws is the application's error, not the
 * connection's: every other message is still answered, and the error is emitted as 'error'
 * when the producer has a listener for it, else thrown as an uncaught exception (as Node
 * does for a callback that throws).
 */
import {Buffer} from 'node:buffer'
import {EventEmitter} from 'node:events'
import {checksum} from '../protocol/crc.js'
import {MetaError} from '../protocol/errors.js'
import {encodePayload, FLAG_HAS_ATTRIBUTE, RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import {writePut} from '../protocol/commands/put.js'
import {PutReplyReader} from '../protocol/commands/put-reply.js'
import {isValidTopicName, validateTopicName} from '../protocol/names.js'
import type {ResponseFrame} from '../protocol/frames.js'
import {silentLogger, type Logger} from '../log.js'
import {reportCallbackError} from './callbacks.js'
import {PutBatcher, type BatchOutcome} from './put-batcher.js'
import {roundRobinSelector, selectorByName, type PartitionSelector} from './partition-selector.js'
import {movableMessages, Router} from './routing.js'
import {createTopology, type Topology} from './topology.js'
import {KeptSends, type KeptLink} from './kept-sends.js'
import {
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_MAX_MESSAGE_BYTES,
  DEFAULT_MAX_QUEUED_BYTES,
  DEFAULT_RETRIES,
  DEFAULT_SEND_TIMEOUT_MS,
  type BeginTransactionOptions,
  type ProducerOptions,
  type SendCallback,
  type SendOptions,
} from './producer-options.js'
import type {Partition, SendResult} from './types.js'
import {newSessionId, Transaction, type TransactionInfo, type TransactionSummary, type TxItem} from './transaction.js'

export type {ProducerOptions, SendOptions, SendCallback, BeginTransactionOptions} from './producer-options.js'

const RETRY_DELAY_MS = 100

/** One message on its way. */
interface SendTask extends TxItem, KeptLink {
  attempts: number
  callback: SendCallback | ((result: SendResult, context: never) => void)
  /** Handed to the callback as its second argument (set by handOver). */
  context: unknown
  /** The transaction it belongs to (sent inside beginTransaction … commit/rollback). */
  tx: Transaction<SendTask> | undefined
}

/** The events of a producer (a typed EventEmitter: docs/architecture.md#client-events). */
export interface ProducerEvents {
  /** The window has room again after a send was told to wait. */
  drain: []
  /** What a send callback threw (without a listener it is an uncaught exception). */
  error: [error: unknown]
}

export class Producer extends EventEmitter<ProducerEvents> {
  private readonly topology: Topology
  private readonly ownsTopology: boolean
  private readonly selector: PartitionSelector
  private readonly maxInFlight: number
  private readonly maxQueuedBytes: number
  private readonly sendTimeoutMs: number
  private readonly retries: number
  private readonly maxMessageBytes: number | undefined
  private readonly log: Logger
  private readonly router: Router<SendTask>
  /** Messages accepted and not yet completed (waiting + dispatched). */
  private inFlightCount = 0
  /** Payload bytes of those. */
  private queuedByteCount = 0
  /** Messages (and their bytes) handed to the brokers' connections and not yet completed. */
  private dispatchedCount = 0
  private dispatchedByteCount = 0
  /** Accepted messages waiting for room under maxInFlight / maxQueuedBytes, in order. */
  private readonly waiting: SendTask[] = []
  private waitingHead = 0
  /** sendCallback() returned false: emit 'drain' once there is room again. */
  private needDrain = false
  /** The last topic name that passed validation (sends usually repeat it). */
  private validTopic: string | undefined
  private idleWaiters: Array<() => void> = []
  private closed = false
  /** Puts to brokers that serve put-batch, grouped per partition and turn. */
  private readonly batcher: PutBatcher<SendTask>
  private readonly reply = new PutReplyReader()
  /** The transaction sends go into, between beginTransaction() and commit()/rollback(). */
  private transaction: Transaction<SendTask> | undefined
  private readonly sessionId = newSessionId()
  private transactionCounter = 0
  private readonly batchPut: boolean
  /** Sends made with sendKept(), unanswered and not handed over, in send order. */
  private readonly kept = new KeptSends<SendTask>()
  /**
   * Called when a kept send fails, before its callback runs: a SpoolingProducer may hand the
   * topic's kept sends (this one too) over to its spool then, and the answer goes there.
   * @internal
   */
  onKeptFailure: ((topic: string, result: SendResult) => void) | undefined

  constructor(options: ProducerOptions = {}) {
    super()
    this.log = (options.logger ?? silentLogger).child('producer')
    this.ownsTopology = options.topology === undefined
    this.topology = options.topology ?? createTopology({...options, requestTimeoutMs: options.sendTimeoutMs, refreshMs: options.topologyRefreshMs})
    this.selector = typeof options.selector === 'function' ? options.selector : options.selector ? selectorByName(options.selector) : roundRobinSelector()
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT
    this.maxQueuedBytes = options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES
    if (!(this.maxInFlight >= 1) || !(this.maxQueuedBytes >= 1)) {
      throw MetaError.invalidArgument(
        `invalid producer limits: maxInFlight ${this.maxInFlight}, maxQueuedBytes ${this.maxQueuedBytes}: expected positive numbers`,
      )
    }
    this.sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS
    this.retries = options.retries ?? DEFAULT_RETRIES
    this.maxMessageBytes = options.maxMessageBytes
    this.batchPut = options.batchPut ?? true
    this.batcher = new PutBatcher<SendTask>(this.sendTimeoutMs, (task, err, outcome, frame) => this.onBatchResult(task, err, outcome, frame))
    this.router = new Router<SendTask>({
      topology: this.topology,
      selector: this.selector,
      log: this.log,
      ready: (task, partitions) => this.route(task, partitions),
      failed: (task, error) => this.fail(task, error),
      movable: movableMessages(options.selector),
    })
  }

  /** Messages sent and not yet acknowledged (or failed), including those waiting for room. */
  get inFlight(): number {
    return this.inFlightCount
  }

  /** Payload bytes of the messages counted by `inFlight`. */
  get queuedBytes(): number {
    return this.queuedByteCount
  }

  /** Payload bytes on their way to brokers now (at most maxQueuedBytes, or one larger message). */
  get inFlightBytes(): number {
    return this.dispatchedByteCount
  }

  /** Send one message; resolves to its SendResult (check `success`). */
  send(topic: string, payload: Uint8Array | string, options: SendOptions = {}): Promise<SendResult> {
    return new Promise((resolve) => this.sendCallback(topic, payload, options, resolve))
  }

  /**
   * Send without a promise. Returns false when `maxInFlight` messages are unacknowledged:
   * keep calling if you must (messages queue), but a well-behaved caller waits for 'drain'.
   * Throws INVALID_ARGUMENT for a bad topic name or an oversize payload (nothing is sent).
   */
  sendCallback(topic: string, payload: Uint8Array | string, options: SendOptions, callback: SendCallback): boolean {
    return this.submit(topic, payload, options, callback, false)
  }

  /**
   * sendCallback() for a SpoolingProducer: the send is also kept, in send order, until it is
   * answered, so that an outage can hand it over to a spool (handOver, onKeptFailure).
   * @internal
   */
  sendKept(topic: string, payload: Uint8Array | string, options: SendOptions, callback: SendCallback): boolean {
    return this.submit(topic, payload, options, callback, true)
  }

  /** Kept sends not yet answered nor handed over (all topics). @internal */
  get keptCount(): number {
    return this.kept.size
  }

  /** Kept sends of a topic not yet answered nor handed over. @internal */
  keptOf(topic: string): number {
    let n = 0
    this.kept.forEach(
      (task) => task.message.topic === topic,
      () => (n += 1),
    )
    return n
  }

  /**
   * Hand a topic's kept sends over, oldest first, to `take` (which writes each to a spool and
   * returns its record): from then on the send's answer goes to `callback` with that record as
   * its context, instead of to its own callback, and it is no longer kept. `take` gets the
   * send's payload, attribute, pinned partition (-1: the selector's) and own callback. Stops at
   * the first throw (the sends not taken stay kept).
   * @internal
   */
  handOver<C>(
    topic: string,
    callback: (result: SendResult, context: C) => void,
    take: (payload: Uint8Array, attribute: string | undefined, partition: number, callback: SendCallback) => C,
  ): void {
    this.kept.forEach(
      (task) => task.message.topic === topic,
      (task) => {
        task.context = take(task.message.payload, task.message.attribute, task.pinned ?? -1, task.callback as SendCallback)
        task.callback = callback
        this.kept.remove(task)
      },
    )
  }

  private submit(topic: string, payload: Uint8Array | string, options: SendOptions, callback: SendCallback, keep: boolean): boolean {
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'producer is closed')
    if (topic !== this.validTopic) {
      if (!isValidTopicName(topic)) validateTopicName(topic)
      this.validTopic = topic
    }
    const data = typeof payload === 'string' ? Buffer.from(payload) : payload
    let body: Buffer
    let flag: number
    if (options.attribute === undefined && data instanceof Buffer) {
      // encodePayload would only wrap the same bytes in a new Buffer view.
      body = data
      flag = (options.flag ?? 0) & ~FLAG_HAS_ATTRIBUTE
    } else {
      ;({payload: body, flag} = encodePayload(data, options.attribute, options.flag ?? 0))
    }
    const limit = this.messageLimit()
    if (body.length > limit) {
      throw MetaError.invalidArgument(`message of ${body.length} bytes is larger than the broker's limit of ${limit} bytes`, {
        topic,
        size: body.length,
      })
    }
    if (options.partition !== undefined && (!Number.isInteger(options.partition) || options.partition < 0)) {
      throw MetaError.invalidArgument(`invalid partition "${options.partition}": expected a non-negative integer`)
    }
    const task: SendTask = {
      message: {topic, payload: data, attribute: options.attribute},
      body,
      flag,
      crc: checksum(body),
      pinned: options.partition,
      attempts: 0,
      callback,
      context: undefined,
      brokerId: 0,
      partition: -1,
      tx: this.transaction,
      keptAt: -1,
    }
    if (keep) this.kept.add(task)
    this.inFlightCount += 1
    this.queuedByteCount += body.length
    if (this.waitingHead === this.waiting.length && this.hasRoomFor(body.length)) this.admit(task)
    else this.waiting.push(task)
    const more = this.inFlightCount < this.maxInFlight && this.queuedByteCount < this.maxQueuedBytes
    if (!more) this.needDrain = true
    return more
  }

  /**
   * Start a local transaction (MetaQ's beginTransaction): every send until commit() or
   * rollback() goes into it, to partitions of one broker (the first send's), and becomes
   * visible at commit, all together. Sends resolve with the id and partition; offset -1.
   */
  beginTransaction(options: BeginTransactionOptions = {}): TransactionInfo {
    this.transactionCounter = this.transactionCounter >= 2147483647 ? 1 : this.transactionCounter + 1
    return this.enterTransaction(`TX:${this.sessionId}:${this.transactionCounter}`, options.timeoutSeconds ?? 0)
  }

  /**
   * Sends go into a transaction with this key until commit(), rollback() or
   * leaveTransaction() (XaResource uses it for XA branches).
   * @internal
   */
  enterTransaction(key: string, timeoutSeconds: number): Transaction<SendTask> {
    if (this.closed) throw new MetaError('CONNECTION_CLOSED', 'producer is closed')
    if (this.transaction !== undefined)
      throw new MetaError('TRANSACTION_ERROR', `transaction ${this.transaction.key} is still open: commit or roll it back first`)
    if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 0) {
      throw MetaError.invalidArgument(`invalid transaction timeout "${timeoutSeconds}": expected a whole number of seconds >= 0`)
    }
    this.transaction = new Transaction<SendTask>(
      {
        topology: this.topology,
        selector: this.selector,
        sendTimeoutMs: this.sendTimeoutMs,
        commitTimeoutMs: Math.max(30_000, this.sendTimeoutMs),
        complete: (task, result) => this.complete(task, result),
      },
      key,
      this.sessionId,
      timeoutSeconds,
    )
    return this.transaction
  }

  /**
   * Stop sending into the open transaction (XA `end`): resolves once every send in it is
   * answered; returns it.
   * @internal
   */
  async leaveTransaction(): Promise<Transaction<SendTask>> {
    const tx = this.openTransaction('end')
    this.transaction = undefined
    await tx.settled()
    await this.flush()
    return tx
  }

  /** The topology sends go through (XaResource: RECOVER asks every broker). @internal */
  get brokers(): Topology {
    return this.topology
  }

  /** The id this producer's transactions carry (`<IPv4>-<ms>-<n>`). */
  get transactionSessionId(): string {
    return this.sessionId
  }

  /** The open transaction, if any. */
  get currentTransaction(): TransactionInfo | undefined {
    return this.transaction
  }

  /**
   * Commit the open transaction once every send in it is answered; resolves with where its
   * messages went. Rejects with TRANSACTION_ERROR (rolled back) if a send in it failed, TIMEOUT
   * when the broker did not answer (the outcome is unknown).
   */
  async commit(): Promise<TransactionSummary> {
    const tx = this.openTransaction('commit')
    await this.flush()
    try {
      return await tx.commit()
    } finally {
      if (this.transaction === tx) this.transaction = undefined
    }
  }

  /** Roll the open transaction back: none of its messages is stored. */
  async rollback(): Promise<void> {
    const tx = this.openTransaction('roll back')
    this.transaction = undefined
    await tx.rollback()
    await this.flush()
  }

  private openTransaction(what: string): Transaction<SendTask> {
    if (this.transaction === undefined) throw new MetaError('TRANSACTION_ERROR', `no transaction to ${what}: call beginTransaction() first`)
    return this.transaction
  }

  /** Resolve once every message sent so far is acknowledged or failed. */
  flush(): Promise<void> {
    if (this.inFlightCount === 0) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /** Flush, then close connections this producer opened. */
  async close(): Promise<void> {
    if (this.closed) return
    await this.flush()
    this.closed = true
    if (this.ownsTopology) await this.topology.close()
  }

  private messageLimit(): number {
    return this.maxMessageBytes ?? this.router.maxMessageBytes() ?? DEFAULT_MAX_MESSAGE_BYTES
  }

  /** Whether a message of `bytes` may go to a broker now (one always may, when none is out). */
  private hasRoomFor(bytes: number): boolean {
    return this.dispatchedCount === 0 || (this.dispatchedCount < this.maxInFlight && this.dispatchedByteCount + bytes <= this.maxQueuedBytes)
  }

  private admit(task: SendTask): void {
    this.dispatchedCount += 1
    this.dispatchedByteCount += task.body.length
    this.dispatch(task)
  }

  /** Room was freed: send waiting messages, oldest first, while they fit. */
  private admitWaiting(): void {
    while (this.waitingHead < this.waiting.length && this.hasRoomFor(this.waiting[this.waitingHead].body.length)) {
      const task = this.waiting[this.waitingHead]
      this.waiting[this.waitingHead++] = undefined as unknown as SendTask
      this.admit(task)
    }
    if (this.waitingHead === this.waiting.length) {
      this.waiting.length = 0
      this.waitingHead = 0
    } else if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting.splice(0, this.waitingHead)
      this.waitingHead = 0
    }
  }

  private dispatch(task: SendTask): void {
    if (task.tx !== undefined) {
      task.tx.dispatch(task)
      return
    }
    const partitions = this.router.partitions(task)
    if (partitions !== undefined) this.route(task, partitions)
  }

  private route(task: SendTask, partitions: Partition[]): void {
    const target = this.router.target(task, partitions)
    if (target instanceof MetaError) {
      this.fail(task, target)
      return
    }
    const conn = this.router.connection(target.brokerId)
    task.brokerId = target.brokerId
    task.partition = target.partition
    task.attempts += 1
    if (conn === undefined) {
      this.retryOrFail(task, new MetaError('CONNECTION_FAILED', `no connection to broker ${target.brokerId}`))
      return
    }
    if (
      this.batchPut &&
      conn.capabilities.batchPut === true &&
      target.partition >= 0 &&
      RECORD_HEADER_BYTES + task.body.length <= this.batcher.maxBatchBytes(conn)
    ) {
      this.batcher.add(conn, task.message.topic, target.partition, task)
      return
    }
    conn.request(
      (out, opaque) => writePut(out, task.message.topic, target.partition, task.body, task.flag, task.crc, opaque),
      (err, frame) => this.onResponse(task, err, frame),
      this.sendTimeoutMs,
    )
  }

  private onResponse(task: SendTask, err: MetaError | null, frame: ResponseFrame | undefined): void {
    if (err !== null) {
      this.retryOrFail(task, err)
      return
    }
    if (frame!.type !== 'result') {
      this.fail(task, new MetaError('DECODE_ERROR', `unexpected ${frame!.type} response to put`))
      return
    }
    const reply = this.reply
    if (frame!.code === 200 && reply.read(frame!.body)) {
      this.router.succeeded(task.message.topic, task.brokerId, task.partition)
      this.complete(task, {
        success: true,
        topic: task.message.topic,
        partition: reply.partition,
        brokerId: task.brokerId,
        offset: reply.offset,
        id: reply.id,
      })
      return
    }
    if (frame!.code !== 200) {
      this.onRefused(task, frame!.code, frame!.body.toString('utf8'))
      return
    }
    this.fail(
      task,
      new MetaError('DECODE_ERROR', `malformed put reply "${frame!.body.toString('latin1').slice(0, 80)}": expected "<msgId> <partition> <offset>"`),
    )
  }

  /** The broker answered a put (or its batch) with an error status. */
  private onRefused(task: SendTask, code: number, body: string): void {
    const error = MetaError.fromWire(code, body)
    if (error.code === 'INVALID_PARTITION') {
      // The partitions we know are stale (the topic shrank, or its broker restarted with
      // fewer): look them up again; a message the selector placed goes to a valid one.
      this.topology.invalidate(task.message.topic)
      this.router.forget(task.message.topic)
      if (task.pinned === undefined && task.attempts <= this.retries && !this.closed) {
        this.log.debug('partition no longer exists; choosing again', {topic: task.message.topic, partition: task.partition})
        setTimeout(() => this.dispatch(task), RETRY_DELAY_MS)
        return
      }
    }
    // A closed partition (MetaQ's 403): a message the selector placed goes to another one.
    if (error.code === 'PARTITION_CLOSED') this.router.markClosed(task.message.topic, task.brokerId, task.partition)
    // A partition that cannot write (disk full, unavailable): a movable message goes to another one until it recovers.
    else if (error.code === 'DISK_FULL' || error.code === 'SERVICE_UNAVAILABLE')
      this.router.markFailing(task.message.topic, task.brokerId, task.partition, error)
    this.retryOrFail(task, error)
  }

  private onBatchResult(task: SendTask, err: MetaError | null, outcome: BatchOutcome | undefined, frame: ResponseFrame | undefined): void {
    if (outcome !== undefined) {
      this.router.succeeded(task.message.topic, task.brokerId, task.partition)
      this.complete(task, {
        success: true,
        topic: task.message.topic,
        partition: outcome.partition,
        brokerId: task.brokerId,
        offset: outcome.offset,
        id: outcome.id,
      })
    } else if (err !== null) {
      this.retryOrFail(task, err)
    } else {
      this.onRefused(task, frame!.type === 'result' ? frame!.code : 500, frame!.body.toString('utf8'))
    }
  }

  private retryOrFail(task: SendTask, err: MetaError): void {
    if (err.code === 'CONNECTION_FAILED' || err.code === 'CONNECTION_CLOSED' || err.code === 'TIMEOUT') {
      this.router.markDown(task.brokerId)
      this.router.forget(task.message.topic) // refresh connections too
    }
    if (err.retriable && task.attempts <= this.retries && !this.closed) {
      this.log.debug('retrying send', {topic: task.message.topic, attempt: task.attempts, error: err.message})
      setTimeout(() => this.dispatch(task), RETRY_DELAY_MS * task.attempts)
      return
    }
    this.fail(task, err)
  }

  private fail(task: SendTask, error: MetaError): void {
    this.complete(task, {
      success: false,
      topic: task.message.topic,
      partition: task.partition,
      brokerId: task.brokerId,
      offset: -1,
      id: undefined,
      errorMessage: error.status === 403 ? '403' : error.message,
      error,
    })
  }

  private complete(task: SendTask, result: SendResult): void {
    this.inFlightCount -= 1
    this.queuedByteCount -= task.body.length
    this.dispatchedCount -= 1
    this.dispatchedByteCount -= task.body.length
    if (task.keptAt >= 0) {
      if (!result.success) this.onKeptFailure?.(task.message.topic, result)
      if (task.keptAt >= 0) this.kept.remove(task)
    }
    try {
      ;(task.callback as (result: SendResult, context: unknown) => void)(result, task.context)
    } catch (error) {
      reportCallbackError(this, error)
    }
    if (this.waitingHead < this.waiting.length) this.admitWaiting()
    if (this.needDrain && this.inFlightCount < this.maxInFlight && this.queuedByteCount < this.maxQueuedBytes) {
      this.needDrain = false
      this.emit('drain')
    }
    if (this.inFlightCount === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters
      this.idleWaiters = []
      for (const resolve of waiters) resolve()
    }
  }
}

export function createProducer(options: ProducerOptions = {}): Producer {
  return new Producer(options)
}
