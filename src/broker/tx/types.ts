/**
 * The transaction model the manager (manager.ts) and its recovery (recovery.ts) share: a
 * transaction, its per-partition parts, the commit record's parts, heuristic outcomes.
 */
import {checksum} from '../../protocol/crc.js'
import type {MetaError} from '../../protocol/errors.js'
import type {TxListEntry} from '../../protocol/commands/tx-admin.js'
import {XA_HEURCOM, XA_HEURHAZ, XA_HEURRB, XaError, type TxKey} from '../../protocol/xa.js'
import type {Logger} from '../../log.js'
import type {PartitionLog} from '../../storage/index.js'
import type {BrokerConfig} from '../config/index.js'
import type {BrokerCounters} from '../stats.js'
import type {JournalPosition} from './journal.js'

type TxState = 'START' | 'IN_USE' | 'PREPARED' | 'COMMITTING'

/** Heuristic outcomes (MetaQ's state numbers). */
export const HEURISTIC_COMMITTED = 4
export const HEURISTIC_ROLLED_BACK = 5
export const HEURISTIC_COMPLETED = 6

export const HEURISTIC_NAMES: Record<number, TxListEntry['state']> = {
  [HEURISTIC_COMMITTED]: 'HEURISTIC_COMMITTED',
  [HEURISTIC_ROLLED_BACK]: 'HEURISTIC_ROLLED_BACK',
  [HEURISTIC_COMPLETED]: 'HEURISTIC_COMPLETED',
}

/** One partition's share of a transaction: its records, in put order. */
interface TxPart {
  topic: string
  partition: number
  records: Buffer[]
  bytes: number
  count: number
}

export interface Tx {
  key: TxKey
  /** Bytes of records it holds in memory (counted in TransactionManager.heldBytes). */
  bytes: number
  /** The connection a local transaction belongs to (undefined: XA). */
  connId: number | undefined
  /** The connection that began it (-1: recovered at start); its open transactions count against maxOpenTransactionsPerConnection. */
  beganOn: number
  /**
   * Who may finish it besides holders of `tx` or `admin` (docs/security.md#transactions): a user
   * name, or `#<connection id>` for an anonymous connection (`#` after a restart: nobody);
   * undefined on a broker without access control, or a transaction journaled without an owner.
   */
  owner: string | undefined
  /** The principal its opening counts against (maxOpenTransactionsPerPrincipal); undefined without access control. */
  principal: string | undefined
  state: TxState
  parts: Map<string, TxPart>
  /** The journal position of its first record (pins the redo file). */
  first: JournalPosition | undefined
  beganAtMs: number
  timer: NodeJS.Timeout | undefined
}

/** A part of a journaled commit: where the batch goes and how to recognise it. */
export interface CommitPart {
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

/** The key of a transaction's part for `topic`-`partition` in {@link Tx.parts}. */
export function partKey(topic: string, partition: number): string {
  return `${topic}\0${partition}`
}

/** The XA error answering a transaction with a heuristic outcome. */
export function heuristicError(key: string, state: number): XaError {
  if (state === HEURISTIC_COMMITTED) return new XaError(XA_HEURCOM, `transaction "${key}" was heuristically committed`)
  if (state === HEURISTIC_ROLLED_BACK) return new XaError(XA_HEURRB, `transaction "${key}" was heuristically rolled back`)
  return new XaError(XA_HEURHAZ, `transaction "${key}" was heuristically completed`)
}

/** A prepared transaction as `meta tx list` shows it. */
export function preparedEntry(tx: Tx): TxListEntry {
  let messages = 0
  let bytes = 0
  for (const part of tx.parts.values()) {
    messages += part.count
    bytes += part.bytes
  }
  const partitions = [...tx.parts.values()].map((p) => `${p.topic}-${p.partition}`)
  return {key: tx.key.key, state: 'PREPARED', messages, bytes, partitions, beganAtMs: tx.beganAtMs}
}

/** One partition's batch of a commit: its records in one buffer and the commit record's part for it. */
export function commitBatch(log: PartitionLog, part: TxPart): {log: PartitionLog; records: Buffer; part: CommitPart} {
  const records = part.records.length === 1 ? part.records[0] : Buffer.concat(part.records, part.bytes)
  return {
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
  }
}
