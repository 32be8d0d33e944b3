/**
 * config-reload, partitions-close and partitions-open (meta extensions,
 * protocol/commands/broker-admin.ts): MetaQ's JMX operations reload, closePartitions and
 * openPartitions over the wire.
 */
import type {ConfigReloadCommand, PartitionsStateCommand, PartitionsStateReply, ReloadReport} from '../../protocol/commands/broker-admin.js'
import {isMetaError, Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

export function handleConfigReload(ctx: BrokerContext, conn: Connection, frame: ConfigReloadCommand): void {
  answerReload(conn, frame.opaque, ctx.reload(frame.mode === 'check'))
}

/** Answer a `config-reload` with its report (also with access control on, auth/reload.ts). */
export function answerReload(conn: Connection, opaque: number, run: Promise<ReloadReport>): void {
  conn.beginRequest()
  run.then(
    (report) => {
      conn.sendResult(Status.OK, opaque, JSON.stringify(report))
      conn.endRequest()
    },
    (error: Error) => {
      // 400 for a file the broker refuses, 500 for anything else (no file to read, I/O).
      const status = isMetaError(error, 'CONFIG_INVALID') ? Status.BAD_REQUEST : Status.INTERNAL_SERVER_ERROR
      conn.sendError(isMetaError(error) ? error.code : 'INTERNAL', opaque, error.message, status)
      conn.endRequest()
    },
  )
}

export function handlePartitionsState(ctx: BrokerContext, conn: Connection, frame: PartitionsStateCommand): void {
  const all = frame.start === -1 && frame.end === -1
  const start = all ? undefined : frame.start
  const end = all ? undefined : frame.end
  let change: Promise<number[]>
  try {
    change = frame.type === 'partitions-close' ? ctx.topics.close(frame.topic, start, end) : ctx.topics.open(frame.topic, start, end)
  } catch (error) {
    conn.sendError(isMetaError(error) ? error.code : 'INTERNAL', frame.opaque, (error as Error).message, isMetaError(error) ? error.wireStatus : undefined)
    return
  }
  conn.beginRequest()
  change.then(
    (changed) => {
      // Parked long polls on newly closed partitions answer 403 now instead of at their timeout.
      if (frame.type === 'partitions-close') for (const p of changed) ctx.polls.wake(frame.topic, p)
      ctx.log
        .limited('partitions-admin', {burstLines: 50})
        .info(frame.type === 'partitions-close' ? 'closed partitions' : 'reopened partitions', {topic: frame.topic, partitions: changed})
      const reply: PartitionsStateReply = {
        topic: frame.topic,
        brokerId: ctx.config.system.brokerId,
        changed,
        closed: ctx.topics.closedPartitions(frame.topic),
      }
      conn.sendResult(Status.OK, frame.opaque, JSON.stringify(reply))
      conn.endRequest()
    },
    (error: Error) => {
      conn.sendError(isMetaError(error) ? error.code : 'INTERNAL', frame.opaque, error.message, Status.INTERNAL_SERVER_ERROR)
      conn.endRequest()
    },
  )
}
