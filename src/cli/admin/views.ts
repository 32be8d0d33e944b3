/**
 * What `meta offset show`, `meta group describe`, `meta topic list` and `meta topic describe`
 * fetch: typed results (printed as tables, or returned as --json) assembled from the admin
 * interfaces, so the command files stay flags → call → print.
 */
import {connectAdmin, type AdminClient, type PartitionStats} from '../../client/admin.js'
import {ClusterTopology} from '../../client/cluster-topology.js'
import type {Logger} from '../../log.js'
import type {GroupOffsetsAdmin, MemberDescription} from '../../client/group-admin.js'
import {MetaError} from '../../protocol/errors.js'
import {expandTopics, lagRows, partitionsOf, tpKey, type PartitionLag} from './offset-rows.js'
import type {TopicSpec} from './parse.js'
import type {OwnedLag, TopicSummary} from './render.js'

/** `meta offset show --json`. */
export interface GroupOffsets {
  group: string
  partitions: PartitionLag[]
}

/**
 * A group's offsets with lag. With topics: every partition named (uncommitted ones too).
 * Without: every partition of the topics the group committed to or subscribes to; NOT_FOUND
 * for a group the broker does not know.
 */
export async function groupOffsets(admin: GroupOffsetsAdmin, group: string, topics: readonly TopicSpec[]): Promise<GroupOffsets> {
  if (topics.length > 0) {
    const refs = await expandTopics(admin, topics)
    const committed = await admin.fetchOffsets(group, [...new Set(topics.map((t) => t.topic))])
    return {group, partitions: await lagRows(admin, refs, committed)}
  }
  const description = await admin.describeGroup(group)
  const subscribed = description.members.flatMap((m) => m.topics)
  const refs = await partitionsOf(admin, [...description.offsets.map((o) => o.topic), ...subscribed], description.offsets)
  return {group, partitions: await lagRows(admin, refs, description.offsets)}
}

/** `meta group describe --json`. */
export interface GroupDetail {
  group: string
  generation: number
  members: MemberDescription[]
  partitions: OwnedLag[]
}

/** Members, and every partition of the topics the group committed to or subscribes to, with its owner. */
export async function groupDetail(admin: GroupOffsetsAdmin, group: string): Promise<GroupDetail> {
  const d = await admin.describeGroup(group)
  const owners = new Map<string, string>()
  for (const m of d.members) for (const o of m.owned) owners.set(tpKey(o.topic, o.partition), m.id)
  const refs = await partitionsOf(admin, [...d.offsets.map((o) => o.topic), ...d.members.flatMap((m) => m.topics)], d.offsets)
  const rows = await lagRows(admin, refs, d.offsets)
  return {
    group: d.group,
    generation: d.generation,
    members: d.members,
    partitions: rows.map((r) => ({...r, owner: owners.get(tpKey(r.topic, r.partition)) ?? null})),
  }
}

/** Every topic the broker has (data, or a configured section), with totals. */
export async function topicSummaries(admin: AdminClient): Promise<TopicSummary[]> {
  const [topics, partitions] = await Promise.all([admin.topics(), admin.partitions()])
  const size = new Map<string, number>()
  for (const p of partitions) size.set(p.topic, (size.get(p.topic) ?? 0) + (p.sizeBytes ?? p.maxOffset - p.minOffset))
  const summaries = await Promise.all(
    topics.map(async (t) => ({
      topic: t.topic,
      // MetaQ's `stats topics` says 0 partitions for a configured topic without data; a meta broker knows how many it will have.
      partitions: t.empty && admin.conn.capabilities.meta ? await admin.partitionCount(t.topic) : t.partitions,
      messageCount: t.messageCount,
      sizeBytes: size.get(t.topic) ?? t.messageBytes,
    })),
  )
  return summaries.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))
}

/** `meta topic describe --json`. */
export interface TopicDetail {
  topic: string
  partitions: PartitionStats[]
}

/**
 * One topic's partitions from `stats partitions`. A topic configured in server.ini but
 * without data yet lists its partitions as empty; NOT_FOUND for a topic the broker has
 * neither data nor a section for.
 */
export async function topicDetail(admin: AdminClient, topic: string): Promise<TopicDetail> {
  const partitions = (await admin.partitions()).filter((p) => p.topic === topic).sort((a, b) => a.partition - b.partition)
  if (partitions.length > 0) return {topic, partitions}
  const topics = await admin.topics()
  if (!topics.some((t) => t.topic === topic)) {
    const known = topics.map((t) => t.topic).sort()
    const hint = known.length === 0 ? 'the broker has no topics' : `known topics: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''}`
    throw new MetaError('NOT_FOUND', `unknown topic "${topic}" on broker ${admin.conn.name}: ${hint}`, {details: {topic}})
  }
  const count = await admin.partitionCount(topic)
  const empty = Array.from({length: count}, (_, partition): PartitionStats => ({
    topic,
    partition,
    minOffset: 0,
    maxOffset: 0,
    sizeBytes: 0,
    messageCount: 0,
    segments: 0,
    unflushed: 0,
    lastAppendMs: 0,
  }))
  return {topic, partitions: empty}
}

/**
 * Run `view` against every broker a command reaches: the one at -b, or every broker
 * registered in ZooKeeper with --zk (each result tagged with its broker id).
 */
export async function acrossBrokers<T>(
  target: {broker?: string; zk?: string; zkRoot?: string},
  options: {timeoutMs?: number; logger?: Logger},
  view: (admin: AdminClient, brokerId: number | undefined) => Promise<T>,
): Promise<T[]> {
  if (target.zk === undefined) {
    const admin = await connectAdmin({broker: target.broker, ...options})
    try {
      return [await view(admin, undefined)]
    } finally {
      admin.close()
    }
  }
  const topology = new ClusterTopology({zk: target.zk, zkRoot: target.zkRoot, requestTimeoutMs: options.timeoutMs, logger: options.logger})
  try {
    const results: T[] = []
    for (const [brokerId, url] of await topology.brokerUrls()) {
      const admin = await connectAdmin({broker: url, ...options})
      try {
        results.push(await view(admin, brokerId))
      } finally {
        admin.close()
      }
    }
    return results
  } finally {
    await topology.close()
  }
}

/** Topic summaries of several brokers merged by topic (partitions, messages and bytes add up). */
export function mergeTopicSummaries(lists: readonly TopicSummary[][]): TopicSummary[] {
  const merged = new Map<string, TopicSummary>()
  for (const t of lists.flat()) {
    const m = merged.get(t.topic)
    if (m === undefined) merged.set(t.topic, {...t})
    else {
      m.partitions += t.partitions
      m.messageCount += t.messageCount
      m.sizeBytes += t.sizeBytes
    }
  }
  return [...merged.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))
}
