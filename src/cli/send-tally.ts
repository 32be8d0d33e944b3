/**
 * `meta send`'s counts: messages acknowledged, failed, skipped and empty, payload bytes, and
 * per topic and partition the offsets of the first and last acknowledged message.
 */

export interface PartitionSummary {
  /** Byte offset of the first and last acknowledged message (-1: not known, a MetaQ broker's transaction). */
  first: number
  last: number
  count: number
}

export class SendTally {
  /** Messages acknowledged by the broker (committed, with --transaction). */
  sent = 0
  /** Messages the broker rejected or that failed after retries. */
  failed = 0
  /** Records not sent: too large, or an invalid envelope. */
  skipped = 0
  /** Empty records (blank lines), ignored. */
  empty = 0
  /** Payload bytes acknowledged. */
  bytes = 0
  private readonly partitions = new Map<string, Map<number, PartitionSummary>>()

  /** One message acknowledged at `offset`. */
  acknowledged(topic: string, partition: number, offset: number, bytes: number): void {
    this.sent += 1
    this.bytes += bytes
    this.placed(topic, partition, offset, offset, 1)
  }

  /**
   * `count` messages stored in a partition from offset `first` to `last` (a committed
   * transaction's batch, or one message with first = last); -1 when not known.
   */
  placed(topic: string, partition: number, first: number, last: number, count: number): void {
    let partitions = this.partitions.get(topic)
    if (partitions === undefined) this.partitions.set(topic, (partitions = new Map()))
    const stats = partitions.get(partition)
    if (stats === undefined) {
      partitions.set(partition, {first, last, count})
      return
    }
    if (first >= 0 && (stats.first < 0 || first < stats.first)) stats.first = first
    if (last > stats.last) stats.last = last
    stats.count += count
  }

  /** Per partition, in order; keys are "<p>", or "<topic>:<p>" when more than one topic was written. */
  partitionSummary(): Record<string, PartitionSummary> {
    const out: Record<string, PartitionSummary> = {}
    const several = this.partitions.size > 1
    for (const [topic, partitions] of this.partitions) {
      for (const p of [...partitions.keys()].sort((a, b) => a - b)) out[several ? `${topic}:${p}` : String(p)] = {...partitions.get(p)!}
    }
    return out
  }
}
