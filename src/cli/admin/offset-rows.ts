/**
 * A group's position in each partition: committed offset, log bounds and lag in bytes and in
 * messages. Shared by `meta offset show` and `meta group describe`.
 */
import type {CommittedOffset, GroupOffsetsAdmin} from '../../client/group-admin.js'
import {MetaError, isMetaError} from '../../protocol/errors.js'
import type {TopicSpec} from './parse.js'

/** Concurrent requests per command: the connection pipelines them; this bounds memory. */
export const MAX_IN_FLIGHT = 64

/** One partition as the group sees it. Offsets are byte positions; null = nothing committed. */
export interface PartitionLag {
  topic: string
  /** The broker holding the partition (MetaQ names it `brokerId-partition`). */
  brokerId?: number
  partition: number
  committed: number | null
  logStart: number
  logEnd: number
  /** Bytes from the committed offset (or the log start, when it is below) to the end. */
  lagBytes: number | null
  /** Whole messages in the same range (side index). */
  lagMessages: number | null
  committedAtMs: number | null
}

/** A topic and one of its partitions. */
export interface TopicPartitionRef {
  topic: string
  partition: number
}

/** `map` over `items` with at most `limit` promises pending, keeping the order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i])
    }
  }
  await Promise.all(Array.from({length: Math.min(limit, items.length)}, worker))
  return out
}

/** `key` for maps of topic partitions. */
export function tpKey(topic: string, partition: number): string {
  return `${topic}\0${partition}`
}

/**
 * Expand topic specs into partitions, checking named partitions exist:
 * `invalid partition "7" for topic "orders": expected 0..3`.
 */
export async function expandTopics(admin: GroupOffsetsAdmin, specs: readonly TopicSpec[]): Promise<TopicPartitionRef[]> {
  const out: TopicPartitionRef[] = []
  for (const spec of specs) {
    const all = await admin.partitions(spec.topic)
    if (spec.partitions === undefined) {
      for (const partition of all) out.push({topic: spec.topic, partition})
      continue
    }
    for (const partition of spec.partitions) {
      checkPartition(spec.topic, partition, all)
      out.push({topic: spec.topic, partition})
    }
  }
  return out
}

/** INVALID_ARGUMENT unless `partition` is one of `all` (a topic's partitions). */
export function checkPartition(topic: string, partition: number, all: readonly number[]): void {
  if (all.includes(partition)) return
  const expected = all.length === 0 ? 'none: the topic has no partitions' : all.length === 1 ? `${all[0]}` : `${all[0]}..${all[all.length - 1]}`
  throw MetaError.invalidArgument(`invalid partition "${partition}" for topic "${topic}": expected ${expected}`, {topic, partition})
}

/** Lag of one partition, given its committed offset (if any). */
export async function partitionLag(admin: GroupOffsetsAdmin, ref: TopicPartitionRef, committed?: CommittedOffset): Promise<PartitionLag> {
  const {topic, partition} = ref
  const {start, end} = await admin.bounds(topic, partition)
  const row: PartitionLag = {
    topic,
    brokerId: admin.brokerIdOf(topic, partition),
    partition,
    committed: committed?.offset ?? null,
    logStart: start,
    logEnd: end,
    lagBytes: null,
    lagMessages: null,
    committedAtMs: committed?.committedAtMs ?? null,
  }
  if (committed !== undefined) {
    // Bytes below the log start are gone: a consumer there is moved up to the start.
    const from = Math.min(Math.max(committed.offset, start), end)
    row.lagBytes = end - from
    row.lagMessages = row.lagBytes === 0 ? 0 : await admin.count(topic, partition, from, end)
  }
  return row
}

/** Lag of each partition in `refs` (in order) for the group's `committed` offsets. */
export function lagRows(admin: GroupOffsetsAdmin, refs: readonly TopicPartitionRef[], committed: readonly CommittedOffset[]): Promise<PartitionLag[]> {
  const byKey = new Map(committed.map((c) => [tpKey(c.topic, c.partition), c]))
  return mapLimit(refs, MAX_IN_FLIGHT, (ref) => partitionLag(admin, ref, byKey.get(tpKey(ref.topic, ref.partition))))
}

/**
 * Every partition of `topics`, plus committed partitions the topic no longer has (so an
 * offset is never hidden), sorted by topic then partition.
 */
export async function partitionsOf(admin: GroupOffsetsAdmin, topics: Iterable<string>, committed: readonly CommittedOffset[]): Promise<TopicPartitionRef[]> {
  const refs = new Map<string, TopicPartitionRef>()
  for (const topic of new Set(topics)) {
    for (const partition of await partitionsOrNone(admin, topic)) refs.set(tpKey(topic, partition), {topic, partition})
  }
  for (const c of committed) refs.set(tpKey(c.topic, c.partition), {topic: c.topic, partition: c.partition})
  return [...refs.values()].sort(compareRefs)
}

/** A topic's partitions; none when the broker no longer accepts the topic (its offsets still show). */
async function partitionsOrNone(admin: GroupOffsetsAdmin, topic: string): Promise<number[]> {
  try {
    return await admin.partitions(topic)
  } catch (error) {
    if (isMetaError(error, 'INVALID_ARGUMENT')) return []
    throw error
  }
}

export function compareRefs(a: TopicPartitionRef, b: TopicPartitionRef): number {
  return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition
}
