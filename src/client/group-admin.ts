/**
 * Group and offset administration behind one interface, so `meta offset …` and `meta group …`
 * do not care where a group's offsets and a topic's partitions live. Standalone mode
 * ({@link StandaloneGroupAdmin}): one broker keeps both (the group-*, offset-* and seek
 * extensions). Cluster mode will add an implementation that reads offsets from ZooKeeper
 * znodes and partitions from every broker.
 *
 *   const admin = await connectGroupAdmin({broker: '127.0.0.1:8123'})
 *   const offsets = await admin.fetchOffsets('billing')
 *   await admin.close()
 *
 * Offsets are byte positions; counts are messages (the side index translates between them).
 */
import type {Logger} from '../log.js'
import {MetaError, isMetaError} from '../protocol/errors.js'
import type {GroupDescription, GroupSummary} from '../protocol/commands/group-admin.js'
import type {CommittedOffset} from '../protocol/commands/offsets.js'
import {connectAdmin, type AdminClient} from './admin.js'
import {ClusterTopology} from './cluster-topology.js'
import {ZkGroupAdmin} from './zk-group-admin.js'
import type {GroupOffsetsAdmin, PartitionBounds} from './types.js'

export type {GroupDescription, GroupSummary, MemberDescription} from '../protocol/commands/group-admin.js'
export type {CommittedOffset} from '../protocol/commands/offsets.js'

export type {GroupOffsetsAdmin, PartitionBounds} from './types.js'

export interface GroupAdminOptions {
  /** host:port (default 127.0.0.1:8123) … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode: groups and offsets in MetaQ's znodes). */
  zk?: string
  zkRoot?: string
  timeoutMs?: number
  logger?: Logger
}

/** {@link GroupOffsetsAdmin} over one meta broker that coordinates groups itself. */
export class StandaloneGroupAdmin implements GroupOffsetsAdmin {
  private readonly partitionCounts = new Map<string, number>()

  constructor(readonly client: AdminClient) {}

  brokerIdOf(): number | undefined {
    return this.client.conn.capabilities.brokerId
  }

  listGroups(): Promise<GroupSummary[]> {
    return this.client.groups()
  }

  describeGroup(group: string): Promise<GroupDescription> {
    return this.client.describeGroup(group)
  }

  fetchOffsets(group: string, topics?: string[]): Promise<CommittedOffset[]> {
    return this.client.fetchOffsets(group, topics)
  }

  commitOffsets(group: string, offsets: CommittedOffset[]): Promise<void> {
    return this.client.commitOffsets(group, offsets)
  }

  deleteGroup(group: string): Promise<void> {
    return this.client.deleteGroup(group)
  }

  async partitions(topic: string): Promise<number[]> {
    let n = this.partitionCounts.get(topic)
    if (n === undefined) {
      try {
        n = await this.client.partitionCount(topic)
      } catch (error) {
        if (isMetaError(error, 'TOPIC_NOT_ACCEPTED')) {
          throw MetaError.invalidArgument(`unknown topic "${topic}": broker ${this.client.conn.name} does not accept it`, {topic})
        }
        throw error
      }
      this.partitionCounts.set(topic, n)
    }
    return Array.from({length: n}, (_, i) => i)
  }

  async topics(): Promise<string[] | undefined> {
    try {
      return (await this.client.topics()).map((t) => t.topic)
    } catch (error) {
      // A broker that cannot list its topics: do not guess.
      if (isMetaError(error)) return undefined
      throw error
    }
  }

  bounds(topic: string, partition: number): Promise<PartitionBounds> {
    return this.client.bounds(topic, partition)
  }

  seekTime(topic: string, partition: number, ms: number): Promise<number> {
    return orZero(this.client.seek(topic, partition, 'time', ms))
  }

  seekLast(topic: string, partition: number, count: number): Promise<number> {
    return orZero(this.client.seek(topic, partition, 'last', count))
  }

  shift(topic: string, partition: number, offset: number, delta: number): Promise<number> {
    return orZero(this.client.seek(topic, partition, 'shift', offset, delta))
  }

  count(topic: string, partition: number, from: number, to: number): Promise<number> {
    return orZero(this.client.count(topic, partition, from, to))
  }

  async close(): Promise<void> {
    this.client.close()
  }
}

/**
 * A partition the topic has but that holds no data yet has no log on the broker (404): its
 * start and end are 0, so every seek and count is 0 too.
 */
async function orZero(answer: Promise<number>): Promise<number> {
  try {
    return await answer
  } catch (error) {
    if (isMetaError(error, 'NOT_FOUND')) return 0
    throw error
  }
}

/**
 * Connect to a standalone broker (CONNECTION_FAILED when it cannot be reached), or with `zk`
 * to a cluster's ZooKeeper (CLUSTER_ERROR when it cannot be reached).
 */
export async function connectGroupAdmin(options: GroupAdminOptions = {}): Promise<GroupOffsetsAdmin> {
  if (options.zk !== undefined) {
    const topology = new ClusterTopology({zk: options.zk, zkRoot: options.zkRoot, requestTimeoutMs: options.timeoutMs, logger: options.logger})
    try {
      await topology.session()
    } catch (error) {
      await topology.close()
      throw error
    }
    return new ZkGroupAdmin(topology)
  }
  return new StandaloneGroupAdmin(await connectAdmin(options))
}
