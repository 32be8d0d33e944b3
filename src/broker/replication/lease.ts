/**
 * What the broker id's ownership in ZooKeeper does to puts: refused while the lease on the id
 * has run out (zk-lease.ts), and refused for good once another broker took the id (a fence).
 * Both set `context.fenced`, which put.ts checks before every put.
 */
import {MetaError} from '../../protocol/errors.js'
import type {Logger} from '../../log.js'
import type {BrokerContext} from '../context.js'

/** Refuse puts while the lease on the broker id has run out; a fence for good stays. */
export function leasePutGate(ctx: BrokerContext): {onLost: (reason: string) => void; onHeld: () => void} {
  let refusal: MetaError | undefined
  return {
    onLost: (reason) => {
      if (ctx.fenced !== undefined) return
      refusal = new MetaError(
        'SERVICE_UNAVAILABLE',
        `broker id ${ctx.config.system.brokerId}: not accepting puts while ZooKeeper cannot confirm this broker still holds the id (${reason}); try another partition or broker`,
      )
      ctx.fenced = refusal
    },
    onHeld: () => {
      if (refusal !== undefined && ctx.fenced === refusal) ctx.fenced = undefined
      refusal = undefined
    },
  }
}

/** Another broker took this broker id while this one's ZooKeeper session was gone: refuse puts from now on. */
export function fence(ctx: BrokerContext, log: Logger, other: string): void {
  const brokerId = ctx.config.system.brokerId
  ctx.fenced = new MetaError(
    'SLAVE_READ_ONLY',
    `broker id ${brokerId} is now held in ZooKeeper by ${other} (it failed over while this broker's session was gone): this broker no longer accepts puts; restart it as a slave of the new master`,
  )
  log.error('fenced: refusing puts from now on', {brokerId, other})
}
