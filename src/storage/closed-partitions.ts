/**
 * The closed partitions of a broker, kept on disk so they stay closed across a restart
 * (MetaQ keeps them in memory only):
 *
 *   <dataPath>/__meta_state/closed-partitions.json
 *   {"version": 1, "closed": {"orders": [0, 3], "audit": [1]}}
 *
 * Written whole on every change: to a temp file, fdatasynced, renamed over the old one, and
 * the directory entry fdatasynced (durable/state-file.ts), so a crash leaves the old or the new
 * file, never a torn one. A missing file means nothing is closed.
 */
import {join} from 'node:path'
import {readStateFile, StateFileError, writeStateFile, type StateFormat} from '../durable/state-file.js'
import {MetaError} from '../protocol/errors.js'
import {CLOSED_PARTITIONS_FILE_NAME, STATE_DIR_NAME} from './layout.js'

/** Topic → closed partition numbers. */
export type ClosedPartitionMap = Map<string, Set<number>>

const CLOSED_PARTITIONS_FORMAT: StateFormat<ClosedPartitionMap> = {
  version: 1,
  shape: '"closed": {…}',
  parse(document) {
    const closed = document.closed
    if (typeof closed !== 'object' || closed === null) throw new Error('expected {"version": 1, "closed": {…}}')
    const map: ClosedPartitionMap = new Map()
    for (const [topic, partitions] of Object.entries(closed)) {
      if (!Array.isArray(partitions) || !partitions.every((p) => Number.isSafeInteger(p) && p >= 0)) {
        throw new Error(`topic "${topic}": expected an array of partition numbers`)
      }
      if (partitions.length > 0) map.set(topic, new Set(partitions as number[]))
    }
    return map
  },
}

export function closedPartitionsPath(dataPath: string): string {
  return join(dataPath, STATE_DIR_NAME, CLOSED_PARTITIONS_FILE_NAME)
}

/** Read the file; an empty map when it does not exist. Throws STORAGE_CORRUPT naming the file when it is not ours. */
export function loadClosedPartitions(dataPath: string): ClosedPartitionMap {
  return readState(closedPartitionsPath(dataPath), CLOSED_PARTITIONS_FORMAT, 'a closed-partitions file', 'removing reopens every partition') ?? new Map()
}

/** Replace the file with `map` (atomically and durably; asynchronous file operations). */
export async function saveClosedPartitions(dataPath: string, map: ClosedPartitionMap): Promise<void> {
  const closed: Record<string, number[]> = {}
  for (const topic of [...map.keys()].sort()) {
    const partitions = [...(map.get(topic) ?? [])].sort((a, b) => a - b)
    if (partitions.length > 0) closed[topic] = partitions
  }
  await writeState(closedPartitionsPath(dataPath), CLOSED_PARTITIONS_FORMAT, {closed})
}

/**
 * A broker state file under `<dataPath>/__meta_state/` (durable/state-file.ts), undefined when
 * it does not exist. STORAGE_ERROR naming the path when it cannot be read; STORAGE_CORRUPT
 * naming it, `what` it should be and what removing it does (`removing`) when it is not one.
 */
export function readState<T>(path: string, format: StateFormat<T>, what: string, removing: string): T | undefined {
  try {
    return readStateFile(path, format)?.value
  } catch (error) {
    if (!(error instanceof StateFileError)) throw error
    if (error.problem === 'unreadable') throw new MetaError('STORAGE_ERROR', `cannot read "${path}": ${error.why}`, {cause: error})
    if (error.problem === 'newer') throw new MetaError('STORAGE_CORRUPT', `"${path}": ${error.why}`, {details: {path}})
    throw new MetaError('STORAGE_CORRUPT', `"${path}" is not ${what} (${error.why}); fix or remove it (${removing})`, {details: {path}})
  }
}

/** Replace a state file with `body` at its format's version (durably). STORAGE_ERROR naming the path on failure. */
export async function writeState(path: string, format: {version: number}, body: Record<string, unknown>): Promise<void> {
  try {
    await writeStateFile(path, format, body)
  } catch (error) {
    throw new MetaError('STORAGE_ERROR', `cannot write "${path}": ${(error as Error).message}`, {cause: error})
  }
}
