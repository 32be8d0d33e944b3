/**
 * Offsets in ZooKeeper, MetaQ's default in cluster mode (docs/protocol.md#committed-offsets): the
 * persistent node `consumers/<group>/offsets/<topic>/<brokerId>-<partition>` holds
 * `"<msgId>-<offset>"` (parsed at the last '-'; a bare `<offset>` written by pre-1.4 clients is
 * read too).
 */
import {encodeZkOffset, parseZkOffset, type ZkPaths} from '../../cluster/paths.js'
import type {ZkSession} from '../../cluster/zk-session.js'
import {offsetKey, type OffsetEntry, type OffsetStore} from '../offset-store.js'
import type {Partition} from '../types.js'
import {checkEntries, checkGroup} from './entries.js'

export class ZkOffsetStore implements OffsetStore {
  constructor(
    private readonly session: () => Promise<ZkSession>,
    private readonly paths: ZkPaths,
  ) {}

  async load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>> {
    const session = await this.session()
    const result = new Map<string, {offset: number; msgId: string}>()
    for (const p of partitions) {
      const value = await session.getString(this.paths.offset(group, topic, p.brokerId, p.partition))
      const parsed = value === undefined ? undefined : parseZkOffset(value)
      if (parsed !== undefined) result.set(offsetKey(p), parsed)
    }
    return result
  }

  async commit(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    checkGroup(group)
    checkEntries(entries)
    const session = await this.session()
    for (const e of entries) {
      await session.put(this.paths.offset(group, e.topic, e.partition.brokerId, e.partition.partition), encodeZkOffset(e.msgId, e.offset))
    }
  }

  async close(): Promise<void> {
    // The session belongs to the topology.
  }
}
