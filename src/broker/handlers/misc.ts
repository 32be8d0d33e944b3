/**
 * version, transaction, sync and the partitions extension.
 *
 * Transactions are decoded in full (protocol/commands/transaction.ts) but not served yet:
 * every type except END (which MetaQ never answers) gets MetaQ's XA error form with
 * XAER_RMERR, which transactional clients surface as a resource-manager error. sync is only
 * served by a synchronous slave; like a normal MetaQ broker, this one answers 503.
 */
import type {SyncCommand} from '../../protocol/commands/sync.js'
import type {TransactionCommand} from '../../protocol/commands/transaction.js'
import type {VersionCommand} from '../../protocol/commands/version.js'
import {Status} from '../../protocol/errors.js'
import {PROTOCOL_VERSION} from '../../protocol/index.js'
import type {PartitionsCommand} from '../../protocol/commands/partitions.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

/** XAException.XAER_RMERR: an error occurred in the resource manager. */
const XAER_RMERR = -3

export function handleVersion(conn: Connection, frame: VersionCommand): void {
  conn.sendResult(Status.OK, frame.opaque, PROTOCOL_VERSION)
}

export function handleTransaction(conn: Connection, frame: TransactionCommand): void {
  if (frame.txType === 'END') return
  conn.sendResult(
    Status.INTERNAL_SERVER_ERROR,
    frame.opaque,
    `XAException:code=${XAER_RMERR},msg=transactions are not supported by this broker`,
  )
}

export function handleSync(conn: Connection, frame: SyncCommand): void {
  conn.sendError('SERVICE_UNAVAILABLE', frame.opaque, 'this broker is not a synchronous slave; sync is not served')
}

/** partitions (meta extension): the topic's partition count, or 500 if not accepted. */
export function handlePartitions(ctx: BrokerContext, conn: Connection, frame: PartitionsCommand): void {
  const topic = ctx.topics.resolve(frame.topic)
  if (topic === undefined) {
    conn.sendError('TOPIC_NOT_ACCEPTED', frame.opaque, `The server do not accept topic ${frame.topic}`)
    return
  }
  conn.sendResult(Status.OK, frame.opaque, String(topic.numPartitions))
}
