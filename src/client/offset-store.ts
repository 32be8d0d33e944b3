/**
 * Where a consumer group keeps its committed offsets. One interface, several stores:
 * the broker (standalone default, `BrokerOffsetStore`), ZooKeeper (cluster default), a local
 * JSON file (MetaQ's `.meta_offsets`, also used by broadcast consumers) and MySQL.
 *
 * An offset is the next byte to consume in the partition; `msgId` is the id of the last
 * consumed message as decimal text (MetaQ stores both; "-1" when unknown).
 */
import {MetaError} from '../protocol/errors.js'
import {decodeCommittedOffsets, encodeOffsetCommit, encodeOffsetFetch, type CommittedOffset} from '../protocol/commands/offsets.js'
import {resultText} from './connection-errors.js'
import type {Topology} from './topology.js'
import type {Partition} from './types.js'

export interface OffsetEntry {
  topic: string
  partition: Partition
  offset: number
  msgId: string
}

export interface OffsetStore {
  /** Committed offsets of these partitions; a partition without one is absent from the map. */
  load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>>
  /** Make these offsets durable. */
  commit(group: string, entries: readonly OffsetEntry[]): Promise<void>
  close(): Promise<void>
}

/** Key used in load() results: `brokerId-partition`. */
export function offsetKey(partition: Partition): string {
  return `${partition.brokerId}-${partition.partition}`
}

/** Offsets kept by the meta broker that holds each partition (standalone mode). */
export class BrokerOffsetStore implements OffsetStore {
  constructor(private readonly topology: Topology) {}

  async load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>> {
    const result = new Map<string, {offset: number; msgId: string}>()
    for (const brokerId of new Set(partitions.map((p) => p.brokerId))) {
      const conn = await this.topology.connection(brokerId)
      if (!conn.capabilities.groups) {
        throw new MetaError(
          'SERVICE_UNAVAILABLE',
          `broker ${conn.name} cannot keep group offsets (not a meta broker); use a file, MySQL or ZooKeeper offset store`,
        )
      }
      const frame = await conn.requestAsync((out, opaque) => encodeOffsetFetch(out, group, {topics: [topic]}, opaque))
      const offsets = decodeCommittedOffsets(resultText(frame), 'offset-fetch reply')
      for (const o of offsets) {
        const p = partitions.find((q) => q.brokerId === brokerId && q.partition === o.partition)
        if (p !== undefined) result.set(offsetKey(p), {offset: o.offset, msgId: o.msgId})
      }
    }
    return result
  }

  async commit(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    const byBroker = new Map<number, CommittedOffset[]>()
    for (const e of entries) {
      const list = byBroker.get(e.partition.brokerId) ?? []
      list.push({topic: e.topic, partition: e.partition.partition, offset: e.offset, msgId: e.msgId})
      byBroker.set(e.partition.brokerId, list)
    }
    await Promise.all(
      [...byBroker].map(async ([brokerId, offsets]) => {
        const conn = await this.topology.connection(brokerId)
        resultText(await conn.requestAsync((out, opaque) => encodeOffsetCommit(out, group, offsets, opaque)))
      }),
    )
  }

  async close(): Promise<void> {
    // The topology belongs to the consumer.
  }
}
