/**
 * seek and count (meta extensions, protocol/commands/seek.ts): translate times and message
 * counts into byte offsets with the side index.
 */
import type {CountCommand, SeekCommand} from '../../protocol/commands/seek.js'
import {isMetaError, Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {refuseQuarantined} from './quarantine.js'

export function handleSeek(ctx: BrokerContext, conn: Connection, frame: SeekCommand): void {
  const log = ctx.store.get(frame.topic, frame.partition)
  if (log === undefined) {
    if (refuseQuarantined(ctx, conn, frame.topic, frame.partition, frame.opaque)) return
    conn.sendError('NOT_FOUND', frame.opaque, `The topic \`${frame.topic}\` in partition \`${frame.partition}\` is not exists`)
    return
  }
  if (frame.mode === 'last' && frame.value < 0) {
    conn.sendError('BAD_REQUEST', frame.opaque, `invalid count ${frame.value}: expected a non-negative integer`)
    return
  }
  const answer =
    frame.mode === 'time'
      ? log.offsetForTimestamp(frame.value)
      : frame.mode === 'last'
        ? log.offsetBeforeEnd(frame.value)
        : log.shiftOffset(Math.min(Math.max(frame.value, log.minOffset), log.maxOffset), frame.delta)
  reply(ctx, conn, frame.opaque, answer)
}

export function handleCount(ctx: BrokerContext, conn: Connection, frame: CountCommand): void {
  const log = ctx.store.get(frame.topic, frame.partition)
  if (log === undefined) {
    if (refuseQuarantined(ctx, conn, frame.topic, frame.partition, frame.opaque)) return
    conn.sendError('NOT_FOUND', frame.opaque, `The topic \`${frame.topic}\` in partition \`${frame.partition}\` is not exists`)
    return
  }
  const clamp = (o: number) => Math.min(Math.max(o, log.minOffset), log.maxOffset)
  reply(ctx, conn, frame.opaque, log.countBetween(clamp(frame.from), clamp(frame.to)))
}

function reply(ctx: BrokerContext, conn: Connection, opaque: number, answer: Promise<number>): void {
  conn.beginRequest()
  answer.then(
    (value) => {
      conn.endRequest()
      conn.sendResult(Status.OK, opaque, String(value))
    },
    (error: Error) => {
      conn.endRequest()
      ctx.log.limited('seek-failed').warn('seek failed', {error: error.message})
      conn.sendError(isMetaError(error) ? error.code : 'STORAGE_ERROR', opaque, error.message, Status.INTERNAL_SERVER_ERROR)
    },
  )
}
