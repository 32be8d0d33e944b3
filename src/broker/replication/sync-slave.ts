/**
 * The synchronous slave (MetaQ's "gregor", docs/protocol.md#synchronous-replication): `[system]
 * syncSlave=true` or `meta serve --sync-slave`. It stores what its master forwards, with the
 * master's message id, flag and payload, and serves reads like any broker; producers cannot write
 * to it.
 *
 * - `sync` (MetaQ's form, one message; protocol/commands/sync.ts): appended as is with the
 *   master's id; the reply is put's (`<msgId> <partition> <offset>`), the offset the slave's.
 * - `sync-batch` (meta's form, protocol/commands/sync-batch.ts): the master's records, appended
 *   only when the slave's log ends exactly where the master's batch starts, rolling segments
 *   where the master's roll, so both logs are byte-identical; otherwise SYNC_OFFSET_MISMATCH
 *   naming the slave's end, from which the master sends what is missing.
 * - `sync-cut` (meta's form, decoded as a sync-batch order with `cutEnd`; sync-cut.ts): the
 *   master orders the log cut back to the fork point, the bytes kept in a `.meta.cut-<ms>` file.
 * - `put` and `put-batch` are refused (SLAVE_READ_ONLY). MetaQ's test topic
 *   `_metaq_slave_status_test` (one partition), which a master's heal probe writes to, is
 *   accepted whatever the topic sections say.
 *
 * Frames of one connection are handled in order and appended in that order (the storage
 * batches each turn's appends into one write), so the master's order is the slave's.
 */
import {checksum} from '../../protocol/crc.js'
import {NO_CHECKSUM} from '../../protocol/commands/put.js'
import {SLAVE_STATUS_TEST_TOPIC, type SyncCommand} from '../../protocol/commands/sync.js'
import type {TransactionCommand} from '../../protocol/commands/transaction.js'
import {syncMismatchText, type SyncBatchCommand} from '../../protocol/commands/sync-batch.js'
import {isMetaError, MetaError, Status} from '../../protocol/errors.js'
import type {PartitionLog} from '../../storage/index.js'
import type {Connection} from '../connection.js'
import {isSyncSlave, type BrokerContext} from '../context.js'
import {asMetaError, failPut, logFor, topicRefusal, wrongPartition} from '../handlers/put.js'
import {removeTopicData} from '../topic-delete.js'
import {parseTopicOverlay, type TopicOverlay} from '../topic-overlay.js'
import {handleSyncCut, isBeingCut} from './sync-cut.js'

/** Why a sync master or slave refuses transactions (as MetaQ's samsa and gregor do). */
export const SYNC_TRANSACTIONS_REFUSED =
  'transactions are not supported under synchronous replication (as in MetaQ); send transactional messages to a broker without a sync slave'

/** XAException.XAER_RMERR: an error occurred in the resource manager. */
const XAER_RMERR = -3

/**
 * `transaction` (and meta's `tx-commit`, `tx-decide`) on a sync master or slave: MetaQ's XA
 * error form (END is never answered). A transaction's commit would append without forwarding.
 */
export function refuseSyncTransaction(conn: Connection, frame: TransactionCommand | {readonly type: 'tx-commit' | 'tx-decide'; opaque: number}): void {
  if (frame.type === 'transaction' && frame.txType === 'END') return
  conn.sendResult(Status.INTERNAL_SERVER_ERROR, frame.opaque, `XAException:code=${XAER_RMERR},msg=${SYNC_TRANSACTIONS_REFUSED}`)
}

/**
 * A put or put-batch sent to a sync slave: refused, naming what to do instead (with `why`: a
 * transactional put to a sync master, refused with UNSUPPORTED).
 */
export function refuseSyncSlavePut(ctx: BrokerContext, conn: Connection, topic: string, opaque: number, partition: number, count = 1, why?: string): void {
  ctx.counters.cmdPut += count
  ctx.counters.putFailed += count - 1 // failPut counts one
  const reason =
    why === undefined
      ? new MetaError('SLAVE_READ_ONLY', 'this broker is a synchronous slave: it takes messages only from its master (sync); send puts to the master')
      : new MetaError('UNSUPPORTED', why)
  failPut(ctx, conn, topic, opaque, partition, reason)
}

/** Connections a master sent sync-batch on (its link to this slave). */
const syncPeers = new WeakSet<Connection>()
/** Connections a master sent `sync` or `sync-batch` on (its link, in either form). */
const masterLinks = new WeakSet<Connection>()

/** Is a master's sync link to this slave open (link-failover.ts)? */
export function hasMasterLink(connections: Iterable<Connection>): boolean {
  for (const conn of connections) if (masterLinks.has(conn)) return true
  return false
}

/**
 * Close every master link to this slave (after its log was cut): the master reconnects and
 * compares the logs again from scratch, so a partition it had found ahead of its own (and
 * refused) is brought up to date.
 */
export function dropSyncPeers(connections: Iterable<Connection>, except?: Connection): number {
  let dropped = 0
  for (const conn of connections) {
    if (!syncPeers.has(conn) || conn === except) continue
    conn.close()
    dropped += 1
  }
  return dropped
}

/** `sync` (MetaQ's form): store one message with the master's id, flag and payload. */
export function handleSync(ctx: BrokerContext, conn: Connection, frame: SyncCommand): void {
  if (!isSyncSlave(ctx)) {
    conn.sendError('SERVICE_UNAVAILABLE', frame.opaque, 'this broker is not a synchronous slave; sync is not served')
    return
  }
  masterLinks.add(conn)
  const log = slaveLog(ctx, frame.topic, frame.partition)
  if (log instanceof MetaError) {
    failPut(ctx, conn, frame.topic, frame.opaque, frame.partition, log)
    return
  }
  const crc = checksum(frame.body)
  if (frame.checksum !== NO_CHECKSUM && frame.checksum !== crc) {
    failPut(
      ctx,
      conn,
      frame.topic,
      frame.opaque,
      frame.partition,
      new MetaError('CHECKSUM_MISMATCH', `Checksum failure,expected ${crc} but was ${frame.checksum}`),
    )
    return
  }
  const {opaque, topic, partition, msgId} = frame
  const bodyBytes = frame.body.length
  conn.beginRequest(bodyBytes)
  let offset = 0
  try {
    offset = log.append(msgId, frame.flag, frame.body, crc, (err) => {
      if (err === null) conn.sendPutResult(opaque, msgId, partition, offset)
      else failPut(ctx, conn, topic, opaque, partition, err)
      conn.endRequest(bodyBytes)
    })
  } catch (error) {
    failPut(ctx, conn, topic, opaque, partition, asMetaError(error, 'STORAGE_ERROR'))
    conn.endRequest(bodyBytes)
  }
}

/** `sync-batch` (meta's form): append the master's records at the master's offset, or say where this log ends. */
export function handleSyncBatch(ctx: BrokerContext, conn: Connection, frame: SyncBatchCommand): void {
  if (!isSyncSlave(ctx)) {
    conn.sendError('SERVICE_UNAVAILABLE', frame.opaque, 'this broker is not a synchronous slave; sync-batch is not served')
    return
  }
  syncPeers.add(conn)
  masterLinks.add(conn)
  if (frame.overlay === true) {
    handleSyncOverlay(ctx, conn, frame)
    return
  }
  if (frame.cutEnd !== undefined) {
    handleSyncCut(ctx, conn, frame, () => dropSyncPeers(ctx.connections(), conn))
    return
  }
  const {topic, partition, opaque, offset, count} = frame
  if (isBeingCut(ctx, topic, partition)) {
    failPut(
      ctx,
      conn,
      topic,
      opaque,
      partition,
      new MetaError(
        'SYNC_OFFSET_MISMATCH',
        `the sync slave's log of ${topic}-${partition} is being cut back to the fork point its master ordered; nothing is appended meanwhile`,
      ),
    )
    return
  }
  if (frame.segmentStart > offset || offset < 0) {
    conn.sendError(
      'INVALID_ARGUMENT',
      opaque,
      `sync-batch of ${topic}-${partition}: segment start ${frame.segmentStart} and offset ${offset}: expected 0 <= segment start <= offset`,
    )
    return
  }
  if (count === 0) {
    // A probe: where does this log end? Nothing is created.
    const existing = checkPartition(ctx, topic, partition)
    if (existing instanceof MetaError) failPut(ctx, conn, topic, opaque, partition, existing)
    else conn.sendResult(Status.OK, opaque, `${partition} ${ctx.logs.get(topic, partition)?.appendOffset ?? 0}`)
    return
  }
  // A partition this slave has no log for starts where the master's batch does (a new slave
  // of a master whose log no longer starts at 0 gets the master's offsets, not a gap).
  const log = ctx.logs.get(topic, partition) ?? slaveLog(ctx, topic, partition, offset)
  if (log instanceof MetaError) {
    failPut(ctx, conn, topic, opaque, partition, log)
    return
  }
  const end = log.appendOffset
  if (end !== offset) {
    if (end > offset)
      ctx.log.warn('sync slave holds more than its master forwards from: the master compares the logs and orders the divergent tail cut (sync-cut)', {
        topic,
        partition,
        slaveEnd: end,
        masterOffset: offset,
      })
    failPut(ctx, conn, topic, opaque, partition, new MetaError('SYNC_OFFSET_MISMATCH', syncMismatchText(topic, partition, end, offset)))
    return
  }
  const bodyBytes = frame.body.length
  conn.beginRequest(bodyBytes)
  try {
    log.appendReplica(frame.body, count, frame.segmentStart === offset, (err) => {
      if (err === null) conn.sendResult(Status.OK, opaque, `${partition} ${offset + bodyBytes}`)
      else failPut(ctx, conn, topic, opaque, partition, err)
      conn.endRequest(bodyBytes)
    })
  } catch (error) {
    const reason = isMetaError(error, 'CHECKSUM_MISMATCH') ? error : asMetaError(error, 'INVALID_MESSAGE')
    failPut(ctx, conn, topic, opaque, partition, reason)
    conn.endRequest(bodyBytes)
  }
}

/**
 * `sync-overlay` (protocol/commands/sync-overlay.ts): the master's topic overlay becomes this
 * slave's (saved, so it survives a restart); a topic gone from it was deleted online on the
 * master, which removed its data before its overlay section (topic-delete.ts): its data here
 * goes first too, so the overlay's check finds no data past the partition count the topic
 * falls back to, and the slave holds what its master holds.
 */
function handleSyncOverlay(ctx: BrokerContext, conn: Connection, frame: SyncBatchCommand): void {
  conn.beginRequest(frame.body.length)
  const done = (err: MetaError | null, topics = 0): void => {
    if (err === null) conn.sendResult(Status.OK, frame.opaque, String(topics))
    else conn.sendError(err.code, frame.opaque, err.message, err.status)
    conn.endRequest(frame.body.length)
  }
  let overlay: TopicOverlay
  try {
    overlay = parseTopicOverlay(frame.body.toString('utf8'), (why) => new MetaError('DECODE_ERROR', `sync-overlay: the body is not a topic overlay (${why})`))
  } catch (error) {
    done(asMetaError(error, 'DECODE_ERROR'))
    return
  }
  const before = ctx.topicOverlay()
  const apply = async (): Promise<void> => {
    for (const topic of before.keys()) {
      if (overlay.has(topic)) continue
      await removeTopicData(ctx, topic)
      ctx.log.info('topic deleted online on the sync master: dropped here', {topic})
    }
    await ctx.changeTopicOverlay(overlay)
  }
  apply().then(
    () => done(null, overlay.size),
    (error: unknown) => done(asMetaError(error, 'CONFIG_INVALID')),
  )
}

/** The topic is accepted here (or is MetaQ's test topic) and the partition in range; else why not. */
function checkPartition(ctx: BrokerContext, topic: string, partition: number): MetaError | undefined {
  const numPartitions = topic === SLAVE_STATUS_TEST_TOPIC ? 1 : ctx.topics.resolve(topic)?.numPartitions
  if (numPartitions === undefined) return topicRefusal(topic)
  if (partition < 0 || partition >= numPartitions) return wrongPartition(topic, partition, numPartitions)
  return undefined
}

/** The partition's log, created (at `startOffset` when new) if needed; an error says why not. */
function slaveLog(ctx: BrokerContext, topic: string, partition: number, startOffset = 0): PartitionLog | MetaError {
  const refused = checkPartition(ctx, topic, partition)
  if (refused !== undefined) return refused
  if (startOffset === 0) return logFor(ctx, topic, partition)
  try {
    const created = ctx.store.getOrCreate(topic, partition, startOffset)
    ctx.onNewPartition(topic, partition)
    return created
  } catch (error) {
    return asMetaError(error, 'STORAGE_ERROR')
  }
}
