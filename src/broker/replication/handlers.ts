/**
 * The two replication extensions a broker serves (docs/protocol.md#replication):
 * `replicate` (every meta broker: it may be someone's master) and `slave-status` (answered by
 * a slave; NOT_A_SLAVE elsewhere).
 */
import type {ReplicateCommand, SlaveStatusCommand} from '../../protocol/commands/replication.js'
import {Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import {isSyncSlave, type BrokerContext} from '../context.js'
import {serveGet} from '../handlers/get.js'
import {REPLICA_GROUP, type ReplicaGet} from './replica-reply.js'

export function handleReplicate(ctx: BrokerContext, conn: Connection, frame: ReplicateCommand): void {
  const get: ReplicaGet = {
    type: 'get',
    replica: true,
    topic: frame.topic,
    group: REPLICA_GROUP,
    partition: frame.partition,
    offset: frame.offset,
    maxSize: frame.maxSize,
    opaque: frame.opaque,
    maxWaitMs: frame.maxWaitMs,
  }
  serveGet(ctx, conn, get)
}

export function handleSlaveStatus(ctx: BrokerContext, conn: Connection, frame: SlaveStatusCommand): void {
  if (ctx.replica === undefined) {
    const what = isSyncSlave(ctx) ? 'an asynchronous slave (it is a synchronous slave: its master reports it in stats meta-sync)' : 'a slave (it is a master)'
    conn.sendError('NOT_A_SLAVE', frame.opaque, `broker ${ctx.config.system.brokerId} at ${ctx.url} is not ${what}`, Status.NOT_FOUND)
    return
  }
  conn.beginRequest()
  ctx.replica
    .status()
    .then(
      (report) => conn.sendResult(Status.OK, frame.opaque, JSON.stringify(report)),
      (error: Error) => conn.sendError('INTERNAL', frame.opaque, `slave status failed: ${error.message}`),
    )
    .finally(() => conn.endRequest())
}
