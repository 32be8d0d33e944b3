/**
 * offset (docs/protocol.md#offset): the nearest valid offset. MetaQ clients ask after a record
 * failed its checksum, with the offset they fetched from, so the broker first checks the records a
 * fetch from there returned (up to maxTransferSize, storage PartitionLog#checkOffset), then
 * answers: the end of a damaged range when the offset is in one, the offset itself when it is a
 * record boundary (the next fetch stops where the damage starts), else MetaQ's answer, the start of
 * the segment holding it; the first offset when below, the end when at or past it. 404 when the
 * partition does not exist, 500 when it is quarantined.
 */
import type {OffsetCommand} from '../../protocol/commands/offset.js'
import {isMetaError, Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {refuseQuarantined} from './quarantine.js'

export function handleOffset(ctx: BrokerContext, conn: Connection, frame: OffsetCommand): void {
  ctx.counters.cmdOffset += 1
  if (ctx.topics.resolve(frame.topic)?.stat) ctx.realtime.record(frame.topic, 'offset')
  const log = ctx.store.get(frame.topic, frame.partition)
  if (log === undefined) {
    if (refuseQuarantined(ctx, conn, frame.topic, frame.partition, frame.opaque)) return
    conn.sendError('NOT_FOUND', frame.opaque, `The topic \`${frame.topic}\` in partition \`${frame.partition}\` is not exists`)
    return
  }
  // The check reads up to a fetch's worth of the log: held against the connection's limit.
  const windowBytes = ctx.config.system.maxTransferBytes
  conn.beginRequest(windowBytes)
  log.checkOffset(frame.offset, windowBytes).then(
    // Answered before the request ends: an ending connection closes once its last one ends.
    (offset) => {
      conn.sendResult(Status.OK, frame.opaque, String(offset))
      conn.endRequest(windowBytes)
    },
    (error: Error) => {
      ctx.log
        .limited('offset-check-failed')
        .warn('offset check failed', {topic: frame.topic, partition: frame.partition, offset: frame.offset, error: error.message})
      conn.sendError(isMetaError(error) ? error.code : 'STORAGE_ERROR', frame.opaque, error.message, Status.INTERNAL_SERVER_ERROR)
      conn.endRequest(windowBytes)
    },
  )
}
