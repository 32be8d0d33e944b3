/**
 * The store's partition logs, remembered per topic for the per-message paths (put, get):
 * MessageStore#get builds a key string per call, a cost on every request. Only logs that
 * exist are remembered. A store keeps a log object for as long as it is open; whoever closes
 * or removes a partition's log (partition admin, quarantine) calls {@link PartitionLogs.forget}.
 */
import type {MessageStore, PartitionLog} from '../storage/index.js'

export class PartitionLogs {
  private byTopic = new Map<string, Array<PartitionLog | undefined>>()
  /**
   * The log found last, and for what: a producer's puts name one partition again and again,
   * with the same topic string (protocol/commands/put.ts reuses it), so a hit is a pointer
   * comparison instead of a Map lookup that compares the string's bytes.
   */
  private lastTopic: string | undefined = undefined
  private lastPartition = -1
  private lastLog: PartitionLog | undefined = undefined

  constructor(private readonly store: MessageStore) {}

  /** The log of (topic, partition), or undefined when the store has none. */
  get(topic: string, partition: number): PartitionLog | undefined {
    if (partition === this.lastPartition && topic === this.lastTopic) {
      // Equal but another string object (another request's): compare pointers from now on.
      this.lastTopic = topic
      return this.lastLog
    }
    let logs = this.byTopic.get(topic)
    let log = logs?.[partition]
    if (log === undefined) {
      log = this.store.get(topic, partition)
      if (log === undefined) return undefined
      if (logs === undefined) this.byTopic.set(topic, (logs = []))
      logs[partition] = log
    }
    this.lastTopic = topic
    this.lastPartition = partition
    this.lastLog = log
    return log
  }

  /** Drop what is remembered of a topic (one partition, or all of them). */
  forget(topic: string, partition?: number): void {
    this.lastTopic = undefined
    this.lastLog = undefined
    if (partition === undefined) this.byTopic.delete(topic)
    else {
      const logs = this.byTopic.get(topic)
      if (logs !== undefined) logs[partition] = undefined
    }
  }
}
