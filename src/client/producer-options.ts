/**
 * What a producer is configured with (createProducer) and what a send may say, with the
 * defaults of each limit.
 */
import type {Logger} from '../log.js'
import type {PartitionSelector, SelectorName} from './partition-selector.js'
import type {Topology} from './topology.js'
import type {SendResult} from './types.js'

/** Default of ProducerOptions.maxInFlight, in messages. */
export const DEFAULT_MAX_IN_FLIGHT = 4096
/** Default of ProducerOptions.maxQueuedBytes: payload bytes on their way to brokers. */
export const DEFAULT_MAX_QUEUED_BYTES = 64 * 1024 * 1024
/** Default of ProducerOptions.sendTimeoutMs (MetaQ's). */
export const DEFAULT_SEND_TIMEOUT_MS = 3000
/** Default of ProducerOptions.retries. */
export const DEFAULT_RETRIES = 2
/** The message limit when neither the options nor the broker say one: MetaQ's maxTransferSize (1 MiB) minus a record header. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 - 20

export interface ProducerOptions {
  /** `host:port` of a standalone broker (default 127.0.0.1:8123) … */
  broker?: string
  /** … or a ZooKeeper connect string (cluster mode) … */
  zk?: string
  /** Root znode with `zk` (default /meta). */
  zkRoot?: string
  /** … or a topology of your own; the producer closes it on close() only if it created it. */
  topology?: Topology
  /** How partitions are chosen when a send does not name one (default round-robin). */
  selector?: SelectorName | PartitionSelector
  /** Most messages on their way to brokers at once; more wait in order (default 4096). */
  maxInFlight?: number
  /**
   * Most payload bytes on their way to brokers at once (default 64 MiB); more wait in order.
   * A single message larger than this still goes (alone).
   */
  maxQueuedBytes?: number
  /** Per-send deadline in ms (MetaQ's default 3000). */
  sendTimeoutMs?: number
  /** Retries of a send that failed in a retriable way (default 2). */
  retries?: number
  /** Largest payload (attribute included) accepted, checked before sending (default: what the broker says, else 1 MiB − 20). */
  maxMessageBytes?: number
  /**
   * Standalone: how often the topics' partition counts are asked again, in ms (default 30 s;
   * 0 = never), so partitions added by a broker reload are used. Cluster mode follows
   * ZooKeeper instead.
   */
  topologyRefreshMs?: number
  /**
   * Group puts into meta's put-batch frames where the broker serves them (default true);
   * false sends every message as MetaQ's plain 7-token put with checksum, as MetaQ's Java
   * client does (what `meta bench --plain-put` measures).
   */
  batchPut?: boolean
  logger?: Logger
}

export interface SendOptions {
  attribute?: string
  /**
   * Send to this partition instead of using the selector. Partitions are numbered in MetaQ's
   * order over the whole topic (by broker id, then partition): in standalone mode the number
   * is the broker's partition; in a cluster, 0..n-1 across all brokers.
   */
  partition?: number
  /** MetaQ flag bits (bit 0 is managed for the attribute). */
  flag?: number
}

export type SendCallback = (result: SendResult) => void

export interface BeginTransactionOptions {
  /** Seconds after which the broker rolls the transaction back (capped by its maxTxTimeoutInSeconds); 0 = none. */
  timeoutSeconds?: number
}
