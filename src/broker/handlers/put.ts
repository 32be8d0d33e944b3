/**
 * put (docs/protocol.md#put): validate, assign an id, append, acknowledge.
 *
 * Durability (docs/invariants.md): the `result 200` for a put is written only from the
 * storage callback, i.e. after the record's bytes are in the segment file (threshold mode:
 * unflushThreshold > 0) or after an fdatasync that covers them (group commit:
 * unflushThreshold <= 0). A failed write answers 500 and leaves no partial record.
 */
import {checksum} from '../../protocol/crc.js'
import {NO_CHECKSUM, type PutCommand} from '../../protocol/commands/put.js'
import type {PutBatchCommand} from '../../protocol/commands/put-batch.js'
import {RECORD_HEADER_BYTES} from '../../protocol/message-set.js'
import {messageIdOfHalves} from '../../protocol/message-id.js'
import {int32At} from '../../protocol/output-buffer.js'
import {isMetaError, MetaError, Status, type ErrorCode} from '../../protocol/errors.js'
import {validateTopicName} from '../../protocol/names.js'
import type {RequestFrame} from '../../protocol/frames.js'
import type {PartitionLog} from '../../storage/index.js'
import type {Connection} from '../connection.js'
import {putRefusal, type BrokerContext} from '../context.js'
import {BothSides, type SyncMaster} from '../replication/sync-master.js'

export function handlePut(ctx: BrokerContext, conn: Connection, frame: PutCommand): void {
  ctx.counters.cmdPut += 1
  if (ctx.replica !== undefined) return failPut(ctx, conn, frame.topic, frame.opaque, frame.partition, ctx.replica.refusal())
  const gate = putRefusal(ctx)
  if (gate !== undefined) return failPut(ctx, conn, frame.topic, frame.opaque, frame.partition, gate)
  if (ctx.topics.isClosed(frame.topic, frame.partition)) {
    ctx.counters.putFailed += 1
    conn.sendError('PARTITION_CLOSED', frame.opaque, `Partition[${ctx.config.system.brokerId}-${frame.partition}] has been closed`)
    return
  }
  const topic = ctx.topics.resolve(frame.topic)
  if (topic === undefined) {
    failPut(ctx, conn, frame.topic, frame.opaque, frame.partition, topicRefusal(frame.topic))
    return
  }
  const partition = frame.partition === -1 ? ctx.topics.randomPartition(topic) : frame.partition
  if (partition < 0 || partition >= topic.numPartitions) {
    failPut(ctx, conn, frame.topic, frame.opaque, partition, wrongPartition(frame.topic, partition, topic.numPartitions))
    return
  }
  const crc = checksum(frame.body)
  if (frame.checksum !== NO_CHECKSUM && frame.checksum !== crc) {
    failPut(ctx, conn, frame.topic, frame.opaque, partition, new MetaError('CHECKSUM_MISMATCH', `Checksum failure,expected ${crc} but was ${frame.checksum}`))
    return
  }
  // Synchronous replication: refused before anything is created or stored while the slave is away.
  const sync = ctx.sync
  const refusal = sync?.refusal(ctx.logs.get(frame.topic, partition))
  if (refusal !== undefined) {
    failPut(ctx, conn, frame.topic, frame.opaque, partition, refusal)
    return
  }
  // The log exists for every put but a partition's first: `instanceof` (a call of V8's
  // generic InstanceOf builtin here) only when it had to be created.
  let log = ctx.logs.get(frame.topic, partition)
  if (log === undefined) {
    const created = ctx.topics.creationRefusal(topic, partition, ctx.store) ?? logFor(ctx, frame.topic, partition)
    if (created instanceof MetaError) {
      failPut(ctx, conn, frame.topic, frame.opaque, partition, created)
      return
    }
    log = created
  }
  if (topic.stat) {
    ctx.realtime.record(frame.topic, 'put')
    ctx.realtime.record(frame.topic, 'message_size', frame.body.length)
  }
  ctx.ids.nextHalves()
  const idHigh = ctx.ids.high
  const idLow = ctx.ids.low
  const opaque = frame.opaque
  const topicName = frame.topic
  const bodyBytes = frame.body.length
  conn.beginRequest(bodyBytes)
  // The callback keeps what the answer needs, not the frame: the body (a view of the socket
  // chunk) is garbage once append has copied it.
  let offset = 0
  const startedAt = ctx.latency.put.sample() ? performance.now() : -1
  try {
    if (sync?.connected === true) {
      replicatedPut(ctx, conn, sync, log, frame, messageIdOfHalves(idHigh, idLow), partition, crc)
      return
    }
    offset = log.appendOfHalves(idHigh, idLow, frame.flag, frame.body, crc, (err) => {
      if (startedAt >= 0) ctx.latency.put.observeMs(performance.now() - startedAt)
      ctx.putOutcome(err !== null)
      if (err === null) {
        conn.sendPutResultOfHalves(opaque, idHigh, idLow, partition, offset)
      } else {
        failPut(ctx, conn, topicName, opaque, partition, err)
      }
      conn.endRequest(bodyBytes)
    })
  } catch (error) {
    // The log refused the append before taking it (closed): nothing was stored.
    failPut(ctx, conn, topicName, opaque, partition, asMetaError(error, 'STORAGE_ERROR'))
    conn.endRequest(bodyBytes)
  }
}

/**
 * A put under synchronous replication: appended here and forwarded to the slave in the same
 * turn, acknowledged once both have it (a storage failure still counts as one for putOutcome).
 */
function replicatedPut(
  ctx: BrokerContext,
  conn: Connection,
  sync: SyncMaster,
  log: PartitionLog,
  frame: PutCommand,
  id: bigint,
  partition: number,
  crc: number,
): void {
  const {opaque, topic} = frame
  const bodyBytes = frame.body.length
  let offset = 0
  const both = new BothSides((err, storageFailed) => {
    ctx.putOutcome(storageFailed)
    if (err === null) conn.sendPutResult(opaque, id, partition, offset)
    else failPut(ctx, conn, topic, opaque, partition, err)
    conn.endRequest(bodyBytes)
  })
  offset = log.append(id, frame.flag, frame.body, crc, both.local)
  sync.replicateOne(log, offset, id, frame.flag, frame.body, crc, both.remote)
}

/**
 * A request whose body was over the message limit (up to OVERSIZE_SKIP_FACTOR times it): the
 * decoder skipped the body without buffering it; answer with an error naming both sizes.
 * A put gets MetaQ's put failure body.
 */
export function handleOversize(ctx: BrokerContext, conn: Connection, frame: RequestFrame, bodyBytes: number): void {
  const maxTransferBytes = ctx.config.system.maxTransferBytes
  const limit = Math.max(0, maxTransferBytes - RECORD_HEADER_BYTES)
  const reason = `message body of ${bodyBytes} bytes exceeds the limit of ${limit} bytes (maxTransferSize ${maxTransferBytes} minus the ${RECORD_HEADER_BYTES}-byte record header)`
  if (frame.type === 'put') {
    ctx.counters.cmdPut += 1
    failPut(ctx, conn, frame.topic, frame.opaque, frame.partition, new MetaError('FRAME_TOO_LARGE', reason))
  } else if (frame.type === 'put-batch') {
    // The body was skipped unread: counted by the most records that many bytes can hold.
    const held = Math.max(1, Math.min(frame.count, Math.floor(bodyBytes / RECORD_HEADER_BYTES)))
    ctx.counters.cmdPut += held
    failBatchOf(ctx, conn, frame.topic, frame.opaque, held, frame.partition, new MetaError('FRAME_TOO_LARGE', reason))
  } else if ('opaque' in frame) {
    conn.sendError('FRAME_TOO_LARGE', frame.opaque, `"${frame.type}" ${reason}`, Status.BAD_REQUEST)
  }
}

/**
 * put-batch (meta extension, protocol/commands/put-batch.ts): the same checks as put, for a
 * whole batch of stored-format records; ids are written into the records in place and the
 * batch is appended as one run (PartitionLog#appendRecords checks every record and checksum:
 * all of it is stored or none). Durability and acknowledgement follow put exactly.
 *
 * The counters (cmd_put, put_failed) count a batch by the records it holds: its claimed count
 * once the records are checked to tile the body, else {@link recordsHeld}.
 */
export function handlePutBatch(ctx: BrokerContext, conn: Connection, frame: PutBatchCommand): void {
  if (ctx.replica !== undefined) return refuseBatch(ctx, conn, frame, frame.partition, ctx.replica.refusal())
  const gate = putRefusal(ctx)
  if (gate !== undefined) return refuseBatch(ctx, conn, frame, frame.partition, gate)
  if (ctx.topics.isClosed(frame.topic, frame.partition)) {
    const held = recordsHeld(frame.body, frame.count)
    ctx.counters.cmdPut += held
    ctx.counters.putFailed += held
    conn.sendError('PARTITION_CLOSED', frame.opaque, `Partition[${ctx.config.system.brokerId}-${frame.partition}] has been closed`)
    return
  }
  const topic = ctx.topics.resolve(frame.topic)
  if (topic === undefined) {
    refuseBatch(ctx, conn, frame, frame.partition, topicRefusal(frame.topic))
    return
  }
  const partition = frame.partition === -1 ? ctx.topics.randomPartition(topic) : frame.partition
  if (partition < 0 || partition >= topic.numPartitions) {
    refuseBatch(ctx, conn, frame, partition, wrongPartition(frame.topic, partition, topic.numPartitions))
    return
  }
  const body = frame.body
  const runs = assignIds(ctx, body, frame.count)
  if (runs === undefined) {
    refuseBatch(
      ctx,
      conn,
      frame,
      partition,
      new MetaError('INVALID_MESSAGE', `invalid record batch: expected ${frame.count} whole records in ${body.length} bytes`),
    )
    return
  }
  // The records tile the body: the count is what it holds.
  ctx.counters.cmdPut += frame.count
  const sync = ctx.sync
  const refusal = sync?.refusal(ctx.logs.get(frame.topic, partition))
  if (refusal !== undefined) {
    failBatch(ctx, conn, frame, partition, refusal)
    return
  }
  let log = ctx.logs.get(frame.topic, partition)
  if (log === undefined) {
    const created = ctx.topics.creationRefusal(topic, partition, ctx.store) ?? logFor(ctx, frame.topic, partition) // as in handlePut
    if (created instanceof MetaError) {
      failBatch(ctx, conn, frame, partition, created)
      return
    }
    log = created
  }
  if (topic.stat) {
    for (let pos = 0; pos < body.length; pos += RECORD_HEADER_BYTES + body.readInt32BE(pos)) {
      ctx.realtime.record(frame.topic, 'put')
      ctx.realtime.record(frame.topic, 'message_size', body.readInt32BE(pos))
    }
  }
  let offset: number
  const {topic: topicName, opaque, count} = frame
  const bodyBytes = body.length
  conn.beginRequest(bodyBytes)
  const startedAt = ctx.latency.put.sample() ? performance.now() : -1
  const answer = (err: MetaError | null, storageFailed: boolean) => {
    if (startedAt >= 0) ctx.latency.put.observeMs(performance.now() - startedAt)
    ctx.putOutcome(storageFailed)
    if (err === null) conn.sendResult(Status.OK, opaque, `${partition} ${offset} ${runs}`)
    else failBatchOf(ctx, conn, topicName, opaque, count, partition, err)
    conn.endRequest(bodyBytes)
  }
  try {
    if (sync?.connected !== true) {
      offset = log.appendRecords(body, count, (err) => answer(err, err !== null))
    } else {
      // Synchronous replication: acknowledged once both the local append and the slave have it.
      const both = new BothSides(answer)
      offset = log.appendRecords(body, count, both.local)
      sync.replicateBatch(log, offset, body, count, both.remote)
    }
  } catch (error) {
    // A record that does not check out (length, checksum): nothing was appended.
    const message = (error as Error).message
    const reason = isMetaError(error, 'CHECKSUM_MISMATCH')
      ? new MetaError('CHECKSUM_MISMATCH', `Checksum failure,${message}`) // MetaQ's words for it
      : new MetaError('INVALID_MESSAGE', message)
    failBatch(ctx, conn, frame, partition, reason)
    conn.endRequest(bodyBytes)
  }
}

/**
 * Give each record of the batch the next id (written in place, no bigint per record) and
 * return the id runs of the reply (`<index>:<id>` where ids stop being consecutive), or
 * undefined when the records do not tile the body exactly.
 */
function assignIds(ctx: BrokerContext, body: Buffer, count: number): string | undefined {
  let runs = ''
  let pos = 0
  let prevHigh = 0
  let prevLow = 0
  for (let i = 0; i < count; i++) {
    if (body.length - pos < RECORD_HEADER_BYTES) return undefined
    const length = int32At(body, pos) // not Buffer#readInt32BE: see protocol/output-buffer.ts
    if (length < 0 || length > body.length - pos - RECORD_HEADER_BYTES) return undefined
    ctx.ids.writeNext(body, pos + 8)
    const high = ctx.ids.high >>> 0
    const low = ctx.ids.low
    const next = i > 0 && (low === prevLow + 1 ? high === prevHigh : low === 0 && prevLow === 0xffffffff && high === prevHigh + 1)
    if (!next) runs += `${i === 0 ? '' : ' '}${i}:${body.readBigInt64BE(pos + 8)}`
    prevHigh = high
    prevLow = low
    pos += RECORD_HEADER_BYTES + length
  }
  return pos === body.length && count > 0 ? runs : undefined
}

/** A batch refused before its records were checked: counted by the records it holds (put and failed). */
function refuseBatch(ctx: BrokerContext, conn: Connection, frame: PutBatchCommand, partition: number, reason: MetaError): void {
  const held = recordsHeld(frame.body, frame.count)
  ctx.counters.cmdPut += held
  failBatchOf(ctx, conn, frame.topic, frame.opaque, held, partition, reason)
}

/** A batch whose records were checked (counted as put already) that fails: its records count as failed. */
function failBatch(ctx: BrokerContext, conn: Connection, frame: PutBatchCommand, partition: number, reason: MetaError): void {
  failBatchOf(ctx, conn, frame.topic, frame.opaque, frame.count, partition, reason)
}

/**
 * What a batch counts as in the put counters before its records are checked: the whole records
 * at the start of its body, at most its claimed count, at least 1 (the request itself). A
 * client's claimed count alone bounds nothing (`put-batch t 0 2147483647 0 1` holds no record:
 * it counts as one put).
 */
export function recordsHeld(body: Buffer, count: number): number {
  let held = 0
  for (let pos = 0; held < count && body.length - pos >= RECORD_HEADER_BYTES; held++) {
    const length = int32At(body, pos)
    if (length < 0 || length > body.length - pos - RECORD_HEADER_BYTES) break
    pos += RECORD_HEADER_BYTES + length
  }
  return Math.max(1, held)
}

function failBatchOf(ctx: BrokerContext, conn: Connection, topic: string, opaque: number, count: number, partition: number, reason: MetaError): void {
  ctx.counters.putFailed += count - 1 // failPut counts one
  failPut(ctx, conn, topic, opaque, partition, reason)
}

export function topicRefusal(topic: string): MetaError {
  try {
    validateTopicName(topic)
  } catch (error) {
    return asMetaError(error, 'INVALID_ARGUMENT')
  }
  return new MetaError('TOPIC_NOT_ACCEPTED', `The server do not accept topic ${topic}`)
}

export function wrongPartition(topic: string, partition: number, numPartitions: number): MetaError {
  return new MetaError('INVALID_PARTITION', `wrong partition ${partition}: topic "${topic}" has partitions 0..${numPartitions - 1}`)
}

export function asMetaError(error: unknown, code: ErrorCode): MetaError {
  return error instanceof MetaError ? error : new MetaError(code, (error as Error).message)
}

/**
 * MetaQ's put failure body (status 500, as MetaQ answers every refused put but a closed
 * partition), so clients that parse it keep working; the code marker follows the text.
 */
export function failPut(ctx: BrokerContext, conn: Connection, topic: string, opaque: number, partition: number, reason: MetaError): void {
  ctx.counters.putFailed += 1
  if (ctx.topics.resolve(topic)?.stat) ctx.realtime.record(topic, 'put_failed')
  ctx.log.debug('put failed', {topic, partition, code: reason.code, reason: reason.message})
  const body = `Put message to [broker '${ctx.url}'] [partition '${topic}-${partition}'] failed.Detail:${reason.message}`
  conn.sendError(reason.code, opaque, body, Status.INTERNAL_SERVER_ERROR)
}

/**
 * The partition's log, created at its first put (and announced, for ZooKeeper registration);
 * an error says why it could not be created.
 */
export function logFor(ctx: BrokerContext, topic: string, partition: number): PartitionLog | MetaError {
  const log = ctx.logs.get(topic, partition)
  if (log !== undefined) return log
  let created: PartitionLog
  try {
    created = ctx.store.getOrCreate(topic, partition)
  } catch (error) {
    const reason = asMetaError(error, 'STORAGE_ERROR')
    // EMFILE, ENOSPC, EACCES …: the put's client gets the reason; the operator gets a line (rate-limited).
    ctx.log.limited('partition-create-failed').error('cannot create partition', {topic, partition, error: reason.message})
    return reason
  }
  ctx.onNewPartition(topic, partition)
  return created
}
