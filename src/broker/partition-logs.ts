/**
 * The store's partition logs, remembered per topic for the per-message paths (put, get):
 * MessageStore#get builds a key string per call, a cost on every request. Only logs that
 * exist are remembered. A store keeps a log object for as long as it is open; whoever closes
 * or removes a partition's log (partition admin, quarantine) calls {@link PartitionLogs.forget}.
 */
import type {MessageStore, PartitionLog} from '../storage/index.js'

export class PartitionLogs {
  private byTopic = new Map<string, Array<PartitionLog | undefined>>()

  constructor(private readonly store: MessageStore) {}

  /** The log of (topic, partition), or undefined when the store has none. */
  get(topic: string, partition: number): PartitionLog | undefined {
    let logs = this.byTopic.get(topic)
    const cached = logs?.[partition]
    if (cached !== undefined) return cached
    const log = this.store.get(topic, partition)
    if (log !== undefined) {
      if (logs === undefined) this.byTopic.set(topic, (logs = []))
      logs[partition] = log
    }
    return log
  }

  /** Drop what is remembered of a topic (one partition, or all of them). */
  forget(topic: string, partition?: number): void {
    if (partition === undefined) this.byTopic.delete(topic)
    else {
      const logs = this.byTopic.get(topic)
      if (logs !== undefined) logs[partition] = undefined
    }
  }
}
