/**
 * Who holds the broker's open transactions (docs/security.md#transactions): each open
 * transaction counts against the connection that began it (maxOpenTransactionsPerConnection)
 * and, with access control, against its principal (maxOpenTransactionsPerPrincipal: a user, or
 * every anonymous connection together), so that no principal can take the timeout timers
 * (maxTxTimeoutTimerCapacity) or the broker's memory from the others. Also the batching of
 * expiry log lines: a flood of transactions timing out together logs one line with a count.
 */
import {XaError, XAER_RMERR} from '../../protocol/xa.js'
import type {Logger} from '../../log.js'
import type {SystemConfig} from '../config/index.js'
import type {Tx} from './types.js'

/** The principal all anonymous connections count against together. */
export const ANONYMOUS_PRINCIPAL = '(anonymous)'
/** Expiries are logged at most once per this long, as one line with their count. */
const EXPIRY_LOG_INTERVAL_MS = 1000

/** Who begins a transaction: its connection, and with access control its owner and principal. */
export interface TxCaller {
  connId: number
  /** A user name, or `#<connection id>` for an anonymous connection; undefined without access control. */
  owner?: string
  /** The user, or {@link ANONYMOUS_PRINCIPAL}; undefined without access control. */
  principal?: string
}

export class OpenTransactions {
  private readonly byConnection = new Map<number, Set<Tx>>()
  private readonly byPrincipal = new Map<string, number>()
  private expired = 0
  private expiredExample = ''
  private expiryTimer: NodeJS.Timeout | undefined

  constructor(private readonly log: Logger) {}

  /** Throws XAER_RMERR naming the cap when `caller` may not open one more transaction. */
  admit(caller: TxCaller, system: SystemConfig): void {
    const onConnection = this.byConnection.get(caller.connId)?.size ?? 0
    if (onConnection >= system.maxOpenTransactionsPerConnection) {
      throw new XaError(
        XAER_RMERR,
        `too many open transactions on this connection: it holds ${onConnection}, its limit (maxOpenTransactionsPerConnection=${system.maxOpenTransactionsPerConnection}); commit or roll back some first`,
      )
    }
    if (caller.principal === undefined) return
    const held = this.byPrincipal.get(caller.principal) ?? 0
    if (held >= system.maxOpenTransactionsPerPrincipal) {
      const who = caller.principal === ANONYMOUS_PRINCIPAL ? 'anonymous connections (together)' : `user "${caller.principal}"`
      throw new XaError(
        XAER_RMERR,
        `too many open transactions: ${who} hold ${held}, the limit (maxOpenTransactionsPerPrincipal=${system.maxOpenTransactionsPerPrincipal}); commit or roll back some first`,
      )
    }
  }

  /** Count an open transaction (begun, or brought back prepared at start). */
  add(tx: Tx): void {
    if (tx.beganOn >= 0) {
      let set = this.byConnection.get(tx.beganOn)
      if (set === undefined) this.byConnection.set(tx.beganOn, (set = new Set()))
      set.add(tx)
    }
    if (tx.principal !== undefined) this.byPrincipal.set(tx.principal, (this.byPrincipal.get(tx.principal) ?? 0) + 1)
  }

  /** Stop counting a transaction that ended (once per transaction). */
  remove(tx: Tx): void {
    const set = this.byConnection.get(tx.beganOn)
    if (set?.delete(tx) === true && set.size === 0) this.byConnection.delete(tx.beganOn)
    if (tx.principal === undefined) return
    const held = (this.byPrincipal.get(tx.principal) ?? 1) - 1
    if (held <= 0) this.byPrincipal.delete(tx.principal)
    else this.byPrincipal.set(tx.principal, held)
    tx.principal = undefined
  }

  /** The transactions a connection began that are still open. */
  begunOn(connId: number): Tx[] {
    return [...(this.byConnection.get(connId) ?? [])]
  }

  /** A transaction timed out: logged with the others of the same second, as one line. */
  expiredOne(tx: Tx): void {
    if (this.expired === 0) this.expiredExample = tx.key.key
    this.expired += 1
    this.expiryTimer ??= setTimeout(() => this.flushExpiries(), EXPIRY_LOG_INTERVAL_MS).unref()
  }

  flushExpiries(): void {
    clearTimeout(this.expiryTimer)
    this.expiryTimer = undefined
    if (this.expired === 0) return
    this.log.info(this.expired === 1 ? 'transaction timed out: rolled back' : 'transactions timed out: rolled back', {
      count: this.expired,
      tx: this.expiredExample,
    })
    this.expired = 0
  }
}
