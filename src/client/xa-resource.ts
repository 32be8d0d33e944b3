/**
 * An XA resource over a producer (MetaQ's `XAMessageProducer.getXAResource()`), for a
 * transaction manager to drive:
 *
 *   const xa = producer.getXAResource({uniqueQualifier: 'orders-rm'})
 *   await xa.start(xid)                 // BEGIN (before the first send)
 *   await producer.send('orders', '…')  // goes into the branch
 *   await xa.end(xid)                   // sends stop going into it
 *   const vote = await xa.prepare(xid)  // XA_OK (0) or XA_RDONLY (3)
 *   await xa.commit(xid, false)         // or rollback(xid)
 *
 * The key of a branch is `XID:<formatId>:<gtrid hex>:<bqual hex>:<uniqueQualifier>`; the
 * qualifier scopes RECOVER to this resource manager. Between start and end, the producer's
 * sends go to one broker (the first send's). prepare/commit/rollback/forget of a branch this
 * object did not start (after a restart, from recover()) go to the broker that listed it,
 * else to every broker until one knows it. Errors are MetaErrors with `details.xaCode`
 * (XAException's codes: -4 XAER_NOTA, -6 XAER_PROTO, 7 XA_HEURCOM, …).
 */
import {hostname} from 'node:os'
import {MetaError} from '../protocol/errors.js'
import {parseRecoverReply, XA_RDONLY, XAER_DUPID, XAER_INVAL, XAER_NOTA, xidKey, type Xid as KeyXid} from '../protocol/xa.js'
import type {Producer} from './producer.js'
import {prepareVote, transactionCommand, type Transaction} from './transaction.js'

/** What the resource uses of a producer's transaction. */
type Branch = Pick<Transaction, 'key' | 'sessionId' | 'connection' | 'settled' | 'prepare' | 'commitXa'>

/** An XID as a transaction manager has it (javax.transaction.xa.Xid). */
export interface Xid {
  formatId: number
  globalTransactionId: Uint8Array
  branchQualifier: Uint8Array
}

export interface XaResourceOptions {
  /** Scopes RECOVER to this resource manager (default `XAMessageProducer-<hostname>`, as MetaQ). */
  uniqueQualifier?: string
  /** Seconds until the broker rolls back a started, unprepared branch (0 = none). */
  transactionTimeoutSeconds?: number
}

const COMMAND_TIMEOUT_MS = 30_000
const QUALIFIER = /^[^\r\n\t: ]+$/

export class XaResource {
  readonly uniqueQualifier: string
  private timeoutSeconds: number
  private readonly branches = new Map<string, Branch>()
  /** Brokers that listed a key in RECOVER. */
  private readonly recovered = new Map<string, number>()

  constructor(
    private readonly producer: Producer,
    options: XaResourceOptions = {},
  ) {
    const qualifier = options.uniqueQualifier ?? `XAMessageProducer-${hostname()}`.replace(/[\r\n\t: ]/g, '_')
    if (!QUALIFIER.test(qualifier)) {
      throw MetaError.invalidArgument(`invalid uniqueQualifier "${qualifier}": expected no ':', space, tab, CR or LF`)
    }
    this.uniqueQualifier = qualifier
    this.timeoutSeconds = options.transactionTimeoutSeconds ?? 0
  }

  /** The transaction key of `xid` on the wire. */
  key(xid: Xid): string {
    if (!Number.isSafeInteger(xid.formatId)) throw MetaError.invalidArgument(`invalid XID formatId "${xid.formatId}": expected an integer`)
    if (xid.globalTransactionId.length === 0) throw MetaError.invalidArgument('invalid XID: the global transaction id is empty')
    const parts: KeyXid = {
      formatId: xid.formatId,
      globalTransactionId: Buffer.from(xid.globalTransactionId).toString('hex'),
      branchQualifier: Buffer.from(xid.branchQualifier).toString('hex'),
      uniqueQualifier: this.uniqueQualifier,
    }
    return xidKey(parts)
  }

  setTransactionTimeout(seconds: number): boolean {
    if (!Number.isInteger(seconds) || seconds < 0) return false
    this.timeoutSeconds = seconds
    return true
  }

  getTransactionTimeout(): number {
    return this.timeoutSeconds
  }

  /** Associate the producer's sends with `xid` (BEGIN goes with the first send). */
  async start(xid: Xid): Promise<void> {
    const key = this.key(xid)
    if (this.branches.has(key)) throw xaError(XAER_DUPID, `branch ${key} was already started here`)
    this.branches.set(key, this.producer.enterTransaction(key, this.timeoutSeconds))
  }

  /** Dissociate: the producer's sends no longer go into the branch (MetaQ's END is one-way and changes nothing on the broker). */
  async end(xid: Xid): Promise<void> {
    const key = this.key(xid)
    const tx = this.branches.get(key)
    if (tx === undefined) throw xaError(XAER_NOTA, `branch ${key} was not started here`)
    if ((this.producer.currentTransaction as unknown) === tx) await this.producer.leaveTransaction()
    else await tx.settled()
  }

  /** PREPARE: XA_OK (0) or XA_RDONLY (3; nothing was sent, the branch is finished). */
  async prepare(xid: Xid): Promise<number> {
    const key = this.key(xid)
    const tx = this.branches.get(key)
    if (tx !== undefined) {
      await this.detach(tx)
      const vote = await tx.prepare()
      if (vote === XA_RDONLY) this.branches.delete(key)
      return vote
    }
    return prepareVote(await this.anywhere(key, 'PREPARE'), key)
  }

  /** Commit, one-phase (instead of prepare) or two-phase (after it). */
  async commit(xid: Xid, onePhase: boolean): Promise<void> {
    const key = this.key(xid)
    const tx = this.branches.get(key)
    if (tx !== undefined) {
      await this.detach(tx)
      this.branches.delete(key)
      await tx.commitXa(onePhase)
      return
    }
    await this.anywhere(key, onePhase ? 'COMMIT_ONE_PHASE' : 'COMMIT_TWO_PHASE')
  }

  async rollback(xid: Xid): Promise<void> {
    const key = this.key(xid)
    const tx = this.branches.get(key)
    if (tx !== undefined) {
      await this.detach(tx)
      this.branches.delete(key)
      if (tx.connection === undefined) return // the broker never saw it
      await transactionCommand(tx.connection.conn, {txKey: key, sessionId: tx.sessionId, txType: 'ROLLBACK'}, COMMAND_TIMEOUT_MS)
      return
    }
    await this.anywhere(key, 'ROLLBACK')
  }

  /** Drop a heuristic outcome. */
  async forget(xid: Xid): Promise<void> {
    await this.anywhere(this.key(xid), 'FORGET')
  }

  /** Prepared branches (and heuristic outcomes) of this resource manager on every broker. */
  async recover(): Promise<Xid[]> {
    const out: Xid[] = []
    const seen = new Set<string>()
    for (const brokerId of this.producer.brokers.brokerIds()) {
      const conn = await this.producer.brokers.connection(brokerId)
      const body = await transactionCommand(
        conn,
        {txKey: 'null', sessionId: this.producer.transactionSessionId, txType: 'RECOVER', uniqueQualifier: this.uniqueQualifier},
        COMMAND_TIMEOUT_MS,
      )
      const listed = parseRecoverReply(body)
      if (listed === undefined)
        throw new MetaError('DECODE_ERROR', `malformed RECOVER reply from broker ${brokerId}: "${body.slice(0, 80)}": expected XA transaction keys, one a line`)
      for (const {key, xid} of listed) {
        if (seen.has(key)) continue
        seen.add(key)
        this.recovered.set(key, brokerId)
        out.push({
          formatId: xid.formatId,
          globalTransactionId: Buffer.from(xid.globalTransactionId, 'hex'),
          branchQualifier: Buffer.from(xid.branchQualifier, 'hex'),
        })
      }
    }
    return out
  }

  /** Same resource manager (same qualifier), as XAResource#isSameRM. */
  isSameRM(other: XaResource): boolean {
    return other.uniqueQualifier === this.uniqueQualifier
  }

  private async detach(tx: Branch): Promise<void> {
    if ((this.producer.currentTransaction as unknown) === tx) await this.producer.leaveTransaction()
    else await tx.settled()
  }

  /** A command for a branch this object does not hold: the broker that listed it, else each broker until one knows it. */
  private async anywhere(key: string, txType: 'PREPARE' | 'COMMIT_ONE_PHASE' | 'COMMIT_TWO_PHASE' | 'ROLLBACK' | 'FORGET'): Promise<string> {
    const known = this.recovered.get(key)
    const brokers = known !== undefined ? [known] : this.producer.brokers.brokerIds()
    let last: MetaError = xaError(XAER_NOTA, `branch ${key} is not known to any broker`)
    for (const brokerId of brokers) {
      const conn = await this.producer.brokers.connection(brokerId)
      try {
        const body = await transactionCommand(conn, {txKey: key, sessionId: this.producer.transactionSessionId, txType}, COMMAND_TIMEOUT_MS)
        if (txType !== 'PREPARE' && txType !== 'FORGET') this.recovered.delete(key)
        return body
      } catch (error) {
        last = error as MetaError
        if (last.details?.xaCode !== XAER_NOTA) throw last
      }
    }
    throw last
  }
}

/** An XA resource over `producer` (sends between start and end go into the branch). */
export function createXaResource(producer: Producer, options: XaResourceOptions = {}): XaResource {
  return new XaResource(producer, options)
}

function xaError(code: number, message: string): MetaError {
  return new MetaError(code === XAER_INVAL ? 'INVALID_ARGUMENT' : 'TRANSACTION_ERROR', message, {details: {xaCode: code}})
}
