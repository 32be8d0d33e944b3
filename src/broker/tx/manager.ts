/**
 * The broker's transactions (spec §7.3): local (`TX:…`, scoped to the connection that began
 * them) and XA (`XID:…`, broker-wide), their states, timeouts, the journal and recovery.
 *
 * States: START → IN_USE (first put) → PREPARED (XA) → COMMITTING → gone; heuristic outcomes
 * (4 committed, 5 rolled back, 6 hazard) are kept, and listed by RECOVER, until FORGET.
 *
 * Order of a commit (docs/invariants.md "Transactions"): meta makes written bytes visible at
 * once, so the commit decision is journaled (and fdatasynced per flushTxLogAtCommit) before
 * the messages are appended: one appendRecords batch per partition, ids assigned at put time.
 * Once every batch is written a DONE record follows. Recovery completes a COMMIT without DONE:
 * it looks for the batch's first record at or after the partition's end as it was when the
 * commit was journaled, and appends only what is not already there, so no record is written
 * twice and none is missing. In-flight transactions (and unprepared XA ones) are rolled back
 * by recovery; prepared XA transactions come back PREPARED.
 */
import {checksum} from '../../protocol/crc.js'
import {MetaError} from '../../protocol/errors.js'
import {RECORD_HEADER_BYTES, scanRecords} from '../../protocol/message-set.js'
import type {Logger} from '../../log.js'
import type {PartitionLog} from '../../storage/index.js'
import type {BrokerConfig} from '../config/index.js'
import type {BrokerCounters} from '../stats.js'
import type {TxListEntry} from '../../protocol/commands/tx-admin.js'
import {RecordType, TxJournal, type CheckpointData, type JournalPosition, type JournalRecord} from './journal.js'
import {
  parseTxKey,
  XA_HEURCOM,
  XA_HEURHAZ,
  XA_HEURRB,
  XA_OK,
  XA_RDONLY,
  XaError,
  XAER_INVAL,
  XAER_NOTA,
  XAER_PROTO,
  XAER_RMERR,
  type TxKey,
} from '../../protocol/xa.js'

export type TxState = 'START' | 'IN_USE' | 'PREPARED' | 'COMMITTING'

/** Heuristic outcomes (MetaQ's state numbers). */
export const HEURISTIC_COMMITTED = 4
export const HEURISTIC_ROLLED_BACK = 5
export const HEURISTIC_COMPLETED = 6

/** One partition's share of a transaction: its records, in put order. */
interface TxPart {
  topic: string
  partition: number
  records: Buffer[]
  bytes: number
  count: number
}

interface Tx {
  key: TxKey
  /** Bytes of records it holds in memory (counted in TransactionManager.heldBytes). */
  bytes: number
  /** The connection a local transaction belongs to (undefined: XA). */
  connId: number | undefined
  state: TxState
  parts: Map<string, TxPart>
  /** The journal position of its first record (pins the redo file). */
  first: JournalPosition | undefined
  beganAtMs: number
  timer: NodeJS.Timeout | undefined
}

/** A part of a journaled commit: where the batch goes and how to recognise it. */
interface CommitPart {
  t: string
  p: number
  /** The partition's written end when the commit was journaled: the batch starts at or after it. */
  from: number
  n: number
  len: number
  crc: number
  /** Id of the batch's first record (decimal). */
  id0: string
}

/** Where a committed transaction's messages went in one partition: one contiguous batch. */
export interface CommittedBatch {
  topic: string
  partition: number
  /** Offset of the batch's first record. */
  offset: number
  count: number
}

export interface TxHost {
  config(): BrokerConfig
  /** The partition's log, created if needed; an error says why it cannot be. */
  logFor(topic: string, partition: number): PartitionLog | MetaError
  counters: BrokerCounters
  log: Logger
}

/**
 * Most bytes of records all open transactions may hold in memory together (they are also in
 * the journal); a put beyond it is refused (TRANSACTION_ERROR), so no client can exhaust the
 * broker's memory with transactions.
 */
export const MAX_HELD_BYTES = 1024 * 1024 * 1024

const HEURISTIC_NAMES: Record<number, TxListEntry['state']> = {
  [HEURISTIC_COMMITTED]: 'HEURISTIC_COMMITTED',
  [HEURISTIC_ROLLED_BACK]: 'HEURISTIC_ROLLED_BACK',
  [HEURISTIC_COMPLETED]: 'HEURISTIC_COMPLETED',
}

export class TransactionManager {
  private readonly local = new Map<number, Map<string, Tx>>()
  private readonly xa = new Map<string, Tx>()
  private readonly heuristic = new Map<string, number>()
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
  ) {}

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
      await manager.recover(records, checkpoint)
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

  /** BEGIN: a no-op for a transaction that exists. */
  begin(connId: number, keyText: string, timeoutSeconds: number): void {
    const key = parseTxKey(keyText)
    if (key.kind === 'xa' && this.heuristic.has(key.key)) throw heuristicError(key.key, this.heuristic.get(key.key)!)
    const existing = this.find(connId, key)
    if (existing !== undefined) return
    const seconds = Math.min(Math.max(0, timeoutSeconds), this.system.maxTxTimeoutSeconds)
    if (seconds > 0 && this.timers >= this.system.maxTxTimeoutTimerCapacity) {
      throw new XaError(
        XAER_RMERR,
        `too many transactions with a timeout: maxTxTimeoutTimerCapacity is ${this.system.maxTxTimeoutTimerCapacity}`,
      )
    }
    const tx: Tx = {key, bytes: 0, connId: key.kind === 'local' ? connId : undefined, state: 'START', parts: new Map(), first: undefined, beganAtMs: Date.now(), timer: undefined}
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
    const at = this.journal.write(RecordType.MSG, {k: tx.key.key, t: topic, p: partition, n: count}, records)
    tx.first ??= at
    tx.state = 'IN_USE'
    const id = `${topic}\0${partition}`
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
    this.journal.write(RecordType.PREPARE, {k: tx.key.key})
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

  /** RECOVER: prepared XA transactions and heuristic outcomes, of `qualifier`'s resource manager when given. */
  recoverKeys(qualifier: string | undefined): string[] {
    const keys: string[] = []
    for (const tx of this.xa.values()) if (tx.state === 'PREPARED') keys.push(tx.key.key)
    keys.push(...this.heuristic.keys())
    if (qualifier === undefined || qualifier === '') return keys
    return keys.filter((k) => k.split(':')[4] === qualifier)
  }

  /** FORGET: drop a heuristic outcome. */
  forget(keyText: string): void {
    const key = parseTxKey(keyText)
    if (this.heuristic.has(key.key)) {
      this.heuristic.delete(key.key)
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
    if (tx.state !== 'PREPARED') throw new XaError(XAER_PROTO, `transaction "${keyText}" is ${tx.state}, not PREPARED: only a prepared transaction takes a heuristic decision`)
    if (commit) {
      try {
        await this.doCommit(tx, HEURISTIC_COMMITTED)
      } catch (error) {
        // Decided but not appended (completed at the next start): the outcome is hazardous until then.
        if (this.unfinished.has(tx)) this.heuristic.set(key.key, HEURISTIC_COMPLETED)
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
    for (const tx of this.xa.values()) {
      if (tx.state !== 'PREPARED') continue
      let messages = 0
      let bytes = 0
      for (const part of tx.parts.values()) {
        messages += part.count
        bytes += part.bytes
      }
      out.push({
        key: tx.key.key,
        state: 'PREPARED',
        messages,
        bytes,
        partitions: [...tx.parts.values()].map((p) => `${p.topic}-${p.partition}`),
        beganAtMs: tx.beganAtMs,
      })
    }
    for (const [key, state] of this.heuristic) {
      out.push({key, state: HEURISTIC_NAMES[state] ?? 'HEURISTIC_COMPLETED', messages: 0, bytes: 0, partitions: [], beganAtMs: 0})
    }
    return out
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
    const map = this.local.get(connId)
    if (map === undefined) return
    for (const tx of [...map.values()]) {
      if (tx.state === 'COMMITTING') continue
      this.doRollback(tx, undefined).catch((error: Error) => this.host.log.warn('rolling back a transaction of a closed connection failed', {tx: tx.key.key, error: error.message}))
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
    this.journal.checkpoint(from, [...this.heuristic])
  }

  /** Redo files on disk (tests, stats). */
  journalFiles(): number[] {
    return this.journal.files()
  }

  async close(): Promise<void> {
    if (this.closed) return
    clearInterval(this.checkpointTimer)
    clearInterval(this.flushTimer)
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
    this.host.log.info('transaction timed out: rolled back', {tx: tx.key.key})
    this.doRollback(tx, undefined).catch((error: Error) => this.host.log.warn('rolling back a timed-out transaction failed', {tx: tx.key.key, error: error.message}))
  }

  private async doRollback(tx: Tx, heuristic: number | undefined): Promise<void> {
    const journaled = tx.first !== undefined
    this.finish(tx)
    this.host.counters.txRollback += 1
    if (heuristic !== undefined) this.heuristic.set(tx.key.key, heuristic)
    // Nothing of a transaction that never took a message is in the journal.
    if (!journaled && heuristic === undefined) return
    this.journal.write(RecordType.ROLLBACK, heuristic === undefined ? {k: tx.key.key} : {k: tx.key.key, h: heuristic})
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
      if (heuristic !== undefined) this.heuristic.set(tx.key.key, heuristic)
      return []
    }
    const batches: Array<{log: PartitionLog; records: Buffer; part: CommitPart}> = []
    for (const part of tx.parts.values()) {
      const log = this.host.logFor(part.topic, part.partition)
      if (log instanceof MetaError) {
        tx.state = prior
        throw new XaError(XAER_RMERR, `cannot commit transaction "${tx.key.key}": ${log.message}`)
      }
      const records = part.records.length === 1 ? part.records[0] : Buffer.concat(part.records, part.bytes)
      batches.push({
        log,
        records,
        part: {
          t: part.topic,
          p: part.partition,
          from: log.maxOffset,
          n: part.count,
          len: records.length,
          crc: checksum(records),
          id0: records.readBigInt64BE(8).toString(),
        },
      })
    }
    try {
      const head: Record<string, unknown> = {k: tx.key.key, parts: batches.map((b) => b.part)}
      if (heuristic !== undefined) head.h = heuristic
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
    if (heuristic !== undefined) this.heuristic.set(tx.key.key, heuristic)
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

  /** Replay the journal (see the file comment). */
  private async recover(records: JournalRecord[], checkpoint: CheckpointData | undefined): Promise<void> {
    const log = this.host.log
    for (const [key, state] of checkpoint?.heuristic ?? []) this.heuristic.set(key, state)
    const txs = new Map<string, {tx: Tx; commit?: CommitPart[]}>()
    for (const record of records) {
      const k = String(record.head.k)
      const entry = txs.get(k)
      switch (record.type) {
        case RecordType.MSG: {
          let e = entry
          if (e === undefined) {
            let key: TxKey
            try {
              key = parseTxKey(k)
            } catch {
              log.warn('journal: skipping a record with an invalid transaction key', {key: k})
              continue
            }
            e = {tx: {key, bytes: 0, connId: -1, state: 'IN_USE', parts: new Map(), first: {file: record.file, offset: record.offset}, beganAtMs: Date.now(), timer: undefined}}
            txs.set(k, e)
          }
          const topic = String(record.head.t)
          const partition = Number(record.head.p)
          const id = `${topic}\0${partition}`
          let part = e.tx.parts.get(id)
          if (part === undefined) e.tx.parts.set(id, (part = {topic, partition, records: [], bytes: 0, count: 0}))
          part.records.push(record.body)
          part.bytes += record.body.length
          part.count += Number(record.head.n)
          break
        }
        case RecordType.PREPARE:
          if (entry !== undefined) entry.tx.state = 'PREPARED'
          break
        case RecordType.COMMIT:
          if (record.head.h !== undefined) this.heuristic.set(k, Number(record.head.h))
          if (entry !== undefined) {
            entry.tx.state = 'COMMITTING'
            entry.commit = record.head.parts as CommitPart[]
          } else {
            log.warn('journal: a commit record of a transaction whose messages are not in the journal', {tx: k})
          }
          break
        case RecordType.DONE:
          txs.delete(k)
          break
        case RecordType.ROLLBACK:
          if (record.head.h !== undefined) this.heuristic.set(k, Number(record.head.h))
          txs.delete(k)
          break
        case RecordType.FORGET:
          this.heuristic.delete(k)
          break
        default:
          log.warn('journal: skipping a record of unknown type', {type: record.type})
      }
    }
    let completed = 0
    let rolledBack = 0
    let prepared = 0
    for (const {tx, commit} of txs.values()) {
      if (tx.state === 'COMMITTING' && commit !== undefined) {
        await this.complete(tx, commit)
        this.journal.write(RecordType.DONE, {k: tx.key.key})
        completed += 1
      } else if (tx.state === 'PREPARED' && tx.key.kind === 'xa') {
        tx.connId = undefined
        for (const part of tx.parts.values()) tx.bytes += part.bytes
        this.heldBytes += tx.bytes
        this.xa.set(tx.key.key, tx)
        prepared += 1
      } else {
        this.journal.write(RecordType.ROLLBACK, {k: tx.key.key})
        rolledBack += 1
      }
    }
    if (txs.size > 0 || records.length > 0) {
      await this.journal.sync()
      log.info('transaction journal recovered', {records: records.length, completed, rolledBack, prepared, heuristic: this.heuristic.size})
    }
    this.checkpoint()
  }

  /** Finish the append of a journaled commit: only what is not in the log yet is appended. */
  private async complete(tx: Tx, commit: CommitPart[]): Promise<void> {
    for (const part of commit) {
      const txPart = tx.parts.get(`${part.t}\0${part.p}`)
      if (txPart === undefined) throw new MetaError('STORAGE_CORRUPT', `transaction journal: the commit of "${tx.key.key}" names ${part.t}-${part.p}, which has no messages in it`)
      const records = Buffer.concat(txPart.records, txPart.bytes)
      const log = this.host.logFor(part.t, part.p)
      if (log instanceof MetaError) throw log
      const present = await presentPrefix(log, part.from, records)
      if (present === records.length) continue
      let count = 0
      scanRecords(records, present, () => (count += 1))
      this.host.log.info('completing a journaled commit', {tx: tx.key.key, partition: `${part.t}-${part.p}`, records: count, alreadyPresent: present})
      await appendBatch(log, records.subarray(present), count)
    }
  }
}

function heuristicError(key: string, state: number): XaError {
  if (state === HEURISTIC_COMMITTED) return new XaError(XA_HEURCOM, `transaction "${key}" was heuristically committed`)
  if (state === HEURISTIC_ROLLED_BACK) return new XaError(XA_HEURRB, `transaction "${key}" was heuristically rolled back`)
  return new XaError(XA_HEURHAZ, `transaction "${key}" was heuristically completed`)
}

function before(a: JournalPosition, b: JournalPosition): boolean {
  return a.file < b.file || (a.file === b.file && a.offset < b.offset)
}

/** Append a batch; resolves with its offset once written (and synced, under group commit). */
function appendBatch(log: PartitionLog, records: Buffer, count: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    try {
      const offset = log.appendRecords(records, count, (err) => (err === null ? resolve(offset) : reject(err)))
    } catch (error) {
      reject(error)
    }
  })
}

/**
 * How many leading bytes of `batch` are already in the log: 0 when its first record is not
 * at or after `from`, the whole length when it all is, or a prefix of whole records when the
 * log ends inside it.
 */
async function presentPrefix(log: PartitionLog, from: number, batch: Buffer): Promise<number> {
  const id0High = batch.readUInt32BE(8)
  const id0Low = batch.readUInt32BE(12)
  let offset = Math.max(from, log.minOffset)
  while (offset < log.maxOffset) {
    const result = await log.read(offset, 1024 * 1024)
    if (result.kind === 'below') {
      offset = result.offset
      continue
    }
    if (result.kind === 'damaged') {
      offset = result.offset
      continue
    }
    if (result.kind === 'end') break
    const data = result.data
    let found = -1
    const {end} = scanRecords(data, 0, (pos) => {
      if (found < 0 && data.readUInt32BE(pos + 8) === id0High && data.readUInt32BE(pos + 12) === id0Low) found = pos
    })
    if (found >= 0) return matchingPrefix(log, offset + found, batch)
    if (end === 0) {
      // A record larger than the read: step over it by its length.
      if (data.length < RECORD_HEADER_BYTES) break
      offset += RECORD_HEADER_BYTES + data.readInt32BE(0)
    } else {
      offset += end
    }
  }
  return 0
}

async function matchingPrefix(log: PartitionLog, at: number, batch: Buffer): Promise<number> {
  let matched = 0
  while (matched < batch.length && at + matched < log.maxOffset) {
    const result = await log.read(at + matched, batch.length - matched)
    if (result.kind !== 'data') break
    const data = result.data
    const n = Math.min(data.length, batch.length - matched)
    if (!data.subarray(0, n).equals(batch.subarray(matched, matched + n))) break
    matched += n
  }
  // Whole records only.
  let whole = 0
  scanRecords(batch.subarray(0, matched), 0, (pos, length) => (whole = pos + RECORD_HEADER_BYTES + length))
  return whole
}

