/**
 * The master's side of `replicate` (docs/protocol.md#replication): a long-poll get whose
 * data answer starts with the replica header (the master's segment start, end and first
 * offset), so a slave writes segments exactly where the master's are.
 */
import type {GetCommand} from '../../protocol/commands/get.js'
import {writeReplicaHeader} from '../../protocol/commands/replication.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

/** A `replicate` request, served by get's code path (handlers/get.ts). */
export interface ReplicaGet extends GetCommand {
  readonly replica: true
}

/** The group name a `replicate` request reads as (never a consumer's: it is no valid group name). */
export const REPLICA_GROUP = '<replica>'

export function isReplicaGet(frame: GetCommand): frame is ReplicaGet {
  return (frame as Partial<ReplicaGet>).replica === true
}

/** Answer a `replicate` request that found `data` at `frame.offset`. */
export function sendReplicaValue(ctx: BrokerContext, conn: Connection, frame: ReplicaGet, data: Buffer): void {
  const log = ctx.logs.get(frame.topic, frame.partition)
  if (log === undefined) return conn.sendError('NOT_FOUND', frame.opaque, `partition ${frame.topic}-${frame.partition} is gone`, 404)
  const header = writeReplicaHeader({segmentStart: log.nearestOffset(frame.offset), masterEnd: log.maxOffset, masterMin: log.minOffset})
  conn.sendValue(frame.opaque, Buffer.concat([header, data]))
}
