/**
 * version and the partitions extension (transactions: transaction.ts; sync:
 * replication/sync-slave.ts).
 */
import type {VersionCommand} from '../../protocol/commands/version.js'
import {Status} from '../../protocol/errors.js'
import {PROTOCOL_VERSION} from '../../protocol/index.js'
import type {PartitionsCommand} from '../../protocol/commands/partitions.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

export function handleVersion(conn: Connection, frame: VersionCommand): void {
  conn.sendResult(Status.OK, frame.opaque, PROTOCOL_VERSION)
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
