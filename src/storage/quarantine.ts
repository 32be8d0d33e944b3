/**
 * A quarantined partition (message-store.ts): one whose directory cannot be opened as one log,
 * not served and not written until `meta repair` checks it offline; what it is and the error a
 * put into it gets.
 */
import {MetaError, type ErrorCode} from '../protocol/errors.js'

/** A partition the store does not serve, and why. */
export interface QuarantinedPartition {
  topic: string
  partition: number
  /** Its directory (or directories, when found under two data paths). */
  dirs: string[]
  /** The data path to give `meta repair -d`. */
  dataPath: string
  /** Why, naming the files (the STORAGE_CORRUPT or STORAGE_ERROR message). */
  reason: string
  code: ErrorCode
}

/** The `meta repair` command line that checks a quarantined partition. */
export function repairCommand(q: QuarantinedPartition): string {
  return `meta repair -d ${q.dataPath} -t ${q.topic} -p ${q.partition}`
}

/** The error for a put (or partition creation) into a quarantined partition. */
export function quarantineError(q: QuarantinedPartition): MetaError {
  return new MetaError(
    'PARTITION_QUARANTINED',
    `partition "${q.topic}-${q.partition}" is quarantined: ${q.reason}; ` + `check and repair it offline with "${repairCommand(q)}", then restart the broker`,
    {details: {topic: q.topic, partition: q.partition, dirs: q.dirs}},
  )
}
