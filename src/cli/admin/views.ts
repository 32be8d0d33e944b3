/**
 * What `meta offset show`, `meta group describe`, `meta topic list` and `meta topic describe`
 * fetch: typed results (printed as tables, or returned as --json) assembled from the admin
 * interfaces, so the command files stay flags → call → print. Connecting and closing is
 * src/cli/admin/connect.ts's.
 */
import type {AdminClient, PartitionStats} from '../../client/admin.js'
import type {GroupOffsetsAdmin, MemberDescription} from '../../client/group-admin.js'
import {unknownTopicError} from '../suggest.js'
import {MetaError, isMetaError} from '../../protocol/errors.js'
import {expandTopics, lagRows, partitionLag, partitionsOf, tpKey, type PartitionLag} from './offset-rows.js'
import type {TopicSpec} from './parse.js'
import {requireTopics} from './topic-check.js'
import type {ConnectionTarget} from '../connection.js'
import type {OwnedLag, PartitionDetail, TopicSummary} from './render.js'

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
export async function groupOffsets(admin: GroupOffsetsAdmin, group: string, topics: readonly TopicSpec[], target: ConnectionTarget): Promise<GroupOffsets> {
  if (topics.length > 0) {
    const committed = await admin.fetchOffsets(group, [...new Set(topics.map((t) => t.topic))])
    // A topic named that does not exist is a typo, unless the group has offsets there (a topic deleted since).
    const withOffsets = new Set(committed.map((c) => c.topic))
    await requireTopics(
      admin,
      topics.map((t) => t.topic).filter((t) => !withOffsets.has(t)),
      target,
    )
    const refs = await expandTopics(admin, topics)
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
      partitionCount: t.empty && admin.conn.capabilities.meta ? await admin.partitionCount(t.topic) : t.partitions,
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
 * One broker's partitions of a topic; in a cluster (`partOfCluster`) a broker without the
 * topic has none, alone it is NOT_FOUND naming close topic names.
 */
export async function topicPartitions(admin: AdminClient, topic: string, partOfCluster: boolean): Promise<PartitionStats[]> {
  try {
    return (await topicDetail(admin, topic)).partitions
  } catch (error) {
    if (partOfCluster && isMetaError(error, 'NOT_FOUND')) return []
    throw error
  }
}

/**
 * The topic as the command shows it: partitions in the CLI's numbering (in a cluster, 0..n-1
 * by broker id then partition, each still carrying its broker's own number). NOT_FOUND when
 * no broker of the cluster has it.
 */
export async function topicDetailOf(topic: string, partitions: PartitionStats[], target: {zk?: string}): Promise<TopicDetail> {
  const order = (p: PartitionStats) => p.brokerId ?? 0
  if (partitions.length > 0) return {topic, partitions: [...partitions].sort((a, b) => order(a) - order(b) || a.partition - b.partition)}
  // Alone, topicPartitions already threw; in a cluster, no broker had the topic.
  throw unknownTopicError(topic, [], `ZooKeeper ${target.zk}: no broker of the cluster has it`)
}

export type {PartitionDetail} from './render.js'

/** Partition `index` of a topic in detail, with every group's committed offset and lag there. */
export async function partitionDetail(admin: GroupOffsetsAdmin, detail: TopicDetail, index: number): Promise<PartitionDetail> {
  const stats = detail.partitions[index]
  if (stats === undefined) {
    const last = detail.partitions.length - 1
    throw MetaError.invalidArgument(`invalid partition "${index}" for topic "${detail.topic}": expected ${last === 0 ? '0' : `0..${last}`}`)
  }
  const groups: PartitionDetail['groups'] = []
  for (const summary of await admin.listGroups()) {
    if (!summary.topics.includes(detail.topic)) continue
    const committed = (await admin.fetchOffsets(summary.group, [detail.topic])).find((c) => c.partition === index)
    if (committed === undefined) continue
    const lag = await partitionLag(admin, {topic: detail.topic, partition: index}, committed)
    groups.push({group: summary.group, committed: committed.offset, lagMessages: lag.lagMessages, lagBytes: lag.lagBytes, committedAtMs: lag.committedAtMs})
  }
  return {topic: detail.topic, partition: index, stats, groups}
}

/**
 * One topic's partitions from `stats partitions`. A topic configured in server.ini but
 * without data yet lists its partitions as empty; NOT_FOUND for a topic the broker has
 * neither data nor a section for.
 */
async function topicDetail(admin: AdminClient, topic: string): Promise<TopicDetail> {
  const partitions = (await admin.partitions()).filter((p) => p.topic === topic)
  if (partitions.length === 0) {
    const topics = await admin.topics()
    if (!topics.some((t) => t.topic === topic))
      throw unknownTopicError(
        topic,
        topics.map((t) => t.topic),
        `broker ${admin.conn.name}`,
      )
  }
  return {topic, partitions: await withEmptyPartitions(admin, partitions, [topic])}
}

/**
 * `rows` (partitions holding data) plus an empty row for each partition of `topics` that has
 * none yet: configured in server.ini, or added by a reload, and created at its first put. The
 * broker lists only partitions with a log; a meta broker says how many a topic has.
 */
export async function withEmptyPartitions(admin: AdminClient, rows: PartitionStats[], topics: readonly string[]): Promise<PartitionStats[]> {
  const all = [...rows]
  if (admin.conn.capabilities.meta) {
    const counts = await Promise.all(topics.map(async (topic) => [topic, await admin.partitionCount(topic)] as const))
    const have = new Set(rows.map((p) => `${p.topic}\0${p.partition}`))
    for (const [topic, count] of counts) {
      for (let partition = 0; partition < count; partition++) {
        if (!have.has(`${topic}\0${partition}`)) all.push(emptyPartition(topic, partition))
      }
    }
  }
  const broker = (p: PartitionStats) => p.brokerId ?? 0
  return all.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : broker(a) - broker(b) || a.partition - b.partition))
}

function emptyPartition(topic: string, partition: number): PartitionStats {
  return {topic, partition, minOffset: 0, maxOffset: 0, sizeBytes: 0, messageCount: 0, segments: 0, unflushed: 0, lastAppendMs: 0}
}

/** Topic summaries of several brokers merged by topic (partitions, messages and bytes add up). */
export function mergeTopicSummaries(lists: readonly TopicSummary[][]): TopicSummary[] {
  const merged = new Map<string, TopicSummary>()
  for (const t of lists.flat()) {
    const m = merged.get(t.topic)
    if (m === undefined) merged.set(t.topic, {...t})
    else {
      m.partitionCount += t.partitionCount
      m.messageCount += t.messageCount
      m.sizeBytes += t.sizeBytes
    }
  }
  return [...merged.values()].sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : 0))
}
