/**
 * A producer's local transaction (docs/protocol.md#transactions, MetaQ's `beginTransaction()`):
 * every message sent inside it goes to partitions of one broker (the one the first send chose),
 * carries the key `TX:<sessionId>:<n>`, and becomes visible when {@link Transaction.commit}
 * returns, all together; {@link Transaction.rollback} (or a failed send, or a lost connection)
 * leaves nothing.
 *
 * The broker is told `BEGIN` just before the first put (with the timeout, if any), on the
 * connection the puts use: local transactions are scoped to that connection on the broker.
 * Puts are pipelined; to a broker that lists `transactions` in its capabilities they leave as
 * transactional `put-batch` frames (one per partition and turn). Each send resolves with the
 * message id and partition; the offset is -1 (known only at commit). A send inside a
 * transaction is never retried: a failed one dooms the transaction, and commit() then rolls it
 * back and rejects.
 */
import {networkInterfaces} from 'node:os'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import {encodeTransaction, type TransactionType} from '../protocol/commands/transaction.js'
import {encodeTxCommit, parseTxCommitReply, type CommittedPartition} from '../protocol/commands/tx-admin.js'
import type {ResponseFrame} from '../protocol/frames.js'
import {encodePut} from '../protocol/commands/put.js'
import {parsePutReply} from '../protocol/commands/put-reply.js'
import {parsePrepareVote, parseXaErrorBody, XA_OK, XA_RBROLLBACK, XA_RDONLY, XAER_NOTA} from '../protocol/xa.js'
import type {BrokerConnection} from './connection.js'
import {PutBatcher, type BatchOutcome} from './put-batcher.js'
import type {PartitionSelector} from './partition-selector.js'
import type {OutgoingMessage, Partition, SendResult, Topology} from './types.js'

/** What a transaction needs of a message the producer accepted. */
export interface TxItem {
  message: OutgoingMessage
  body: Buffer
  flag: number
  crc: number
  pinned: number | undefined
  brokerId: number
  partition: number
}

interface TransactionHost<T extends TxItem> {
  topology: Topology
  selector: PartitionSelector
  sendTimeoutMs: number
  /** Deadline of COMMIT and ROLLBACK (a big transaction takes time to append). */
  commitTimeoutMs: number
  /** The message's outcome (success or failure). */
  complete(item: T, result: SendResult): void
}

/** One partition's share of a transaction. */
interface TransactionPartition {
  topic: string
  partition: number
  messages: number
  /**
   * After a commit on a meta broker: the offsets of the first and the last message (the batch
   * is contiguous). Undefined before the commit, and from a MetaQ broker (which does not say).
   */
  firstOffset?: number
  lastOffset?: number
}

/** Where a committed transaction's messages went. */
export interface TransactionSummary {
  key: string
  brokerId: number | undefined
  messages: number
  partitions: TransactionPartition[]
}

export type TransactionState = 'open' | 'committing' | 'committed' | 'rolled-back'

/** What the application sees of a producer's transaction. */
export interface TransactionInfo {
  readonly key: string
  readonly sessionId: string
  readonly state: TransactionState
  summary(): TransactionSummary
}

let sessionSequence = 0
/** A new transaction session id, `<IPv4>-<ms>-<n>` (MetaQ's form: no ':' allowed in a transaction key). */
export function newSessionId(): string {
  let ip = '127.0.0.1'
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal)
    if (found !== undefined) {
      ip = found.address
      break
    }
  }
  return `${ip}-${Date.now()}-${++sessionSequence}`
}

/**
 * A transaction command's failure as a MetaError: TRANSACTION_ERROR carrying `details.xaCode`
 * for the broker's XA errors, the request's own error (TIMEOUT: the outcome is unknown) else.
 */
export function transactionError(frame: ResponseFrame | undefined, err: MetaError | null, what: string): MetaError {
  if (err !== null) {
    if (err.code === 'TIMEOUT') return new MetaError('TIMEOUT', `${what}: no answer in time; the outcome is unknown`, {cause: err})
    return err
  }
  const body = frame!.body.toString('utf8')
  const xa = parseXaErrorBody(body)
  if (xa !== undefined) return new MetaError('TRANSACTION_ERROR', `${what}: ${xa.message}`, {details: {xaCode: xa.xaCode}})
  return MetaError.fromWire(frame!.type === 'result' ? frame!.code : 500, body)
}

/** Send one `transaction` command; resolves with the 200 body. */
export function transactionCommand(
  conn: BrokerConnection,
  cmd: {txKey: string; sessionId: string; txType: TransactionType; timeoutSeconds?: number; uniqueQualifier?: string},
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    conn.request(
      (out, opaque) => encodeTransaction(out, {timeoutSeconds: 0, uniqueQualifier: undefined, ...cmd, opaque}),
      (err, frame) => {
        if (err === null && frame!.type === 'result' && frame!.code === 200) resolve(frame!.body.toString('utf8'))
        else reject(transactionError(frame, err, `${cmd.txType} of ${cmd.txKey}`))
      },
      timeoutMs,
    )
  })
}

/** PREPARE's answer as a vote; DECODE_ERROR when it is neither XA_OK nor XA_RDONLY. */
export function prepareVote(body: string, key: string): number {
  const vote = parsePrepareVote(body)
  if (vote === undefined)
    throw new MetaError('DECODE_ERROR', `malformed PREPARE reply "${body.slice(0, 80)}" for ${key}: expected ${XA_OK} (XA_OK) or ${XA_RDONLY} (XA_RDONLY)`)
  return vote
}

export class Transaction<T extends TxItem = TxItem> implements TransactionInfo {
  private stateNow: TransactionState = 'open'
  private brokerId: number | undefined
  private conn: BrokerConnection | undefined
  private readonly partitions = new Map<string, Partition[]>()
  /** Messages waiting for a lookup (routing stays in send order). */
  private queued = 0
  private chain: Promise<void> = Promise.resolve()
  private failure: MetaError | undefined
  private readonly counts = new Map<string, TransactionPartition & {recordBytes: number; lastRecordBytes: number}>()
  private readonly batcher: PutBatcher<T>
  private firstPick: {item: T; partition: number} | undefined

  constructor(
    private readonly host: TransactionHost<T>,
    readonly key: string,
    readonly sessionId: string,
    private readonly timeoutSeconds: number,
  ) {
    this.batcher = new PutBatcher<T>(host.sendTimeoutMs, (item, err, outcome, frame) => this.settle(item, err, outcome, frame))
  }

  get state(): TransactionState {
    return this.stateNow
  }

  /** Route one accepted message (the producer's window already counts it). */
  dispatch(item: T): void {
    if (this.stateNow !== 'open') {
      this.fail(item, new MetaError('TRANSACTION_ERROR', `transaction ${this.key} is ${this.stateNow}: it takes no more messages`))
      return
    }
    const known = this.partitions.get(item.message.topic)
    if (this.conn !== undefined && known !== undefined && this.queued === 0) {
      this.route(item, known)
      return
    }
    this.queued += 1
    this.chain = this.chain.then(async () => {
      try {
        const partitions = await this.lookup(item)
        if (this.stateNow !== 'open') {
          this.fail(item, new MetaError('TRANSACTION_ERROR', `transaction ${this.key} is ${this.stateNow}: it takes no more messages`))
        } else {
          this.route(item, partitions)
        }
      } catch (error) {
        this.fail(item, error instanceof MetaError ? error : new MetaError('INTERNAL', String(error)))
      } finally {
        this.queued -= 1
      }
    })
  }

  /**
   * Commit: resolves once the broker has appended every message (call it after every send was
   * answered; the producer's commit() waits for that). A failed send rolls the transaction back
   * and rejects with TRANSACTION_ERROR.
   */
  async commit(): Promise<TransactionSummary> {
    this.checkOpen('commit')
    await this.chain
    if (this.failure !== undefined) {
      const failure = this.failure
      await this.rollback().catch(() => undefined)
      throw new MetaError('TRANSACTION_ERROR', `transaction ${this.key} was rolled back: a send failed: ${failure.message}`, {cause: failure})
    }
    this.stateNow = 'committing'
    if (this.conn !== undefined) {
      try {
        if (this.conn.capabilities.transactions === true) this.placeBatches(await this.commitWithOffsets(this.conn))
        else await transactionCommand(this.conn, {txKey: this.key, sessionId: this.sessionId, txType: 'COMMIT_ONE_PHASE'}, this.host.commitTimeoutMs)
      } catch (error) {
        // The outcome of a commit that got no answer is unknown (TIMEOUT says so).
        this.stateNow = 'rolled-back'
        throw error
      }
    }
    this.stateNow = 'committed'
    return this.summary()
  }

  /** `tx-commit` (meta extension): COMMIT_ONE_PHASE answering where each partition's batch went. */
  private commitWithOffsets(conn: BrokerConnection): Promise<CommittedPartition[]> {
    return new Promise((resolve, reject) => {
      conn.request(
        (out, opaque) => encodeTxCommit(out, {txKey: this.key, sessionId: this.sessionId, opaque}),
        (err, frame) => {
          if (err === null && frame!.type === 'result' && frame!.code === 200) {
            const body = frame!.body.toString('utf8')
            const placed = parseTxCommitReply(body)
            if (placed !== undefined) resolve(placed)
            else reject(new MetaError('DECODE_ERROR', `malformed tx-commit reply "${body.slice(0, 80)}" (the transaction is committed)`))
          } else {
            reject(transactionError(frame, err, `commit of ${this.key}`))
          }
        },
        this.host.commitTimeoutMs,
      )
    })
  }

  private placeBatches(placed: CommittedPartition[]): void {
    for (const batch of placed) {
      const count = this.counts.get(`${batch.topic}\0${batch.partition}`)
      if (count === undefined) continue
      count.firstOffset = batch.offset
      count.lastOffset = batch.offset + count.recordBytes - count.lastRecordBytes
    }
  }

  /** Roll back: nothing of the transaction is stored. */
  async rollback(): Promise<void> {
    if (this.stateNow === 'rolled-back') return
    this.checkOpen('roll back')
    this.stateNow = 'rolled-back'
    await this.chain
    if (this.conn === undefined) return
    await transactionCommand(this.conn, {txKey: this.key, sessionId: this.sessionId, txType: 'ROLLBACK'}, this.host.commitTimeoutMs).catch(
      (error: MetaError) => {
        // Unknown on the broker (timed out, or its connection was lost): nothing was stored either.
        if (error.code === 'TRANSACTION_ERROR' && error.details?.xaCode === XAER_NOTA) return
        throw error
      },
    )
  }

  /** XA: the broker it runs on and the connection (undefined until the first send). */
  get connection(): {brokerId: number; conn: BrokerConnection} | undefined {
    return this.conn === undefined ? undefined : {brokerId: this.brokerId!, conn: this.conn}
  }

  /** XA `end`: wait until every message routed so far is on its way. */
  async settled(): Promise<void> {
    await this.chain
  }

  /** XA PREPARE: the vote (XA_OK 0, XA_RDONLY 3; a transaction that sent nothing is read-only). */
  async prepare(): Promise<number> {
    this.checkOpen('prepare')
    await this.chain
    if (this.failure !== undefined)
      throw new MetaError('TRANSACTION_ERROR', `transaction ${this.key} cannot be prepared: a send failed: ${this.failure.message}`, {
        details: {xaCode: XA_RBROLLBACK},
      })
    if (this.conn === undefined) {
      this.stateNow = 'committed'
      return XA_RDONLY
    }
    const vote = prepareVote(
      await transactionCommand(this.conn, {txKey: this.key, sessionId: this.sessionId, txType: 'PREPARE'}, this.host.commitTimeoutMs),
      this.key,
    )
    if (vote === XA_RDONLY) this.stateNow = 'committed'
    return vote
  }

  /** XA commit after prepare (two-phase) or instead of it (one-phase). */
  async commitXa(onePhase: boolean): Promise<void> {
    if (onePhase) {
      await this.commit()
      return
    }
    if (this.conn === undefined) return
    await transactionCommand(this.conn, {txKey: this.key, sessionId: this.sessionId, txType: 'COMMIT_TWO_PHASE'}, this.host.commitTimeoutMs)
    this.stateNow = 'committed'
  }

  /** Messages and partitions so far. */
  summary(): TransactionSummary {
    const partitions = [...this.counts.values()]
      .map(({recordBytes: _bytes, lastRecordBytes: _last, ...p}) => p)
      .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition)
    return {key: this.key, brokerId: this.brokerId, messages: partitions.reduce((n, p) => n + p.messages, 0), partitions}
  }

  private checkOpen(what: string): void {
    if (this.stateNow !== 'open') throw new MetaError('TRANSACTION_ERROR', `cannot ${what} transaction ${this.key}: it is ${this.stateNow}`)
  }

  /** The topic's partitions, and for the first message the broker and its BEGIN. */
  private async lookup(item: T): Promise<Partition[]> {
    const topic = item.message.topic
    let partitions = this.partitions.get(topic)
    if (partitions === undefined) {
      partitions = await this.host.topology.publishPartitions(topic)
      this.partitions.set(topic, partitions)
    }
    if (this.conn === undefined) {
      let brokerId: number
      if (partitions.length === 0) brokerId = this.host.topology.brokerIds()[0] ?? 0
      else if (item.pinned !== undefined && item.pinned < partitions.length) brokerId = partitions[item.pinned].brokerId
      else {
        // The selector's choice for the first message picks the broker, and is that message's partition.
        const chosen = this.host.selector(topic, partitions, item.message)
        brokerId = chosen.brokerId
        this.firstPick = {item, partition: chosen.partition}
      }
      const conn = await this.host.topology.connection(brokerId)
      await conn.ready()
      if (this.conn === undefined) {
        this.brokerId = brokerId
        this.conn = conn
        transactionCommand(
          conn,
          {txKey: this.key, sessionId: this.sessionId, txType: 'BEGIN', timeoutSeconds: this.timeoutSeconds},
          this.host.sendTimeoutMs,
        ).catch((error: MetaError) => (this.failure ??= error))
      }
    }
    return partitions
  }

  private route(item: T, partitions: Partition[]): void {
    const topic = item.message.topic
    let partition: number
    if (partitions.length === 0) {
      partition = item.pinned ?? 0
    } else if (item.pinned !== undefined) {
      const target = partitions[item.pinned]
      if (target === undefined || target.brokerId !== this.brokerId) {
        this.fail(
          item,
          MetaError.invalidArgument(
            `partition ${item.pinned} of topic "${topic}" is not on broker ${this.brokerId}, where transaction ${this.key} runs: all messages of a transaction go to one broker`,
          ),
        )
        return
      }
      partition = target.partition
    } else if (this.firstPick?.item === item) {
      partition = this.firstPick.partition
      this.firstPick = undefined
    } else {
      const candidates = partitions.filter((p) => p.brokerId === this.brokerId)
      if (candidates.length === 0) {
        this.fail(
          item,
          MetaError.invalidArgument(
            `topic "${topic}" has no partition on broker ${this.brokerId}, where transaction ${this.key} runs: all messages of a transaction go to one broker`,
          ),
        )
        return
      }
      partition = this.host.selector(topic, candidates, item.message).partition
    }
    item.brokerId = this.brokerId!
    item.partition = partition
    const conn = this.conn!
    if (conn.capabilities.transactions === true && RECORD_HEADER_BYTES + item.body.length <= this.batcher.maxBatchBytes(conn)) {
      this.batcher.add(conn, topic, partition, item, this.key)
      return
    }
    conn.request(
      (out, opaque) => encodePut(out, {topic, partition, flag: item.flag, checksum: item.crc, txKey: this.key, opaque, body: item.body}),
      (err, frame) => this.onPut(item, err, frame),
      this.host.sendTimeoutMs,
    )
  }

  private onPut(item: T, err: MetaError | null, frame: ResponseFrame | undefined): void {
    if (err === null && frame!.type === 'result' && frame!.code === 200) {
      // `<msgId> <partition> -1`: the offset is known at commit.
      const reply = parsePutReply(frame!.body)
      if (reply !== undefined) {
        this.settle(item, null, {id: reply.id, partition: reply.partition, offset: -1}, undefined)
        return
      }
      err = new MetaError('DECODE_ERROR', `malformed transactional put reply "${frame!.body.toString('latin1').slice(0, 80)}"`)
    }
    this.settle(item, err, undefined, frame)
  }

  private settle(item: T, err: MetaError | null, outcome: BatchOutcome | undefined, frame: ResponseFrame | undefined): void {
    if (outcome !== undefined) {
      const slot = `${item.message.topic}\0${outcome.partition}`
      const size = RECORD_HEADER_BYTES + item.body.length
      const count = this.counts.get(slot)
      if (count === undefined)
        this.counts.set(slot, {topic: item.message.topic, partition: outcome.partition, messages: 1, recordBytes: size, lastRecordBytes: size})
      else {
        count.messages += 1
        count.recordBytes += size
        count.lastRecordBytes = size
      }
      this.host.complete(item, {success: true, topic: item.message.topic, partition: outcome.partition, brokerId: item.brokerId, offset: -1, id: outcome.id})
      return
    }
    const error = err ?? MetaError.fromWire(frame?.type === 'result' ? frame.code : 500, frame?.body.toString('utf8') ?? '')
    this.fail(item, error)
  }

  private fail(item: T, error: MetaError): void {
    this.failure ??= error
    this.host.complete(item, {
      success: false,
      topic: item.message.topic,
      partition: item.partition,
      brokerId: item.brokerId,
      offset: -1,
      id: undefined,
      errorMessage: error.message,
      error,
    })
  }
}
