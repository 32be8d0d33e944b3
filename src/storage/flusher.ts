/**
 * A partition log's flush policy (spec §2.4, DESIGN §6): when to fdatasync, and when an
 * append's callback fires relative to it.
 *
 * - Threshold mode (`unflushThreshold > 0`): callbacks fire as soon as their batch is
 *   written. An fdatasync starts when more than `unflushThreshold` messages are unflushed or
 *   more than `unflushIntervalMs` passed since the last one began (MetaQ: strictly greater),
 *   and from the store's periodic timer.
 * - Group commit (`unflushThreshold <= 0`): callbacks fire only after an fdatasync that
 *   covers their bytes. One fdatasync is in flight at a time; batches written meanwhile wait
 *   for the next one, which covers all of them. A failed fdatasync rolls the log back to the
 *   last synced checkpoint and fails every append not yet acknowledged.
 *
 * The policy may be reloaded while appends are unsynced ({@link Flusher.policyChanged}): an
 * append acknowledged under either policy is never taken back. Turning to threshold mode
 * acknowledges the appends that wait for an fdatasync (they are written), also when that
 * fdatasync fails; turning to group commit keeps what threshold mode acknowledged out of any
 * rollback (a failed fdatasync rolls back only to the end written at the reload).
 *
 * fdatasync is always asynchronous (threadpool). The host (the partition log) knows the
 * files; this class knows only ordering.
 */
import assert from 'node:assert'
import type {MetaError} from '../protocol/errors.js'
import type {AppendCallback, TopicStorageConfig} from './types.js'

/** The written state of a log at one point, enough to roll back to it. */
export interface Checkpoint {
  /** End of the written log at that point. */
  readonly end: number
}

export interface FlushHost<C extends Checkpoint> {
  /** The topic's flush policy now (it may be reloaded). */
  policy(): TopicStorageConfig
  /** The written state now. */
  checkpoint(): C
  /** fdatasync every file written since the last call began; rejects with a MetaError. */
  syncFiles(): Promise<void>
  /** A sync failed in threshold mode: the files it covered still need syncing. */
  syncFailed(err: MetaError): void
  /** Group commit only: truncate to `to`, failing pending (unwritten) appends with `err`. */
  rollBack(to: C, err: MetaError): void
  /** Call each callback with `err`, isolating throws. */
  fire(callbacks: readonly AppendCallback[], err: MetaError | null): void
}

interface FlushWaiter {
  target: number
  resolve: () => void
  reject: (err: MetaError) => void
}

export class Flusher<C extends Checkpoint> {
  /** Messages written but not yet covered by a completed fdatasync. */
  unflushedCount = 0
  /** The state covered by the last successful fdatasync. */
  private synced: C
  private lastSyncMs = Date.now()
  private running = false
  private again = false
  /** Group commit: callbacks of written batches, waiting for the next fdatasync. */
  private waiting: AppendCallback[] = []
  private waiters: FlushWaiter[] = []
  /**
   * Set when the policy turned to group commit with appends threshold mode acknowledged and
   * no fdatasync covered yet: the written state then (a rollback never goes below it) and
   * how many of its messages are unflushed.
   */
  private acknowledged: {checkpoint: C; unflushed: number} | undefined
  /** The policy turned to threshold mode while an fdatasync was in flight: its callbacks are acknowledged whatever its outcome. */
  private coveredAcknowledged = false
  /** The policy as of the last {@link policyChanged}. */
  private policyGroupCommit: boolean

  constructor(private readonly host: FlushHost<C>) {
    this.synced = host.checkpoint()
    this.policyGroupCommit = this.groupCommit
  }

  get groupCommit(): boolean {
    return this.host.policy().unflushThreshold <= 0
  }

  /** A batch of `count` messages was written; settle or queue its callbacks per the policy. */
  written(count: number, callbacks: AppendCallback[]): void {
    this.unflushedCount += count
    if (this.groupCommit) {
      for (const callback of callbacks) this.waiting.push(callback)
      this.requestSync()
      return
    }
    this.host.fire(callbacks, null)
    const {unflushThreshold, unflushIntervalMs} = this.host.policy()
    if (this.unflushedCount > unflushThreshold || Date.now() - this.lastSyncMs > unflushIntervalMs) this.requestSync()
  }

  /** Resolve once everything written so far is fdatasynced; rejects with the sync's error. */
  flush(): Promise<void> {
    const target = this.host.checkpoint().end
    if (target <= this.synced.end) return Promise.resolve()
    return new Promise((resolve, reject) => {
      this.waiters.push({target, resolve, reject})
      this.requestSync()
    })
  }

  /** The topic's policy was reloaded (see the top of the file). */
  policyChanged(): void {
    const wasGroupCommit = this.policyGroupCommit
    const groupCommit = this.groupCommit
    this.policyGroupCommit = groupCommit
    if (wasGroupCommit && !groupCommit) {
      if (this.running) this.coveredAcknowledged = true
      const waiting = this.waiting
      this.waiting = []
      this.host.fire(waiting, null)
    } else if (!wasGroupCommit && groupCommit) {
      const checkpoint = this.host.checkpoint()
      if (checkpoint.end > this.synced.end) this.acknowledged = {checkpoint, unflushed: this.unflushedCount}
    }
  }

  /** Start an fdatasync now, or right after the one in flight. */
  requestSync(): void {
    if (this.running) {
      this.again = true
      return
    }
    this.running = true
    void this.run()
  }

  /** Fail group-commit callbacks still waiting (the log is being rolled back). */
  private failWaiting(err: MetaError): void {
    const waiting = this.waiting
    this.waiting = []
    this.host.fire(waiting, err)
  }

  private async run(): Promise<void> {
    do {
      this.again = false
      await this.syncOnce()
    } while (this.again || this.waiting.length > 0 || this.waiters.some((w) => w.target > this.synced.end))
    this.running = false
  }

  private async syncOnce(): Promise<void> {
    const checkpoint = this.host.checkpoint()
    const covered = this.waiting
    this.waiting = []
    const unflushed = this.unflushedCount
    this.lastSyncMs = Date.now()
    this.coveredAcknowledged = false
    try {
      await this.host.syncFiles()
    } catch (error) {
      this.failed(error as MetaError, covered)
      return
    }
    assert(checkpoint.end >= this.synced.end, 'the synced end of a log never goes backwards')
    this.synced = checkpoint
    this.unflushedCount -= unflushed
    assert(this.unflushedCount >= 0, 'no more messages are flushed than were written')
    const acknowledged = this.acknowledged
    if (acknowledged !== undefined) {
      if (checkpoint.end >= acknowledged.checkpoint.end) this.acknowledged = undefined
      else acknowledged.unflushed -= unflushed
    }
    this.host.fire(covered, null)
    this.settleWaiters(null)
  }

  private failed(err: MetaError, covered: AppendCallback[]): void {
    if (this.groupCommit) {
      // Never below what threshold mode acknowledged before a reload (see the top of the file).
      const acknowledged = this.acknowledged
      this.host.rollBack(acknowledged?.checkpoint ?? this.synced, err)
      this.unflushedCount = acknowledged?.unflushed ?? 0
      this.host.fire(covered, this.coveredAcknowledged ? null : err)
      this.failWaiting(err)
    } else {
      this.host.syncFailed(err)
      // Threshold mode acknowledges what is written: appends that waited for this fdatasync
      // under group commit are written and stay.
      this.host.fire(covered, null)
    }
    this.settleWaiters(err)
  }

  private settleWaiters(err: MetaError | null): void {
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) {
      if (err !== null) waiter.reject(err)
      else if (waiter.target <= this.synced.end) waiter.resolve()
      else this.waiters.push(waiter)
    }
  }
}
