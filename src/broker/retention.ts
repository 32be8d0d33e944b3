/**
 * Retention scheduling (docs/configuration.md#retention): one Quartz job per distinct `deleteWhen`
 * among [system] and the topic sections; when a job fires, every partition whose topic has that
 * `deleteWhen` gets its topic's `deletePolicy` (sealed segments older than the age go, with its
 * action) and its `maxPartitionBytes` bound. The size bound is also checked whenever a segment
 * rolls, so a busy partition does not wait for the next cron firing to shrink.
 *
 * Off the hot path: jobs and roll checks only queue work; one pass runs at a time, partition
 * after partition, and the storage layer removes files with asynchronous I/O (zips are
 * streamed), so puts and gets keep being served while segments are deleted or archived
 * (bench/retention.ts measures put latency during a pass). Topics with data that no section
 * accepts any more use the [system] values.
 */
import type {Logger} from '../log.js'
import type {MessageStore, PartitionLog, RetentionAction} from '../storage/index.js'
import {resolveTopic, scheduleQuartz, type BrokerConfig, type DeletePolicy, type QuartzJob} from './config/index.js'

/** The retention settings of one topic. */
interface RetentionSettings {
  deleteWhen: string
  deletePolicy: DeletePolicy
  maxPartitionBytes: number
}

/** What one pass removed from one partition (for logs and the admin reply). */
export interface RetentionResult {
  topic: string
  partition: number
  segments: number
  bytes: number
  minOffset: number
}

export class RetentionScheduler {
  private readonly jobs = new Map<string, QuartzJob>()
  /** Partitions whose size bound was crossed at a roll, waiting for the next pass. */
  private readonly oversized = new Set<PartitionLog>()
  private queue: Promise<void> = Promise.resolve()
  private sizeCheckQueued = false
  private stopped = false

  constructor(
    private readonly store: MessageStore,
    private config: BrokerConfig,
    private readonly log: Logger,
  ) {
    store.onRoll((partitionLog) => this.rolled(partitionLog))
  }

  /** The settings a topic's partitions get: its section's, else [system]'s. */
  settingsFor(topic: string): RetentionSettings {
    const resolved = resolveTopic(this.config, topic)
    const source = resolved ?? this.config.system
    return {deleteWhen: source.deleteWhen, deletePolicy: source.deletePolicy, maxPartitionBytes: source.maxPartitionBytes}
  }

  /** (Re)create one job per distinct deleteWhen of `config` (at start and after a reload). */
  schedule(config: BrokerConfig): void {
    this.config = config
    if (this.stopped) return
    const wanted = new Set([config.system.deleteWhen, ...config.topics.map((t) => t.deleteWhen)])
    for (const [expression, job] of this.jobs) {
      if (wanted.has(expression)) continue
      job.stop()
      this.jobs.delete(expression)
    }
    for (const expression of wanted) {
      if (this.jobs.has(expression)) continue
      this.jobs.set(
        expression,
        scheduleQuartz(expression, () => this.enqueue(() => this.runCron(expression))),
      )
    }
    this.log.debug('retention scheduled', {deleteWhen: [...wanted]})
  }

  /**
   * Apply every partition's retention now, whatever its deleteWhen (tests, benchmarks and
   * operators' one-off runs). Resolves with what was removed.
   */
  runNow(): Promise<RetentionResult[]> {
    const results: RetentionResult[] = []
    return this.enqueue(async () => {
      for (const partitionLog of this.store.list()) {
        const result = await this.applyTo(partitionLog, true)
        if (result !== undefined) results.push(result)
      }
    }).then(() => results)
  }

  /** Stop the jobs and wait for the pass in progress (its current segment) to finish. */
  async close(): Promise<void> {
    this.stopped = true
    for (const job of this.jobs.values()) job.stop()
    this.jobs.clear()
    await this.queue
  }

  private enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(() => (this.stopped ? undefined : work()))
    this.queue = next.catch((error: Error) => this.log.error('retention pass failed', {error: error.message}))
    return next
  }

  private async runCron(expression: string): Promise<void> {
    for (const partitionLog of this.store.list()) {
      if (this.stopped) return
      if (this.settingsFor(partitionLog.topic).deleteWhen !== expression) continue
      await this.applyTo(partitionLog, true)
    }
  }

  /** A segment rolled: if the partition is over its size bound, queue a size-only pass. */
  private rolled(partitionLog: PartitionLog): void {
    const bound = this.settingsFor(partitionLog.topic).maxPartitionBytes
    if (!(bound > 0) || partitionLog.sizeBytes <= bound) return
    this.oversized.add(partitionLog)
    if (this.sizeCheckQueued) return
    this.sizeCheckQueued = true
    void this.enqueue(async () => {
      this.sizeCheckQueued = false
      const logs = [...this.oversized]
      this.oversized.clear()
      for (const each of logs) await this.applyTo(each, false)
    })
  }

  /** One partition: by age (when `byAge`) and by size; logs and returns what went. */
  private async applyTo(partitionLog: PartitionLog, byAge: boolean): Promise<RetentionResult | undefined> {
    if (this.stopped) return undefined
    const {deletePolicy, maxPartitionBytes} = this.settingsFor(partitionLog.topic)
    const rule = {maxAgeMs: byAge ? deletePolicy.maxReservedMs : undefined, maxBytes: maxPartitionBytes}
    const action: RetentionAction = deletePolicy.action
    let outcome
    try {
      outcome = await partitionLog.applyRetention(rule, action)
    } catch (error) {
      // A partition closed by shutdown, or an I/O error: the others still get their pass.
      this.log.warn('retention skipped a partition', {topic: partitionLog.topic, partition: partitionLog.partition, error: (error as Error).message})
      return undefined
    }
    if (outcome.removed.length === 0) return undefined
    const bytes = outcome.removed.reduce((sum, r) => sum + r.sizeBytes, 0)
    this.log.info('retention removed segments', {
      topic: partitionLog.topic,
      partition: partitionLog.partition,
      action,
      segments: outcome.removed.length,
      bytes,
      reasons: [...new Set(outcome.removed.map((r) => r.reason))].join(','),
      minOffset: outcome.minOffset,
    })
    return {topic: partitionLog.topic, partition: partitionLog.partition, segments: outcome.removed.length, bytes, minOffset: outcome.minOffset}
  }
}
