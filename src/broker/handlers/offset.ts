/**
 * offset (spec §1.7): the nearest valid offset — the start of the segment holding the
 * requested offset, the first offset when below, the end when at or past it; 404 when the
 * partition does not exist.
 */
import type {OffsetCommand} from '../../protocol/commands/offset.js'
import {Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

export function handleOffset(ctx: BrokerContext, conn: Connection, frame: OffsetCommand): void {
  ctx.counters.cmdOffset += 1
  if (ctx.topics.resolve(frame.topic)?.stat) ctx.realtime.record(frame.topic, 'offset')
  const log = ctx.store.get(frame.topic, frame.partition)
  if (log === undefined) {
    conn.sendResult(Status.NOT_FOUND, frame.opaque, `The topic \`${frame.topic}\` in partition \`${frame.partition}\` is not exists`)
    return
  }
  conn.sendResult(Status.OK, frame.opaque, String(log.nearestOffset(frame.offset)))
}
