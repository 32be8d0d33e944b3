/**
 * Types shared by the producer, consumer and admin client, and the interfaces their
 * implementations live behind (Topology: topology.ts, cluster-topology.ts; GroupOffsetsAdmin:
 * group-admin.ts, zk-group-admin.ts). The interfaces live here, next to the types, so that
 * no two implementation files import each other.
 */
import type {EventEmitter} from 'node:events'
import type {MetaError} from '../protocol/errors.js'
import type {GroupDescription, GroupSummary} from '../protocol/commands/group-admin.js'
import type {CommittedOffset} from '../protocol/commands/offsets.js'
import type {BrokerConnection} from './connection.js'

/** One partition of a topic on one broker: MetaQ writes it `brokerId-partition`. */
export interface Partition {
  brokerId: number
  partition: number
}

export function partitionName(p: Partition): string {
  return `${p.brokerId}-${p.partition}`
}

/** Sort as MetaQ's producer does: numerically by broker id, then partition. */
export function comparePartitions(a: Partition, b: Partition): number {
  return a.brokerId - b.brokerId || a.partition - b.partition
}

/** What a producer sends. */
export interface OutgoingMessage {
  topic: string
  payload: Uint8Array
  /** MetaQ's single string attribute (meta uses it as the message key). */
  attribute?: string
}

/** MetaQ's SendResult. */
export interface SendResult {
  success: boolean
  topic: string
  /** The partition the broker stored the message in (as it answered). */
  partition: number
  brokerId: number
  /** Byte offset of the stored record; -1 on failure. */
  offset: number
  /** The id the broker assigned; undefined on failure. */
  id: bigint | undefined
  /** The broker's error text (MetaQ uses "403" for a closed partition). */
  errorMessage?: string
  error?: MetaError
}

/** One message as a consumer receives it. */
export interface Message {
  topic: string
  partition: number
  brokerId: number
  /** Byte offset of the record in the partition log. */
  offset: number
  /** Offset of the next record: commit this to mark the message consumed. */
  nextOffset: number
  id: bigint
  flag: number
  attribute: string | undefined
  /** The message body (attribute removed). */
  data: Buffer
  /** When the broker stored it (ms since the Unix epoch), from the id; meaningful for meta brokers. */
  timestampMs: number
}

/** Where a topic's partitions live and how to reach their brokers (topology.ts). */
export interface Topology extends EventEmitter {
  /**
   * Partitions producers may write, sorted by (broker id, partition). An empty list means
   * "unknown": send partition -1 and let the broker pick (MetaQ's fixed-serverUrl mode).
   */
  publishPartitions(topic: string): Promise<Partition[]>
  /** Partitions consumers read, sorted as strings (`brokerId-partition`, MetaQ's order). */
  subscribePartitions(topic: string): Promise<Partition[]>
  /** The connection to a broker (opened on first use). */
  connection(brokerId: number): Promise<BrokerConnection>
  /** Every broker known now, by id. */
  brokerIds(): number[]
  /** Forget cached partition lists (after a "wrong partition" answer or a config change). */
  invalidate(topic: string): void
  /**
   * A consumer could not reach `brokerId`'s master: read it from one of its slaves until the
   * master answers again (cluster mode; true when it is now read from a slave).
   */
  readFromSlave?(brokerId: number): boolean
  /** True while `brokerId`'s partitions are read from a slave, whose log may end before its master's (cluster mode). */
  readsFromSlave?(brokerId: number): boolean
  close(): Promise<void>
}

/**
 * A cluster topology's (and a consumer's) 'readFrom' event: a broker id's partitions are read
 * from another broker now (its slave while the master does not answer; the master again).
 */
export interface ReadFromEvent {
  brokerId: number
  /** `meta://host:port` of the broker read now. */
  url: string
  /** True when `url` is a slave's. */
  slave: boolean
}

/** Log start and end of a partition (byte offsets; both 0 for a partition without data). */
export interface PartitionBounds {
  start: number
  end: number
}

/** What the admin commands need from wherever groups, offsets and partitions live. */
export interface GroupOffsetsAdmin {
  /**
   * Id of the broker holding `topic`'s partition (MetaQ names a partition `brokerId-partition`);
   * the single broker's id in standalone mode, undefined when the broker does not say.
   */
  brokerIdOf(topic: string, partition: number): number | undefined
  /** Every group with members or committed offsets. */
  listGroups(): Promise<GroupSummary[]>
  /** Members (with owned partitions) and committed offsets. NOT_FOUND for an unknown group. */
  describeGroup(group: string): Promise<GroupDescription>
  /** Committed offsets of a group, optionally only for some topics (none: an empty array). */
  fetchOffsets(group: string, topics?: string[]): Promise<CommittedOffset[]>
  /** Overwrite committed offsets; durable when it resolves. */
  commitOffsets(group: string, offsets: CommittedOffset[]): Promise<void>
  /** Delete a group and its committed offsets; NOT_FOUND for an unknown group; refused while it has live members. */
  deleteGroup(group: string): Promise<void>
  /** The partition numbers of a topic. INVALID_ARGUMENT naming the topic when it is not accepted. */
  partitions(topic: string): Promise<number[]>
  /**
   * The topics that exist: those the broker holds data for or has a section for (cluster: those
   * registered for consumers in ZooKeeper); undefined when it cannot say.
   */
  topics(): Promise<string[] | undefined>
  bounds(topic: string, partition: number): Promise<PartitionBounds>
  /** Offset of the first message stored at or after `ms` (ms since the epoch); the log end when none. */
  seekTime(topic: string, partition: number, ms: number): Promise<number>
  /** Offset of the message `count` messages before the end; the log start when fewer exist. */
  seekLast(topic: string, partition: number, count: number): Promise<number>
  /**
   * Move `delta` messages (negative: back) from `offset`, clamped to the log. An offset inside
   * a record counts that record as passed, so a delta of 0 rounds up to the next record boundary.
   */
  shift(topic: string, partition: number, offset: number, delta: number): Promise<number>
  /** Whole messages starting in [from, to) (clamped to the log). */
  count(topic: string, partition: number, from: number, to: number): Promise<number>
  close(): Promise<void>
}
