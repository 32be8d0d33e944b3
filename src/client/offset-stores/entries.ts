/**
 * What the file and MySQL offset stores share: checking what callers pass in (once, at the
 * store's edge) and converting stored values back.
 */
import {MetaError} from '../../protocol/errors.js'
import {offsetKey, type OffsetEntry} from '../offset-store.js'
import type {Partition} from '../types.js'

/** The msgId MetaQ stores when it does not know the last consumed message. */
export const UNKNOWN_MSG_ID = '-1'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const INTEGER_TEXT = /^-?(?:0|[1-9]\d{0,18})$/

/** Whether `text` is a signed 64-bit integer in canonical decimal (a MetaQ message id). */
export function isInt64Text(text: string): boolean {
  if (!INTEGER_TEXT.test(text)) return false
  const value = BigInt(text)
  return value >= INT64_MIN && value <= INT64_MAX
}

/**
 * An offset read back as decimal text (a BIGINT column, or a JSON number too large for a
 * double). Offsets beyond 2^53 are read as Number.MAX_SAFE_INTEGER, as on the wire
 * (docs/architecture.md); undefined when the text is not a non-negative integer.
 */
export function offsetFromText(text: string): number | undefined {
  if (!/^\d{1,20}$/.test(text)) return undefined
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : Number.MAX_SAFE_INTEGER
}

/** A map key for one topic's partition, unambiguous because offsetKey() holds no space. */
export function entryKey(topic: string, partition: Partition): string {
  return `${offsetKey(partition)} ${topic}`
}

function isPartitionNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0
}

/** Whether `value` is a `{brokerId, partition}` of non-negative integers. */
export function isPartition(value: unknown): value is Partition {
  if (typeof value !== 'object' || value === null) return false
  const p = value as Record<string, unknown>
  return isPartitionNumber(p.brokerId) && isPartitionNumber(p.partition)
}

/**
 * Throws INVALID_ARGUMENT unless `group` is a non-empty string of at most `maxLength`
 * characters (MySQL's VARCHAR(255) columns set one).
 */
export function checkGroup(group: unknown, maxLength = Infinity): asserts group is string {
  if (typeof group !== 'string' || group === '') {
    throw MetaError.invalidArgument(`invalid group ${JSON.stringify(group)}: expected a non-empty string`)
  }
  if (group.length > maxLength) {
    throw MetaError.invalidArgument(`invalid group "${group}": expected at most ${maxLength} characters`)
  }
}

/** Throws INVALID_ARGUMENT unless `topic` is a non-empty string of at most `maxLength` characters. */
export function checkTopic(topic: unknown, maxLength = Infinity): asserts topic is string {
  if (typeof topic !== 'string' || topic === '') {
    throw MetaError.invalidArgument(`invalid topic ${JSON.stringify(topic)}: expected a non-empty string`)
  }
  if (topic.length > maxLength) {
    throw MetaError.invalidArgument(`invalid topic "${topic}": expected at most ${maxLength} characters`)
  }
}

/** Throws INVALID_ARGUMENT unless every partition is `{brokerId, partition}` of non-negative integers. */
export function checkPartitions(topic: string, partitions: readonly Partition[]): void {
  for (const p of partitions) {
    if (!isPartition(p)) {
      throw MetaError.invalidArgument(`invalid partition ${JSON.stringify(p)} for topic "${topic}": expected {brokerId, partition} of non-negative integers`)
    }
  }
}

/**
 * Throws INVALID_ARGUMENT naming the first bad field: a topic, a partition, an offset that is
 * not an integer in 0..2^53-1, or a msgId that is not signed 64-bit decimal text.
 */
export function checkEntries(entries: readonly OffsetEntry[], maxNameLength = Infinity): void {
  for (const e of entries) {
    checkTopic(e.topic, maxNameLength)
    checkPartitions(e.topic, [e.partition])
    const where = `topic "${e.topic}" partition ${offsetKey(e.partition)}`
    if (typeof e.offset !== 'number' || !Number.isSafeInteger(e.offset) || e.offset < 0) {
      throw MetaError.invalidArgument(`invalid offset "${String(e.offset)}" for ${where}: expected an integer in 0..${Number.MAX_SAFE_INTEGER}`)
    }
    if (typeof e.msgId !== 'string' || !isInt64Text(e.msgId)) {
      throw MetaError.invalidArgument(`invalid msgId "${String(e.msgId)}" for ${where}: expected a signed 64-bit integer as decimal text`)
    }
  }
}
