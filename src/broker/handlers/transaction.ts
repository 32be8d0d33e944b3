/**
 * transaction (docs/protocol.md#transaction, docs/protocol.md#transactions) and the transactional
 * forms of put and put-batch.
 *
 * Replies as MetaQ gives them: BEGIN, COMMIT_*, ROLLBACK, FORGET → 200 with an empty body;
 * PREPARE → 200 with the vote (0 XA_OK, 3 XA_RDONLY); RECOVER → 200 with the keys joined by
 * `\r\n`; END → no answer; errors → 500 `XAException:code=<n>,msg=<text>`. A transactional
 * put answers `<msgId> <partition> -1` (the offset is known at commit).
 *
 * With access control (docs/security.md#transactions) a transaction belongs to the principal
 * that began it: anyone else's END, PREPARE, COMMIT_*, ROLLBACK, FORGET, tx-commit or
 * transactional put is refused 403 unless it holds `tx` (or `admin`); RECOVER lists what the
 * caller may finish; a tx-commit reply names only topics the caller may read or write.
 */
import {checksum} from '../../protocol/crc.js'
import {NO_CHECKSUM, type PutCommand} from '../../protocol/commands/put.js'
import type {PutBatchCommand} from '../../protocol/commands/put-batch.js'
import type {TransactionCommand} from '../../protocol/commands/transaction.js'
import {formatTxCommitReply, type TxCommitCommand, type TxDecideCommand, type TxListCommand} from '../../protocol/commands/tx-admin.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {checkRecordBatch, RECORD_HEADER_BYTES, writeRecordHeader} from '../../protocol/message-set.js'
import {mayFinishTransaction, recoverScope, transactionOwner} from '../auth/check.js'
import {ANONYMOUS_PRINCIPAL, type TxCaller} from '../tx/manager.js'
import type {RequestFrame} from '../../protocol/frames.js'
import type {Connection} from '../connection.js'
import {putRefusal, type BrokerContext} from '../context.js'
import {formatPrepareVote, formatRecoverReply, XaError, XAER_RMERR, XA_RETRY} from '../../protocol/xa.js'
import {failPut, recordsHeld, topicRefusal, wrongPartition} from './put.js'

export function handleTransaction(ctx: BrokerContext, conn: Connection, frame: TransactionCommand): void {
  // A command on another principal's transaction is refused (403), END included.
  if (frame.txType !== 'BEGIN' && frame.txType !== 'RECOVER' && !mayAct(ctx, conn, frame, frame.txKey)) return
  // END is one-way (MetaQ never answers it) and changes nothing.
  if (frame.txType === 'END') return
  const {opaque} = frame
  const tx = ctx.tx
  try {
    switch (frame.txType) {
      case 'BEGIN':
        tx.begin(caller(ctx, conn), frame.txKey, frame.timeoutSeconds)
        conn.sendResult(Status.OK, opaque)
        return
      case 'RECOVER': {
        const scope = ctx.access === undefined ? {visible: undefined} : recoverScope(ctx.access, conn, frame)
        if (scope === undefined) return
        conn.sendResult(Status.OK, opaque, formatRecoverReply(tx.recoverKeys(frame.uniqueQualifier, scope.visible)))
        return
      }
      case 'FORGET':
        tx.forget(frame.txKey)
        conn.sendResult(Status.OK, opaque)
        return
      case 'PREPARE':
        return answerLater(conn, opaque, tx.prepare(conn.id, frame.txKey).then(formatPrepareVote))
      case 'COMMIT_ONE_PHASE':
      case 'COMMIT_TWO_PHASE':
        refuseCommitWhenFenced(ctx)
        return answerLater(
          conn,
          opaque,
          tx.commit(conn.id, frame.txKey, frame.txType === 'COMMIT_ONE_PHASE').then(() => ''),
        )
      case 'ROLLBACK':
        return answerLater(
          conn,
          opaque,
          tx.rollback(conn.id, frame.txKey).then(() => ''),
        )
      default:
        throw new XaError(XAER_RMERR, `unknown transaction command type "${String(frame.txType)}"`)
    }
  } catch (error) {
    sendXaError(ctx, conn, opaque, error)
  }
}

/** tx-commit (meta extension): COMMIT_ONE_PHASE answering where each partition's batch went. */
export function handleTxCommit(ctx: BrokerContext, conn: Connection, frame: TxCommitCommand): void {
  if (!mayAct(ctx, conn, frame, frame.txKey)) return
  let work: Promise<string>
  try {
    refuseCommitWhenFenced(ctx)
    work = ctx.tx.commit(conn.id, frame.txKey, true).then((batches) => formatTxCommitReply(readable(ctx, conn, batches)))
  } catch (error) {
    work = Promise.reject(error)
  }
  answerLater(conn, frame.opaque, work)
}

/** Who begins a transaction on this connection: with access control, its owner and the principal its caps count. */
function caller(ctx: BrokerContext, conn: Connection): TxCaller {
  if (ctx.access === undefined) return {connId: conn.id}
  return {connId: conn.id, owner: transactionOwner(conn), principal: conn.user ?? ANONYMOUS_PRINCIPAL}
}

/**
 * With access control: whether the connection may act on the transaction `txKey` names (its
 * own, or it holds `tx` or `admin`); else answered 403. One not known is left to the
 * transaction manager (XAER_NOTA, as for its owner).
 */
function mayAct(ctx: BrokerContext, conn: Connection, frame: RequestFrame, txKey: string): boolean {
  if (ctx.access === undefined) return true
  const found = ctx.tx.ownerOf(conn.id, txKey)
  return found === undefined || mayFinishTransaction(ctx.access, conn, frame, txKey, found.owner)
}

/** The batches of a commit whose topic the caller may read or write (all without access control). */
function readable<T extends {topic: string}>(ctx: BrokerContext, conn: Connection, batches: T[]): T[] {
  if (ctx.access === undefined) return batches
  const rights = ctx.access.rightsOf(conn.user)
  return batches.filter((b) => rights.allows('get', b.topic) || rights.allows('put', b.topic))
}

/** tx-list (meta extension): prepared XA transactions and heuristic outcomes, as JSON. */
export function handleTxList(ctx: BrokerContext, conn: Connection, frame: TxListCommand): void {
  conn.sendResult(Status.OK, frame.opaque, JSON.stringify(ctx.tx.list()))
}

/** tx-decide (meta extension): an operator's heuristic commit or rollback of a prepared XA transaction. */
export function handleTxDecide(ctx: BrokerContext, conn: Connection, frame: TxDecideCommand): void {
  let work: Promise<string>
  try {
    if (frame.decision === 'commit') refuseCommitWhenFenced(ctx)
    work = ctx.tx.decide(frame.xid, frame.decision === 'commit').then(() => '')
  } catch (error) {
    work = Promise.reject(error)
  }
  answerLater(conn, frame.opaque, work)
}

/**
 * A commit appends like a put: a broker that refuses puts (its id failed over, or its lease on
 * the id ran out) refuses it with XA_RETRY; the transaction stays as it was.
 */
function refuseCommitWhenFenced(ctx: BrokerContext): void {
  const refusal = putRefusal(ctx)
  if (refusal !== undefined) throw new XaError(XA_RETRY, refusal.message)
}

function answerLater(conn: Connection, opaque: number, work: Promise<string>): void {
  conn.beginRequest()
  work
    .then(
      (body) => conn.sendResult(Status.OK, opaque, body),
      (error: unknown) => sendXaError(undefined, conn, opaque, error),
    )
    .finally(() => conn.endRequest())
}

function sendXaError(ctx: BrokerContext | undefined, conn: Connection, opaque: number, error: unknown): void {
  const xa = error instanceof XaError ? error : new XaError(XAER_RMERR, (error as Error).message)
  ctx?.log.debug('transaction command failed', {code: xa.xaCode, reason: xa.message})
  conn.sendResult(Status.INTERNAL_SERVER_ERROR, opaque, xa.wireBody) // MetaQ's fixed form XAException:code=<n>,msg=<text>, no marker
}

/**
 * A put carrying a transaction key (docs/protocol.md#put): no closed-partition check, the
 * partition must be explicit; the message gets its id now and goes to the journal only.
 */
export function handleTransactionalPut(ctx: BrokerContext, conn: Connection, frame: PutCommand): void {
  ctx.counters.cmdPut += 1
  const partition = checkTarget(ctx, conn, frame.topic, frame.partition, frame.opaque)
  if (partition === undefined) return
  const crc = checksum(frame.body)
  if (frame.checksum !== NO_CHECKSUM && frame.checksum !== crc) {
    failPut(ctx, conn, frame.topic, frame.opaque, partition, new MetaError('CHECKSUM_MISMATCH', `Checksum failure,expected ${crc} but was ${frame.checksum}`))
    return
  }
  const id = ctx.ids.next()
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + frame.body.length)
  writeRecordHeader(record, 0, frame.body.length, crc, id, frame.flag)
  frame.body.copy(record, RECORD_HEADER_BYTES)
  if (!intoTransaction(ctx, conn, frame, frame.txKey!, frame.topic, partition, record, 1, frame.opaque)) return
  conn.sendPutResult(frame.opaque, id, partition, -1)
}

/** put-batch with a transaction key: every record gets its id; reply `<partition> -1 <runs>`. */
export function handleTransactionalPutBatch(ctx: BrokerContext, conn: Connection, frame: PutBatchCommand): void {
  ctx.counters.cmdPut += recordsHeld(frame.body, frame.count)
  const partition = checkTarget(ctx, conn, frame.topic, frame.partition, frame.opaque)
  if (partition === undefined) return
  const body = frame.body
  try {
    checkRecordBatch(body, frame.count)
  } catch (error) {
    const reason = error as MetaError
    failPut(
      ctx,
      conn,
      frame.topic,
      frame.opaque,
      partition,
      new MetaError(reason.code === 'CHECKSUM_MISMATCH' ? 'CHECKSUM_MISMATCH' : 'INVALID_MESSAGE', reason.message),
    )
    return
  }
  // The body is a view of the socket's chunk: the transaction keeps its own copy.
  const records = Buffer.from(body)
  const first = ctx.ids.next()
  records.writeBigInt64BE(first, 8)
  let runs = `0:${first}`
  let prev = first
  for (let pos = RECORD_HEADER_BYTES + records.readInt32BE(0), i = 1; pos < records.length; pos += RECORD_HEADER_BYTES + records.readInt32BE(pos), i++) {
    const id = ctx.ids.next()
    records.writeBigInt64BE(id, pos + 8)
    if (id !== prev + 1n) runs += ` ${i}:${id}`
    prev = id
  }
  if (!intoTransaction(ctx, conn, frame, frame.txKey!, frame.topic, partition, records, frame.count, frame.opaque)) return
  conn.sendResult(Status.OK, frame.opaque, `${partition} -1 ${runs}`)
}

/** The partition a transactional put goes to, or undefined after answering why not. */
function checkTarget(ctx: BrokerContext, conn: Connection, topicName: string, partition: number, opaque: number): number | undefined {
  if (partition < 0) {
    failPut(ctx, conn, topicName, opaque, partition, new MetaError('TRANSACTION_ERROR', `Invalid partition for transaction command:${partition}`))
    return undefined
  }
  const topic = ctx.topics.resolve(topicName)
  if (topic === undefined) {
    failPut(ctx, conn, topicName, opaque, partition, topicRefusal(topicName))
    return undefined
  }
  if (partition >= topic.numPartitions) {
    failPut(ctx, conn, topicName, opaque, partition, wrongPartition(topicName, partition, topic.numPartitions))
    return undefined
  }
  // Refused now rather than at commit: the commit creates the partition.
  const refusal = ctx.logs.get(topicName, partition) === undefined ? ctx.topics.creationRefusal(topic, partition, ctx.store) : undefined
  if (refusal !== undefined) {
    failPut(ctx, conn, topicName, opaque, partition, refusal)
    return undefined
  }
  return partition
}

function intoTransaction(
  ctx: BrokerContext,
  conn: Connection,
  frame: RequestFrame,
  txKey: string,
  topic: string,
  partition: number,
  records: Buffer,
  count: number,
  opaque: number,
): boolean {
  if (!mayAct(ctx, conn, frame, txKey)) {
    ctx.counters.putFailed += count
    return false
  }
  try {
    ctx.tx.put(conn.id, txKey, topic, partition, records, count)
    return true
  } catch (error) {
    const reason = error instanceof MetaError ? error : new MetaError('TRANSACTION_ERROR', (error as Error).message)
    failPut(ctx, conn, topic, opaque, partition, reason)
    return false
  }
}
