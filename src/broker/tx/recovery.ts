/**
 * Recovery of the broker's transactions from the journal (docs/invariants.md#transactions),
 * run by TransactionManager.open before the broker takes requests: replay the records from
 * the latest checkpoint on, complete each journaled commit without DONE, roll back in-flight
 * transactions (and unprepared XA ones), and hand prepared XA transactions back.
 *
 * Completing a commit: the batch's first record is looked for at or after the partition's end
 * as it was when the commit was journaled, and only what is not already there is appended, so
 * no record is written twice and none is missing. The journaled records are checked first
 * against the length and CRC the commit record holds: a commit that lost records to journal
 * damage (journal.ts) is reported and never completed in part.
 */
import assert from 'node:assert'
import {checksum} from '../../protocol/crc.js'
import {MetaError} from '../../protocol/errors.js'
import {RECORD_HEADER_BYTES, scanRecords} from '../../protocol/message-set.js'
import {parseTxKey, type TxKey} from '../../protocol/xa.js'
import type {Logger} from '../../log.js'
import type {PartitionLog} from '../../storage/index.js'
import {RecordType, type CheckpointData, type JournalRecord, type TxJournal} from './journal.js'
import {partKey, type CommitPart, type Tx, type TxHost} from './types.js'

/** Most bytes one read of the log takes while looking for a commit's batch. */
const SEARCH_READ_BYTES = 1024 * 1024

/** What recovery leaves to the manager: heuristic outcomes (and their owners) and the prepared XA transactions. */
interface Recovered {
  heuristic: Map<string, number>
  heuristicOwners: Map<string, string>
  prepared: Tx[]
}

interface Replayed {
  tx: Tx
  commit?: CommitPart[]
}

/**
 * Replay `records` (journal order) over `checkpoint`, finish what the journal leaves open
 * (writing DONE or ROLLBACK records, then one fdatasync) and return what stays open.
 */
export async function recoverJournal(host: TxHost, journal: TxJournal, records: JournalRecord[], checkpoint: CheckpointData | undefined): Promise<Recovered> {
  const heuristic = new Map<string, number>()
  const heuristicOwners = new Map<string, string>()
  for (const [key, state, owner] of checkpoint?.heuristic ?? []) {
    heuristic.set(key, state)
    if (typeof owner === 'string') heuristicOwners.set(key, restartedOwner(owner))
  }
  const txs = replay(records, heuristic, heuristicOwners, host.log)
  let completed = 0
  let rolledBack = 0
  const prepared: Tx[] = []
  for (const {tx, commit} of txs.values()) {
    if (tx.state === 'COMMITTING' && commit !== undefined) {
      await completeCommit(host, tx, commit)
      journal.write(RecordType.DONE, {k: tx.key.key})
      completed += 1
    } else if (tx.state === 'PREPARED' && tx.key.kind === 'xa') {
      tx.connId = undefined
      tx.principal = tx.owner === undefined || tx.owner.startsWith('#') ? undefined : tx.owner
      for (const part of tx.parts.values()) tx.bytes += part.bytes
      prepared.push(tx)
    } else {
      journal.write(RecordType.ROLLBACK, {k: tx.key.key})
      rolledBack += 1
    }
  }
  if (txs.size > 0 || records.length > 0) {
    await journal.sync()
    host.log.info('transaction journal recovered', {records: records.length, completed, rolledBack, prepared: prepared.length, heuristic: heuristic.size})
  }
  return {heuristic, heuristicOwners, prepared}
}

/**
 * An owner as it stands after a restart: an anonymous connection's (`#<id>`) is gone, and
 * connection ids start over, so it becomes `#`, which no connection is.
 */
function restartedOwner(owner: string): string {
  return owner.startsWith('#') ? '#' : owner
}

/** The transactions `records` leave open, by key, in the order they began. */
function replay(records: JournalRecord[], heuristic: Map<string, number>, heuristicOwners: Map<string, string>, log: Logger): Map<string, Replayed> {
  const txs = new Map<string, Replayed>()
  for (const record of records) {
    const k = String(record.head.k)
    const entry = txs.get(k)
    switch (record.type) {
      case RecordType.MSG: {
        const e = entry ?? begin(record, k, log)
        if (e === undefined) continue
        txs.set(k, e)
        const topic = String(record.head.t)
        const partition = Number(record.head.p)
        const id = partKey(topic, partition)
        let part = e.tx.parts.get(id)
        if (part === undefined) e.tx.parts.set(id, (part = {topic, partition, records: [], bytes: 0, count: 0}))
        part.records.push(record.body)
        part.bytes += record.body.length
        part.count += Number(record.head.n)
        break
      }
      case RecordType.PREPARE:
        if (entry !== undefined) entry.tx.state = 'PREPARED'
        if (entry !== undefined && typeof record.head.o === 'string') entry.tx.owner = restartedOwner(record.head.o)
        break
      case RecordType.COMMIT:
        if (record.head.h !== undefined) setHeuristic(heuristic, heuristicOwners, k, record.head)
        if (entry !== undefined && Array.isArray(record.head.parts)) {
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
        if (record.head.h !== undefined) setHeuristic(heuristic, heuristicOwners, k, record.head)
        txs.delete(k)
        break
      case RecordType.FORGET:
        heuristic.delete(k)
        heuristicOwners.delete(k)
        break
      default:
        log.warn('journal: skipping a record of unknown type', {type: record.type})
    }
  }
  return txs
}

function setHeuristic(heuristic: Map<string, number>, owners: Map<string, string>, k: string, head: Record<string, unknown>): void {
  heuristic.set(k, Number(head.h))
  if (typeof head.o === 'string') owners.set(k, restartedOwner(head.o))
  else owners.delete(k)
}

/** The transaction a MSG record of a key not seen yet begins; undefined when the key is invalid. */
function begin(record: JournalRecord, k: string, log: Logger): Replayed | undefined {
  let key: TxKey
  try {
    key = parseTxKey(k)
  } catch {
    log.warn('journal: skipping a record with an invalid transaction key', {key: k})
    return undefined
  }
  const first = {file: record.file, offset: record.offset}
  const owner = typeof record.head.o === 'string' ? restartedOwner(record.head.o) : undefined
  return {
    tx: {
      key,
      bytes: 0,
      connId: -1,
      beganOn: -1,
      owner,
      principal: undefined,
      state: 'IN_USE',
      parts: new Map(),
      first,
      beganAtMs: Date.now(),
      timer: undefined,
    },
  }
}

/**
 * Finish the append of a journaled commit: only what is not in the log yet is appended. A part
 * whose journaled records do not match the commit record (records lost to journal damage) is
 * reported and left as it is: the rest of the batch cannot be rebuilt.
 */
async function completeCommit(host: TxHost, tx: Tx, commit: CommitPart[]): Promise<void> {
  for (const part of commit) {
    const txPart = tx.parts.get(partKey(part.t, part.p))
    if (txPart === undefined)
      throw new MetaError('STORAGE_CORRUPT', `transaction journal: the commit of "${tx.key.key}" names ${part.t}-${part.p}, which has no messages in it`)
    const records = Buffer.concat(txPart.records, txPart.bytes)
    if (records.length !== part.len || checksum(records) !== part.crc) {
      host.log.error('transaction journal: a journaled commit lost records to damage in the journal; its partition is left as it is', {
        tx: tx.key.key,
        partition: `${part.t}-${part.p}`,
        journaledBytes: records.length,
        committedBytes: part.len,
      })
      continue
    }
    const log = host.logFor(part.t, part.p)
    if (log instanceof MetaError) throw log
    const present = await presentPrefix(log, part.from, records)
    if (present === records.length) continue
    let count = 0
    scanRecords(records, present, () => (count += 1))
    host.log.info('completing a journaled commit', {tx: tx.key.key, partition: `${part.t}-${part.p}`, records: count, alreadyPresent: present})
    await appendBatch(log, records.subarray(present), count)
  }
}

/** Append a batch; resolves with its offset once written (and synced, under group commit). */
export function appendBatch(log: PartitionLog, records: Buffer, count: number): Promise<number> {
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
    const result = await log.read(offset, SEARCH_READ_BYTES)
    if (result.kind === 'below' || result.kind === 'damaged') {
      assert(result.offset > offset, 'a read answers with an offset ahead of the one asked')
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
  assert(whole <= batch.length, 'the prefix present is part of the batch')
  return whole
}
