/**
 * Types shared by the producer, consumer and admin client.
 */
import type {MetaError} from '../protocol/errors.js'

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
