/**
 * Requests on a quarantined partition (storage/message-store.ts: its directory is damaged
 * and it is not served until `meta repair` fixes it and the broker restarts): get, offset,
 * seek and count answer 500 with the reason and the repair command, instead of MetaQ's 404
 * for a partition that does not exist, so clients report it rather than wait for data. Puts
 * fail the same way through MessageStore#getOrCreate.
 */
import {quarantineError} from '../../storage/index.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

/** Answer 500 and return true when (topic, partition) is quarantined; false otherwise. */
export function refuseQuarantined(ctx: BrokerContext, conn: Connection, topic: string, partition: number, opaque: number): boolean {
  const quarantined = ctx.store.quarantineOf(topic, partition)
  if (quarantined === undefined) return false
  const error = quarantineError(quarantined)
  conn.sendError(error.code, opaque, error.message, error.wireStatus)
  return true
}
