/**
 * Where `meta tail` starts, and what it checks before it reads, so a mistake does not look
 * like an empty topic:
 *
 * - Each partition's start for a -o spec: counts and times are answered by the partition's
 *   broker (its side index), byte offsets are checked against the log.
 * - Topics that do not exist on the broker (or in the cluster's ZooKeeper) are named, with
 *   close names as a suggestion. With -e that is an error (exit 1); without, one line on
 *   stderr and tail keeps waiting for the topic to appear.
 * - A byte offset (-o N) inside a message is moved to the next message boundary, and one
 *   past the log end to the end, each said once on stderr (the broker's side index answers
 *   where the boundary is; a MetaQ broker, which cannot say, is read from N as given).
 */
import {AdminClient} from '../client/admin.js'
import type {BrokerConnection} from '../client/connection.js'
import {ClusterTopology} from '../client/cluster-topology.js'
import type {Topology} from '../client/topology.js'
import type {Partition} from '../client/types.js'
import type {StartPosition} from '../client/consumer.js'
import {isMetaError} from '../protocol/errors.js'
import {describeTarget, type ConnectionTarget} from './connection.js'
import type {OffsetSpec} from './offset-spec.js'
import {unknownTopicError} from './suggest.js'

/** Topics of `wanted` that do not exist, each as the NOT_FOUND error to show (with suggestions). */
export async function missingTopics(topology: Topology, target: ConnectionTarget, wanted: readonly string[]): Promise<Array<Error & {hint?: string}>> {
  const known = await existingTopics(topology)
  if (known === undefined) return []
  const where = target.zk !== undefined ? describeTarget(target) : `broker ${target.broker}`
  return wanted.filter((t) => !known.has(t)).map((t) => unknownTopicError(t, [...known], where))
}

/** The topics that exist: registered for consumers in ZooKeeper, or held by the broker; undefined when it cannot be told. */
async function existingTopics(topology: Topology): Promise<Set<string> | undefined> {
  if (topology instanceof ClusterTopology) {
    const session = await topology.session()
    return new Set(await session.children(topology.paths.topicsSub()))
  }
  const conn = await topology.connection(topology.brokerIds()[0] ?? 0)
  try {
    return new Set((await new AdminClient(conn).topics()).map((t) => t.topic))
  } catch (error) {
    // A broker that cannot list its topics: do not guess, read as asked.
    if (isMetaError(error)) return undefined
    throw error
  }
}

/** Where a byte offset really starts reading in a partition, and what to say about it. */
interface AlignedStart {
  offset: number
  /** Set when the offset was moved. */
  note?: string
}

/**
 * `offset` moved to the next message boundary (when it is inside a message) or to the log end
 * (when past it). Partitions are named as the status lines name them (`orders [0]`).
 */
async function alignOffset(conn: BrokerConnection, topic: string, partition: Partition, offset: number, label: string): Promise<AlignedStart> {
  const admin = new AdminClient(conn)
  const {start, end} = await admin.bounds(topic, partition.partition)
  if (offset > end) return {offset: end, note: `offset ${offset} is past the end of topic ${topic} [${label}] at ${end}: starting at the end`}
  if (offset < start) return {offset: start, note: `offset ${offset} is below the start of topic ${topic} [${label}] at ${start}: starting there`}
  if (offset === end || !conn.capabilities.meta) return {offset}
  const boundary = await admin.seek(topic, partition.partition, 'shift', offset, 0)
  if (boundary === offset) return {offset}
  return {offset: boundary, note: `offset ${offset} is inside a message of topic ${topic} [${label}]: starting at the next message, offset ${boundary}`}
}

/**
 * Where a partition starts for a spec. Seeks by count and time ask the partition's broker
 * (its side index); a byte offset is aligned (alignOffset) and a move is reported. `stored`
 * returns undefined: the group's committed offset decides.
 */
export function startResolver(
  spec: OffsetSpec,
  options: {report?: (line: string) => void; cluster?: boolean} = {},
): (topic: string, partition: Partition, conn: BrokerConnection) => Promise<StartPosition | undefined> {
  return async (topic, partition, conn) => {
    const admin = new AdminClient(conn)
    const p = partition.partition
    switch (spec.kind) {
      case 'beginning':
        return 'earliest'
      case 'end':
        return 'latest'
      case 'offset': {
        const label = options.cluster ? `${partition.brokerId}-${p}` : `${p}`
        const aligned = await alignOffset(conn, topic, partition, spec.offset, label)
        if (aligned.note !== undefined) options.report?.(`% ${aligned.note}`)
        return aligned.offset
      }
      case 'stored':
        return undefined
      case 'last':
        return seekOrStart(() => admin.seek(topic, p, 'last', spec.count))
      case 'skip':
        return seekOrStart(async () => admin.seek(topic, p, 'shift', (await admin.bounds(topic, p)).start, spec.count))
      case 'time':
        return seekOrStart(() => admin.seek(topic, p, 'time', spec.ms))
    }
  }
}

/** A seek on a partition that does not exist yet starts at its beginning. */
async function seekOrStart(seek: () => Promise<number>): Promise<StartPosition> {
  try {
    return await seek()
  } catch (error) {
    if (isMetaError(error, 'NOT_FOUND')) return 'earliest'
    throw error
  }
}
