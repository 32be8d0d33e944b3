/**
 * `meta send --transaction`: everything goes into local transactions, committed at the end of
 * the input (or every `size` messages: the input pauses while a part commits) and rolled back
 * on any failure, skipped record or interrupt. Acknowledgements inside a transaction are held
 * until its commit: only committed messages count as sent, with the offsets the commit reports.
 */
import type {Producer} from '../client/producer.js'
import type {SendResult} from '../client/types.js'
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {ProblemReporter} from './problems.js'
import type {SendTally} from './send-tally.js'

/** What the transactions of `meta send --transaction` did. */
export interface TransactionsSummary {
  /** Transactions committed (their messages are counted in `sent`). */
  committed: number
  /** Transactions rolled back, and the messages acknowledged into them that are now gone. */
  rolledBack: number
  rolledBackMessages: number
}

interface SendTransactionsHost {
  producer: Producer
  tally: SendTally
  problems: ProblemReporter
  /** Commit every this many messages (undefined: once, at the end). */
  size: number | undefined
  /** Whether sending has stopped (no next transaction is begun then). */
  stopped(): boolean
  /** A commit failed: sending must stop with this error. */
  commitFailed(error: MetaError): void
}

export class SendTransactions {
  readonly outcome: TransactionsSummary = {committed: 0, rolledBack: 0, rolledBackMessages: 0}
  /** Messages acknowledged into the open transaction, per topic and partition. */
  private readonly pending = new Map<string, {topic: string; partition: number; count: number; bytes: number}>()
  /** Messages sent into the open part (for `size`). */
  private messages = 0
  private committing: Promise<void> | undefined

  constructor(private readonly host: SendTransactionsHost) {}

  begin(): void {
    this.host.producer.beginTransaction()
  }

  /** A message acknowledged into the open transaction: counted at its commit. */
  acknowledged(result: SendResult, bytes: number): void {
    const key = `${result.topic}\0${result.partition}`
    const pending = this.pending.get(key)
    if (pending === undefined) this.pending.set(key, {topic: result.topic, partition: result.partition, count: 1, bytes})
    else {
      pending.count += 1
      pending.bytes += bytes
    }
  }

  /**
   * One more message sent. When it fills the part, the part commits (and the next begins) and
   * this returns the commit: the input waits for it. Undefined otherwise.
   */
  sent(): Promise<void> | undefined {
    if (this.host.size === undefined || ++this.messages < this.host.size) return undefined
    this.messages = 0
    this.committing = this.commit(true).finally(() => (this.committing = undefined))
    return this.committing
  }

  /** At the end: commit the open transaction if everything went well (`clean()`, asked last), else roll it back. */
  async end(clean: () => boolean): Promise<void> {
    await this.committing
    if (this.host.producer.currentTransaction === undefined) return
    if (clean()) await this.commit(false)
    else await this.rollback()
  }

  /** Commit the open transaction; with `next`, begin another one after it. */
  private async commit(next: boolean): Promise<void> {
    const {producer, tally} = this.host
    try {
      const committed = await producer.commit()
      this.outcome.committed += 1
      for (const p of this.pending.values()) {
        tally.sent += p.count
        tally.bytes += p.bytes
      }
      this.pending.clear()
      // Offsets are known only now (a MetaQ broker does not say them: -1).
      for (const p of committed.partitions) tally.placed(p.topic, p.partition, p.firstOffset ?? -1, p.lastOffset ?? -1, p.messages)
      if (next && !this.host.stopped()) producer.beginTransaction()
    } catch (error) {
      const err = isMetaError(error) ? error : new MetaError('INTERNAL', (error as Error).message)
      this.dropPending()
      this.host.commitFailed(new MetaError(err.code, `transaction not committed: ${err.message}`, {cause: err}))
    }
  }

  private async rollback(): Promise<void> {
    try {
      await this.host.producer.rollback()
    } catch (error) {
      // Unanswered: the broker rolls it back when the connection closes or the transaction times out.
      this.host.problems.report({
        where: 'transaction',
        code: isMetaError(error) ? error.code : 'ERROR',
        message: `rollback failed: ${(error as Error).message}`,
      })
    }
    this.dropPending()
  }

  private dropPending(): void {
    this.outcome.rolledBack += 1
    for (const p of this.pending.values()) this.outcome.rolledBackMessages += p.count
    this.pending.clear()
  }
}
