/**
 * {@link GroupOffsetsAdmin} for cluster mode: groups, members, owners and committed offsets
 * read from (and offsets written to) MetaQ's znodes, and log bounds and seeks asked of the
 * broker holding each partition.
 *
 * Partition numbers: a cluster topic's partitions are `brokerId-partition` on several brokers.
 * The admin commands number them 0..n-1 in MetaQ's producer order (broker id, then partition)
 * and show the broker id beside each (brokerIdOf), the same numbering `meta send -p` uses.
 */
import {isMetaError, MetaError} from '../protocol/errors.js'
import type {GroupDescription, GroupSummary, MemberDescription} from '../protocol/commands/group-admin.js'
import type {CommittedOffset} from '../protocol/commands/offsets.js'
import {encodeZkOffset, parseBrokerPartition, parseZkOffset} from '../cluster/paths.js'
import {AdminClient} from './admin.js'
import type {ClusterTopology} from './cluster-topology.js'
import type {GroupOffsetsAdmin, Partition, PartitionBounds} from './types.js'

export class ZkGroupAdmin implements GroupOffsetsAdmin {
  private readonly layouts = new Map<string, Partition[]>()

  constructor(private readonly topology: ClusterTopology) {}

  /** Learn the partition layout of topics up front (brokerIdOf is synchronous). */
  async prepare(topics: readonly string[]): Promise<void> {
    for (const topic of topics) await this.layout(topic)
  }

  brokerIdOf(topic: string, partition: number): number | undefined {
    return this.layouts.get(topic)?.[partition]?.brokerId
  }

  async listGroups(): Promise<GroupSummary[]> {
    const session = await this.topology.session()
    const paths = this.topology.paths
    const groups: GroupSummary[] = []
    for (const group of await session.children(paths.consumers())) {
      const ids = await session.children(paths.consumerIds(group))
      const topics = new Set(await session.children(paths.offsetsOf(group)))
      for (const id of ids) for (const t of ((await session.getString(paths.consumerId(group, id))) ?? '').split(',')) if (t) topics.add(t)
      groups.push({group, generation: 0, members: ids.length, topics: [...topics].sort()})
    }
    return groups
  }

  async describeGroup(group: string): Promise<GroupDescription> {
    const session = await this.topology.session()
    const paths = this.topology.paths
    const ids = await session.children(paths.consumerIds(group))
    const offsets = await this.fetchOffsets(group)
    if (ids.length === 0 && offsets.length === 0 && (await session.exists(paths.group(group))) === undefined) {
      throw new MetaError('NOT_FOUND', `unknown group "${group}": no such group in ZooKeeper at ${this.topology.paths.group(group)}`)
    }
    const members: MemberDescription[] = []
    for (const id of ids) {
      const topics = ((await session.getString(paths.consumerId(group, id))) ?? '').split(',').filter(Boolean)
      const owned: Array<{topic: string; partition: number}> = []
      for (const topic of topics) {
        const layout = await this.layoutOrNone(topic)
        for (const child of await session.children(paths.owners(group, topic))) {
          if ((await session.getString(`${paths.owners(group, topic)}/${child}`)) !== id) continue
          const index = indexOf(layout, child)
          if (index >= 0) owned.push({topic, partition: index})
        }
      }
      members.push({id, topics, host: '-', idleMs: 0, sessionTimeoutMs: 0, owned})
    }
    return {group, generation: 0, members, offsets}
  }

  async fetchOffsets(group: string, topics?: string[]): Promise<CommittedOffset[]> {
    const session = await this.topology.session()
    const paths = this.topology.paths
    const result: CommittedOffset[] = []
    for (const topic of topics ?? (await session.children(paths.offsetsOf(group)))) {
      const layout = await this.layoutOrNone(topic)
      for (const child of await session.children(paths.offsets(group, topic))) {
        const index = indexOf(layout, child)
        const value = await session.getString(`${paths.offsets(group, topic)}/${child}`)
        const parsed = value === undefined ? undefined : parseZkOffset(value)
        if (index < 0 || parsed === undefined) continue // a broker that left the cluster, or foreign data
        result.push({topic, partition: index, offset: parsed.offset, msgId: parsed.msgId})
      }
    }
    return result.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  }

  /**
   * Write offsets into ZooKeeper, where no broker checks them: every partition must exist and
   * every offset lie within its log (INVALID_ARGUMENT otherwise, and nothing is written).
   */
  async commitOffsets(group: string, offsets: CommittedOffset[]): Promise<void> {
    const targets: Array<{o: CommittedOffset; p: Partition}> = []
    for (const o of offsets) {
      const p = await this.partition(o.topic, o.partition)
      const {end} = await this.bounds(o.topic, o.partition)
      if (!Number.isSafeInteger(o.offset) || o.offset < 0 || o.offset > end) {
        throw MetaError.invalidArgument(`invalid offset ${o.offset} for topic "${o.topic}" partition ${o.partition}: expected 0..${end} (the end of its log)`)
      }
      targets.push({o, p})
    }
    const session = await this.topology.session()
    for (const {o, p} of targets) {
      await session.put(this.topology.paths.offset(group, o.topic, p.brokerId, p.partition), encodeZkOffset(o.msgId, o.offset))
    }
  }

  /** Remove `consumers/<group>` (offsets and owners); refused while members are registered. */
  async deleteGroup(group: string): Promise<void> {
    const session = await this.topology.session()
    const paths = this.topology.paths
    if ((await session.exists(paths.group(group))) === undefined) {
      throw new MetaError('NOT_FOUND', `unknown group "${group}": no such group in ZooKeeper at ${paths.group(group)}`)
    }
    const ids = await session.children(paths.consumerIds(group))
    if (ids.length > 0) {
      throw new MetaError('GROUP_ERROR', `group "${group}" has ${ids.length} live member${ids.length === 1 ? '' : 's'}: stop them before deleting it`)
    }
    await session.removeTree(paths.group(group))
  }

  async partitions(topic: string): Promise<number[]> {
    return (await this.layout(topic)).map((_, i) => i)
  }

  async topics(): Promise<string[]> {
    const session = await this.topology.session()
    return session.children(this.topology.paths.topicsSub())
  }

  async bounds(topic: string, partition: number): Promise<PartitionBounds> {
    const {admin, local} = await this.route(topic, partition)
    return admin.bounds(topic, local)
  }

  async seekTime(topic: string, partition: number, ms: number): Promise<number> {
    const {admin, local} = await this.route(topic, partition)
    return orZero(admin.seek(topic, local, 'time', ms))
  }

  async seekLast(topic: string, partition: number, count: number): Promise<number> {
    const {admin, local} = await this.route(topic, partition)
    return orZero(admin.seek(topic, local, 'last', count))
  }

  async shift(topic: string, partition: number, offset: number, delta: number): Promise<number> {
    const {admin, local} = await this.route(topic, partition)
    return orZero(admin.seek(topic, local, 'shift', offset, delta))
  }

  async count(topic: string, partition: number, from: number, to: number): Promise<number> {
    const {admin, local} = await this.route(topic, partition)
    return orZero(admin.count(topic, local, from, to))
  }

  async close(): Promise<void> {
    await this.topology.close()
  }

  private async layout(topic: string): Promise<Partition[]> {
    let layout = this.layouts.get(topic)
    if (layout === undefined) {
      layout = [...(await this.topology.subscribePartitions(topic))].sort((a, b) => a.brokerId - b.brokerId || a.partition - b.partition)
      if (layout.length === 0) {
        throw MetaError.invalidArgument(`unknown topic "${topic}": no broker registered it in ZooKeeper at ${this.topology.paths.topicSub(topic)}`, {topic})
      }
      this.layouts.set(topic, layout)
    }
    return layout
  }

  /** The topic's layout, or none when no broker has it any more (its nodes are then skipped). */
  private async layoutOrNone(topic: string): Promise<Partition[]> {
    try {
      return await this.layout(topic)
    } catch (error) {
      if (isMetaError(error, 'INVALID_ARGUMENT')) return []
      throw error
    }
  }

  private async partition(topic: string, index: number): Promise<Partition> {
    const layout = await this.layout(topic)
    const p = layout[index]
    if (p === undefined) throw MetaError.invalidArgument(`invalid partition "${index}" for topic "${topic}": expected 0..${layout.length - 1}`)
    return p
  }

  private async route(topic: string, index: number): Promise<{admin: AdminClient; local: number}> {
    const p = await this.partition(topic, index)
    return {admin: new AdminClient(await this.topology.connection(p.brokerId)), local: p.partition}
  }
}

function indexOf(layout: readonly Partition[], child: string): number {
  const bp = parseBrokerPartition(child)
  return bp === undefined ? -1 : layout.findIndex((p) => p.brokerId === bp.brokerId && p.partition === bp.partition)
}

async function orZero(answer: Promise<number>): Promise<number> {
  try {
    return await answer
  } catch (error) {
    if ((error as MetaError).code === 'NOT_FOUND') return 0
    throw error
  }
}
