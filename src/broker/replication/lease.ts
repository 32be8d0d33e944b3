/**
 * What the broker id's ownership in ZooKeeper does to puts: refused while the lease on the id
 * has run out (zk-lease.ts; `context.leaseLapsed`, waived while a sync slave is connected:
 * context.ts putRefusal), and refused for good once another broker took the id (a fence,
 * `context.fenced`). put.ts checks both before every put.
 */
import {MetaError} from '../../protocol/errors.js'
import type {Logger} from '../../log.js'
import type {BrokerContext} from '../context.js'

/** Refuse puts while the lease on the broker id has run out; fence for good when another session holds the id. */
export function leasePutGate(
  ctx: BrokerContext,
  log: Logger,
): {onLost: (reason: string, takenBy?: string) => void; onHeld: () => void; onExtended: (endsAtMs: number) => void} {
  return {
    onLost: (reason, takenBy) => {
      if (takenBy !== undefined) {
        fence(ctx, log, takenBy)
        return
      }
      ctx.leaseLapsed = new MetaError(
        'SERVICE_UNAVAILABLE',
        `broker id ${ctx.config.system.brokerId}: not accepting puts while ZooKeeper cannot confirm this broker still holds the id (${reason}); try another partition or broker`,
      )
    },
    onHeld: () => {
      ctx.leaseLapsed = undefined
    },
    onExtended: (endsAtMs) => {
      ctx.leaseEndsAtMs = endsAtMs
    },
  }
}

/** Another broker took this broker id (a failover): refuse puts from now on. */
export function fence(ctx: BrokerContext, log: Logger, other: string): void {
  if (ctx.fenced?.code === 'SLAVE_READ_ONLY') return
  const brokerId = ctx.config.system.brokerId
  ctx.fenced = new MetaError(
    'SLAVE_READ_ONLY',
    `broker id ${brokerId} is now held in ZooKeeper by ${other} (it failed over): this broker no longer accepts puts; restart it as a slave of the new master`,
  )
  log.error('fenced: refusing puts from now on', {brokerId, other})
}
