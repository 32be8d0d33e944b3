/**
 * The closed partitions of a broker, kept on disk so they stay closed across a restart
 * (MetaQ keeps them in memory only):
 *
 *   <dataPath>/__meta_state/closed-partitions.json
 *   {"version": 1, "closed": {"orders": [0, 3], "audit": [1]}}
 *
 * Written whole on every change: to a temp file, fdatasynced, renamed over the old one, and
 * the directory entry fdatasynced, so a crash leaves the old or the new file, never a torn
 * one. A missing file means nothing is closed.
 */
import {readFileSync} from 'node:fs'
import {writeFileDurably} from '../durable-file.js'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {CLOSED_PARTITIONS_FILE_NAME, STATE_DIR_NAME} from './layout.js'

const FORMAT_VERSION = 1

/** Topic → closed partition numbers. */
export type ClosedPartitionMap = Map<string, Set<number>>

export function closedPartitionsPath(dataPath: string): string {
  return join(dataPath, STATE_DIR_NAME, CLOSED_PARTITIONS_FILE_NAME)
}

/** Read the file; an empty map when it does not exist. Throws STORAGE_CORRUPT naming the file when it is not ours. */
export function loadClosedPartitions(dataPath: string): ClosedPartitionMap {
  const path = closedPartitionsPath(dataPath)
  const text = readStateFile(path)
  if (text === undefined) return new Map()
  const bad = (why: string) =>
    new MetaError('STORAGE_CORRUPT', `"${path}" is not a closed-partitions file (${why}); fix or remove it (removing reopens every partition)`, {
      details: {path},
    })
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw bad((error as Error).message)
  }
  const closed = (value as {version?: unknown; closed?: unknown})?.closed
  if ((value as {version?: unknown})?.version !== FORMAT_VERSION || typeof closed !== 'object' || closed === null) {
    throw bad(`expected {"version": ${FORMAT_VERSION}, "closed": {…}}`)
  }
  const map: ClosedPartitionMap = new Map()
  for (const [topic, partitions] of Object.entries(closed)) {
    if (!Array.isArray(partitions) || !partitions.every((p) => Number.isSafeInteger(p) && p >= 0)) {
      throw bad(`topic "${topic}": expected an array of partition numbers`)
    }
    if (partitions.length > 0) map.set(topic, new Set(partitions as number[]))
  }
  return map
}

/** Replace the file with `map` (atomically and durably; asynchronous file operations). */
export async function saveClosedPartitions(dataPath: string, map: ClosedPartitionMap): Promise<void> {
  const path = closedPartitionsPath(dataPath)
  const closed: Record<string, number[]> = {}
  for (const topic of [...map.keys()].sort()) {
    const partitions = [...(map.get(topic) ?? [])].sort((a, b) => a - b)
    if (partitions.length > 0) closed[topic] = partitions
  }
  await writeStateFile(path, {version: FORMAT_VERSION, closed})
}

/**
 * Write `value` as JSON to `path` so that a crash leaves the old file or the new one, never a
 * torn one (writeFileDurably). Used for the small state files under `<dataPath>/__meta_state/`.
 * STORAGE_ERROR naming the path on failure.
 */
export async function writeStateFile(path: string, value: unknown): Promise<void> {
  try {
    await writeFileDurably(path, `${JSON.stringify(value, null, 1)}\n`)
  } catch (error) {
    throw new MetaError('STORAGE_ERROR', `cannot write "${path}": ${(error as Error).message}`, {cause: error})
  }
}

/** A state file's text; undefined when it does not exist. STORAGE_ERROR naming the path otherwise. */
export function readStateFile(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new MetaError('STORAGE_ERROR', `cannot read "${path}": ${(error as Error).message}`, {cause: error})
  }
}
