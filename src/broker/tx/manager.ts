/**
 * The broker's transactions (docs/protocol.md#transactions): local (`TX:…`, scoped to the
 * connection that began them) and XA (`XID:…`, broker-wide), their states, timeouts, the journal
 * and recovery.
 *
 * States: START → IN_USE (first put) → PREPARED (XA) → COMMITTING → gone; heuristic outcomes
 * (4 committed, 5 rolled back, 6 hazard) are kept, and listed by RECOVER, until FORGET.
 *
 * Order of a commit (docs/invariants.md#transactions): meta makes written bytes visible at
 * once, so the commit decision is journaled (and fdatasynced per flushTxLogAtCommit) before
 * the messages are appended: one appendRecords batch per partition, ids assigned at put time.
 * Once every batch is written a DONE record follows. Recovery (recovery.ts) completes a
 * COMMIT without DONE, appending only what is not already in the log, rolls back in-flight
 * transactions (and unprepared XA ones) and brings prepared XA transactions back PREPARED.
 */
import {MetaError} from '../../protocol/errors.js'
import type {PartitionLog} from '../../storage/index.js'
import type {BrokerConfig} from '../config/index.js'
import type {TxListEntry} from '../../protocol/commands/tx-admin.js'
import {RecordType, TxJournal, type JournalPosition} from './journal.js'
import {appendBatch, recoverJournal} from './recovery.js'
import {OpenTransactions, type TxCaller} from './owners.js'
import {
  HEURISTIC_COMMITTED,
  HEURISTIC_COMPLETED,
  HEURISTIC_NAMES,
  commitBatch,
  preparedEntry,
  HEURISTIC_ROLLED_BACK,
  heuristicError,
  partKey,
  type CommitPart,
  type CommittedBatch,
  type Tx,
  type TxHost,
} from './types.js'
import {parseTxKey, XA_OK, XA_RDONLY, XaError, XAER_INVAL, XAER_NOTA, XAER_PROTO, XAER_RMERR, type TxKey} from '../../protocol/xa.js'

export {ANONYMOUS_PRINCIPAL, type TxCaller} from './owners.js'

/**
 * Most bytes of records all open transactions may hold in memory together (they are also in
 * the journal); a put beyond it is refused (TRANSACTION_ERROR), so no client can exhaust the
 * broker's memory with transactions.
 */
const MAX_HELD_BYTES = 1024 * 1024 * 1024

export class TransactionManager {
  private readonly local = new Map<number, Map<string, Tx>>()
  private readonly xa = new Map<string, Tx>()
  private readonly heuristic = new Map<string, number>()
  /** The owner of each heuristic outcome that has one (its transaction's; it may FORGET it). */
  private readonly heuristicOwners = new Map<string, string>()
  private readonly open: OpenTransactions
  /** Commits journaled whose DONE is not written yet: their records stay pinned for recovery. */
  private readonly committing = new Set<Tx>()
  /** Commits journaled whose append failed: retried at the next start (their records stay pinned). */
  private readonly unfinished = new Set<Tx>()
  private timers = 0
  /** Bytes of records all open transactions hold in memory. */
  private heldBytes = 0
  private checkpointTimer: NodeJS.Timeout | undefined
  private flushTimer: NodeJS.Timeout | undefined
  private closed = false

  private constructor(
    private readonly host: TxHost,
    private readonly journal: TxJournal,
    private readonly maxHeldBytes: number,
  ) {
    this.open = new OpenTransactions(host.log)
  }

  /**
   * Open the journal under `<dataLogPath>/transactions/` and recover from it (before the
   * broker takes requests): complete journaled commits, roll back in-flight transactions,
   * bring prepared XA transactions back.
   */
  static async open(host: TxHost, options: {dir: string; maxFileBytes: number; maxHeldBytes?: number}): Promise<TransactionManager> {
    const system = host.config().system
    const holder: {manager?: TransactionManager} = {}
    const {journal, records, checkpoint} = TxJournal.open({
      dir: options.dir,
      maxFileBytes: options.maxFileBytes,
      maxCheckpoints: system.maxCheckpoints,
      log: host.log,
      onRoll: () => holder.manager?.checkpoint(),
    })
    const manager = new TransactionManager(host, journal, options.maxHeldBytes ?? MAX_HELD_BYTES)
    holder.manager = manager
    try {
      const {heuristic, heuristicOwners, prepared} = await recoverJournal(host, journal, records, checkpoint)
      for (const [key, state] of heuristic) manager.heuristic.set(key, state)
      for (const [key, owner] of heuristicOwners) manager.heuristicOwners.set(key, owner)
      for (const tx of prepared) {
        manager.heldBytes += tx.bytes
        manager.xa.set(tx.key.key, tx)
        manager.open.add(tx)
      }
      manager.checkpoint()
    } catch (error) {
      await journal.close()
      throw error
    }
    manager.startTimers()
    return manager
  }

  private get system(): BrokerConfig['system'] {
    return this.host.config().system
  }

  /**
   * BEGIN: a no-op for a transaction that exists. `caller` (a connection id, or with access
   * control its owner and principal) is who owns it and whose caps it counts against.
   */
  begin(caller: number | TxCaller, keyText: string, timeoutSeconds: number): void {
    const who: TxCaller = typeof caller === 'number' ? {connId: caller} : caller
    const connId = who.connId
    const key = parseTxKey(keyText)
    if (key.kind === 'xa' && this.heuristic.has(key.key)) throw heuristicError(key.key, this.heuristic.get(key.key)!)
    const existing = this.find(connId, key)
    if (existing !== undefined) return
    this.open.admit(who, this.system)
    const seconds = Math.min(Math.max(0, timeoutSeconds), this.system.maxTxTimeoutSeconds)
    if (seconds > 0 && this.timers >= this.system.maxTxTimeoutTimerCapacity) {
      throw new XaError(XAER_RMERR, `too many transactions with a timeout: maxTxTimeoutTimerCapacity is ${this.system.maxTxTimeoutTimerCapacity}`)
    }
    const tx: Tx = {
      key,
      bytes: 0,
      connId: key.kind === 'local' ? connId : undefined,
      beganOn: connId,
      owner: who.owner,
      principal: who.principal,
      state: 'START',
      parts: new Map(),
      first: undefined,
      beganAtMs: Date.now(),
      timer: undefined,
    }
    this.open.add(tx)
    if (key.kind === 'local') {
      let map = this.local.get(connId)
      if (map === undefined) this.local.set(connId, (map = new Map()))
      map.set(key.key, tx)
      this.host.counters.txBegin += 1
    } else {
      this.xa.set(key.key, tx)
      this.host.counters.txXaBegin += 1
    }
    if (seconds > 0) {
      this.timers += 1
      tx.timer = setTimeout(() => this.expire(tx), seconds * 1000)
      tx.timer.unref()
    }
  }

  /**
   * Put `count` stored-format records (ids assigned) for one partition into a transaction:
   * journaled, not appended. Throws XaError when the transaction is unknown or not open for puts.
   */
  put(connId: number, keyText: string, topic: string, partition: number, records: Buffer, count: number): void {
    const tx = this.get(connId, parseTxKey(keyText))
    if (tx.state !== 'START' && tx.state !== 'IN_USE') {
      throw new XaError(XAER_PROTO, `transaction "${keyText}" is ${tx.state}: it takes no more messages`)
    }
    if (this.heldBytes + records.length > this.maxHeldBytes) {
      throw new MetaError(
        'TRANSACTION_ERROR',
        `open transactions hold ${this.heldBytes} bytes; this put of ${records.length} bytes would pass the limit of ${this.maxHeldBytes}: commit or roll back first (smaller transactions)`,
      )
    }
    // The first record of a transaction names its owner, so that it survives a restart.
    const head: Record<string, unknown> = {k: tx.key.key, t: topic, p: partition, n: count}
    if (tx.first === undefined && tx.owner !== undefined) head.o = tx.owner
    const at = this.journal.write(RecordType.MSG, head, records)
    tx.first ??= at
    tx.state = 'IN_USE'
    const id = partKey(topic, partition)
    let part = tx.parts.get(id)
    if (part === undefined) tx.parts.set(id, (part = {topic, partition, records: [], bytes: 0, count: 0}))
    part.records.push(records)
    part.bytes += records.length
    part.count += count
    tx.bytes += records.length
    this.heldBytes += records.length
  }

  /** PREPARE: the XA vote (XA_OK or XA_RDONLY). The prepare record is always fdatasynced. */
  async prepare(connId: number, keyText: string): Promise<number> {
    const key = parseTxKey(keyText)
    if (key.kind === 'local') throw new XaError(XAER_RMERR, `cannot prepare the local transaction "${keyText}": PREPARE is for XA transactions`)
    const tx = this.get(connId, key)
    if (tx.state === 'START') {
      this.finish(tx)
      return XA_RDONLY
    }
    if (tx.state !== 'IN_USE') throw new XaError(XAER_PROTO, `cannot prepare transaction "${keyText}" in state ${tx.state}`)
    this.journal.write(RecordType.PREPARE, tx.owner === undefined ? {k: tx.key.key} : {k: tx.key.key, o: tx.owner})
    tx.state = 'PREPARED'
    this.clearTimer(tx)
    await this.journal.sync()
    return XA_OK
  }

  /** COMMIT_ONE_PHASE / COMMIT_TWO_PHASE; resolves once every message is appended. */
  async commit(connId: number, keyText: string, onePhase: boolean): Promise<CommittedBatch[]> {
    const key = parseTxKey(keyText)
    const tx = this.get(connId, key)
    if (key.kind === 'xa') {
      if (tx.state === 'COMMITTING') throw new XaError(XAER_PROTO, `transaction "${keyText}" is already being committed`)
      if (!onePhase && tx.state !== 'PREPARED') {
        throw new XaError(XAER_PROTO, `cannot do a two-phase commit of transaction "${keyText}": it has not been prepared`)
      }
    } else if (tx.state === 'COMMITTING') {
      throw new XaError(XAER_PROTO, `transaction "${keyText}" is already being committed`)
    }
    const batches = await this.doCommit(tx, undefined)
    this.host.counters.txCommit += 1
    return batches
  }

  /** ROLLBACK: the messages are dropped. */
  async rollback(connId: number, keyText: string): Promise<void> {
    const tx = this.get(connId, parseTxKey(keyText))
    if (tx.state === 'COMMITTING') throw new XaError(XAER_PROTO, `cannot roll back transaction "${keyText}": it is being committed`)
    await this.doRollback(tx, undefined)
  }

  /**
   * RECOVER: prepared XA transactions and heuristic outcomes, of `qualifier`'s resource manager
   * when given; only those whose owner `visible` accepts when it is given (access control).
   */
  recoverKeys(qualifier: string | undefined, visible?: (owner: string | undefined) => boolean): string[] {
    const keys: string[] = []
    for (const tx of this.xa.values()) if (tx.state === 'PREPARED' && (visible === undefined || visible(tx.owner))) keys.push(tx.key.key)
    for (const key of this.heuristic.keys()) if (visible === undefined || visible(this.heuristicOwners.get(key))) keys.push(key)
    if (qualifier === undefined || qualifier === '') return keys
    return keys.filter((k) => k.split(':')[4] === qualifier)
  }

  /** FORGET: drop a heuristic outcome. */
  forget(keyText: string): void {
    const key = parseTxKey(keyText)
    if (this.heuristic.has(key.key)) {
      this.heuristic.delete(key.key)
      this.heuristicOwners.delete(key.key)
      this.journal.write(RecordType.FORGET, {k: key.key})
      return
    }
    if (key.kind === 'xa' && this.xa.has(key.key)) {
      throw new XaError(XAER_PROTO, `transaction "${keyText}" has no heuristic outcome to forget`)
    }
    throw new XaError(XAER_NOTA, `transaction "${keyText}" is not known: no heuristic outcome to forget`)
  }

  /**
   * An operator's heuristic decision on a prepared XA transaction (`meta tx commit|rollback`,
   * what MetaQ did through JMX): the outcome is kept, and the TM's later commit or rollback is
   * answered with XA_HEURCOM / XA_HEURRB, until FORGET.
   */
  async decide(keyText: string, commit: boolean): Promise<void> {
    const key = parseTxKey(keyText)
    if (key.kind !== 'xa') throw new XaError(XAER_INVAL, `"${keyText}" is a local transaction: only prepared XA transactions take a heuristic decision`)
    const tx = this.xa.get(key.key)
    if (tx === undefined) {
      if (this.heuristic.has(key.key)) throw heuristicError(key.key, this.heuristic.get(key.key)!)
      throw new XaError(XAER_NOTA, `transaction "${keyText}" is not known`)
    }
    if (tx.state !== 'PREPARED')
      throw new XaError(XAER_PROTO, `transaction "${keyText}" is ${tx.state}, not PREPARED: only a prepared transaction takes a heuristic decision`)
    if (commit) {
      try {
        await this.doCommit(tx, HEURISTIC_COMMITTED)
      } catch (error) {
        // Decided but not appended (completed at the next start): the outcome is hazardous until then.
        if (this.unfinished.has(tx)) this.setHeuristic(tx, HEURISTIC_COMPLETED)
        throw error
      }
      this.host.counters.txCommit += 1
    } else {
      await this.doRollback(tx, HEURISTIC_ROLLED_BACK)
    }
  }

  /** Prepared XA transactions and heuristic outcomes (`meta tx list`). */
  list(): TxListEntry[] {
    const out: TxListEntry[] = []
    for (const tx of this.xa.values()) if (tx.state === 'PREPARED') out.push(preparedEntry(tx))
    for (const [key, state] of this.heuristic) {
      out.push({key, state: HEURISTIC_NAMES[state] ?? 'HEURISTIC_COMPLETED', messages: 0, bytes: 0, partitions: [], beganAtMs: 0})
    }
    return out
  }

  /**
   * Whether the transaction `keyText` names for this connection exists (open, or a heuristic
   * outcome), and its owner (undefined: none recorded). The transaction handlers check it
   * before letting anyone but its owner finish it (docs/security.md#transactions).
   */
  ownerOf(connId: number, keyText: string): {owner: string | undefined} | undefined {
    let key: TxKey
    try {
      key = parseTxKey(keyText)
    } catch {
      return undefined
    }
    const tx = this.find(connId, key)
    if (tx !== undefined) return {owner: tx.owner}
    if (key.kind === 'xa' && this.heuristic.has(key.key)) return {owner: this.heuristicOwners.get(key.key)}
    return undefined
  }

  /** Open transactions (stats). */
  get openCount(): number {
    let n = this.xa.size
    for (const map of this.local.values()) n += map.size
    return n
  }

  /**
   * The connection is gone: its local transactions can never be committed (they are scoped to
   * it), so they are rolled back now instead of waiting for a timeout or restart.
   */
  connectionClosed(connId: number): void {
    const rollBack = (tx: Tx) =>
      this.doRollback(tx, undefined).catch((error: Error) =>
        this.host.log.warn('rolling back a transaction of a closed connection failed', {tx: tx.key.key, error: error.message}),
      )
    for (const tx of [...(this.local.get(connId)?.values() ?? [])]) if (tx.state !== 'COMMITTING') void rollBack(tx)
    // An anonymous connection's XA transactions are its own (with access control): once it is
    // gone no one but a holder of `tx` could finish them, so the unprepared ones end with it.
    for (const tx of this.open.begunOn(connId)) {
      if (tx.key.kind === 'xa' && tx.owner === `#${connId}` && (tx.state === 'START' || tx.state === 'IN_USE')) void rollBack(tx)
    }
  }

  /** Write a checkpoint now (also done every checkpointInterval and when a redo file fills). */
  checkpoint(): void {
    if (this.closed) return
    let from = this.journal.position
    const consider = (tx: Tx) => {
      if (tx.first !== undefined && before(tx.first, from)) from = tx.first
    }
    for (const tx of this.xa.values()) consider(tx)
    for (const map of this.local.values()) for (const tx of map.values()) consider(tx)
    for (const tx of this.committing) consider(tx)
    for (const tx of this.unfinished) consider(tx)
    this.journal.checkpoint(
      from,
      [...this.heuristic].map(([key, state]) => {
        const owner = this.heuristicOwners.get(key)
        return owner === undefined ? [key, state] : [key, state, owner]
      }),
    )
  }

  /** Redo files on disk (tests, stats). */
  journalFiles(): number[] {
    return this.journal.files()
  }

  async close(): Promise<void> {
    if (this.closed) return
    clearInterval(this.checkpointTimer)
    clearInterval(this.flushTimer)
    this.open.flushExpiries()
    for (const tx of this.allOpen()) this.clearTimer(tx)
    try {
      this.checkpoint()
    } catch (error) {
      this.host.log.warn('final transaction checkpoint failed', {error: (error as Error).message})
    }
    this.closed = true
    await this.journal.close()
  }

  private startTimers(): void {
    const system = this.system
    this.checkpointTimer = setInterval(() => {
      try {
        this.checkpoint()
      } catch (error) {
        this.host.log.error('transaction checkpoint failed', {error: (error as Error).message})
      }
    }, system.checkpointIntervalMs)
    this.checkpointTimer.unref()
    this.flushTimer = setInterval(() => {
      if (this.system.flushTxLogAtCommit !== 2) return
      this.journal.syncIfDirty().catch((error: Error) => this.host.log.error('transaction journal fdatasync failed', {error: error.message}))
    }, 1000)
    this.flushTimer.unref()
  }

  /** Sync the journal as flushTxLogAtCommit says for commit and rollback records. */
  private syncAtCommit(): Promise<void> {
    return this.system.flushTxLogAtCommit === 1 ? this.journal.sync() : Promise.resolve()
  }

  private *allOpen(): Iterable<Tx> {
    yield* this.xa.values()
    for (const map of this.local.values()) yield* map.values()
  }

  private find(connId: number, key: TxKey): Tx | undefined {
    return key.kind === 'xa' ? this.xa.get(key.key) : this.local.get(connId)?.get(key.key)
  }

  /** The open transaction, or the XA error MetaQ answers (unknown, heuristic). */
  private get(connId: number, key: TxKey): Tx {
    const tx = this.find(connId, key)
    if (tx !== undefined) return tx
    if (key.kind === 'xa' && this.heuristic.has(key.key)) throw heuristicError(key.key, this.heuristic.get(key.key)!)
    const where = key.kind === 'local' ? ' on this connection' : ''
    throw new XaError(XAER_NOTA, `transaction "${key.key}" has not been started${where}`)
  }

  /** Forget an open transaction (committed, rolled back). */
  private finish(tx: Tx): void {
    this.clearTimer(tx)
    this.open.remove(tx)
    this.heldBytes -= tx.bytes
    tx.bytes = 0
    if (tx.key.kind === 'xa') {
      if (this.xa.get(tx.key.key) === tx) this.xa.delete(tx.key.key)
    } else {
      const map = this.local.get(tx.connId!)
      if (map?.get(tx.key.key) === tx) {
        map.delete(tx.key.key)
        if (map.size === 0) this.local.delete(tx.connId!)
      }
    }
  }

  private clearTimer(tx: Tx): void {
    if (tx.timer === undefined) return
    clearTimeout(tx.timer)
    tx.timer = undefined
    this.timers -= 1
  }

  private expire(tx: Tx): void {
    tx.timer = undefined
    this.timers -= 1
    if (tx.state !== 'START' && tx.state !== 'IN_USE') return
    this.open.expiredOne(tx)
    this.doRollback(tx, undefined).catch((error: Error) =>
      this.host.log.warn('rolling back a timed-out transaction failed', {tx: tx.key.key, error: error.message}),
    )
  }

  private setHeuristic(tx: Tx, state: number): void {
    this.heuristic.set(tx.key.key, state)
    if (tx.owner !== undefined) this.heuristicOwners.set(tx.key.key, tx.owner)
  }

  private async doRollback(tx: Tx, heuristic: number | undefined): Promise<void> {
    const journaled = tx.first !== undefined
    this.finish(tx)
    this.host.counters.txRollback += 1
    if (heuristic !== undefined) this.setHeuristic(tx, heuristic)
    // Nothing of a transaction that never took a message is in the journal.
    if (!journaled && heuristic === undefined) return
    const head: Record<string, unknown> = heuristic === undefined ? {k: tx.key.key} : {k: tx.key.key, h: heuristic}
    if (heuristic !== undefined && tx.owner !== undefined) head.o = tx.owner
    this.journal.write(RecordType.ROLLBACK, head)
    await this.syncAtCommit().catch((error: Error) => {
      throw new XaError(XAER_RMERR, error.message)
    })
  }

  /**
   * Journal the commit decision, then append each partition's batch, then journal DONE.
   * Resolves when every batch is written (and synced, for group-commit topics).
   */
  private async doCommit(tx: Tx, heuristic: number | undefined): Promise<CommittedBatch[]> {
    const prior = tx.state
    tx.state = 'COMMITTING'
    this.clearTimer(tx)
    if (tx.parts.size === 0) {
      // Nothing to append: nothing to journal.
      this.finish(tx)
      if (heuristic !== undefined) this.setHeuristic(tx, heuristic)
      return []
    }
    const batches: Array<{log: PartitionLog; records: Buffer; part: CommitPart}> = []
    for (const part of tx.parts.values()) {
      const log = this.host.logFor(part.topic, part.partition)
      if (log instanceof MetaError) {
        tx.state = prior
        throw new XaError(XAER_RMERR, `cannot commit transaction "${tx.key.key}": ${log.message}`)
      }
      batches.push(commitBatch(log, part))
    }
    try {
      const head: Record<string, unknown> = {k: tx.key.key, parts: batches.map((b) => b.part)}
      if (heuristic !== undefined) head.h = heuristic
      if (heuristic !== undefined && tx.owner !== undefined) head.o = tx.owner
      this.journal.write(RecordType.COMMIT, head)
      await this.syncAtCommit()
    } catch (error) {
      tx.state = prior
      throw new XaError(XAER_RMERR, `cannot journal the commit of transaction "${tx.key.key}": ${(error as Error).message}`)
    }
    let placed: CommittedBatch[]
    // Decided: from here on the transaction commits, now or at the next start. Until its DONE
    // record is written a checkpoint must not move past its records.
    this.finish(tx)
    this.committing.add(tx)
    if (heuristic !== undefined) this.setHeuristic(tx, heuristic)
    try {
      placed = await Promise.all(
        batches.map(async (b) => ({topic: b.part.t, partition: b.part.p, offset: await appendBatch(b.log, b.records, b.part.n), count: b.part.n})),
      )
    } catch (error) {
      this.committing.delete(tx)
      this.unfinished.add(tx)
      this.host.log.error('a journaled commit could not be appended; it is completed at the next start', {
        tx: tx.key.key,
        error: (error as Error).message,
      })
      throw new XaError(
        XAER_RMERR,
        `transaction "${tx.key.key}" is committed in the journal but its messages could not be appended (${(error as Error).message}); the broker completes it at its next start`,
      )
    }
    this.committing.delete(tx)
    try {
      this.journal.write(RecordType.DONE, {k: tx.key.key})
    } catch (error) {
      // Committed and appended; without DONE the next start finds the batch in place and appends nothing.
      this.unfinished.add(tx)
      this.host.log.warn('could not journal the end of a commit; the next start checks it', {tx: tx.key.key, error: (error as Error).message})
    }
    return placed
  }
}

function before(a: JournalPosition, b: JournalPosition): boolean {
  return a.file < b.file || (a.file === b.file && a.offset < b.offset)
}
