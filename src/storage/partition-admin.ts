/**
 * Offline partition administration on a data directory (MetaQ's move-partitions and
 * delete-partitions, docs/cli.md#meta-partitions-move--delete), for `meta partitions move|delete`:
 *
 *   move    rename `<topic>-<i>` to `<topic>-<i+k>` for i in start..end, in an order that
 *           never renames onto a directory still to be moved (descending for k > 0,
 *           ascending for k < 0); refused when a target outside the range exists or i+k < 0
 *   delete  remove `<topic>-<i>` for i in start..end (every segment, index and archive)
 *
 * Planning only reads; applying takes the data directory lock (data-dir-lock.ts) so no
 * broker starts on the directory meanwhile, and refuses while one holds it. Closed-partition
 * marks (closed-partitions.ts) follow the partitions: moved with them, dropped on delete.
 * Committed offsets of standalone groups are not rewritten (see docs/cli.md).
 */
import {readdir, rename, rm, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {validateTopicName} from '../protocol/names.js'
import {loadClosedPartitions, saveClosedPartitions} from './closed-partitions.js'
import {acquireDataDirLock, checkDataDirFree} from './data-dir-lock.js'
import {isArchivedSegmentName, parseSegmentFileName, partitionDirName} from './layout.js'

/** One directory the plan touches. */
export interface PartitionStep {
  action: 'rename' | 'delete'
  partition: number
  /** Directory name, e.g. `orders-2`. */
  from: string
  /** New directory name (rename only). */
  to?: string
  /** `.meta` segment files in it. */
  segments: number
  /** Archived segments (`.meta.arc`, `.meta.zip`) in it. */
  archives: number
  /** Bytes of every file in it. */
  sizeBytes: number
}

export interface PartitionPlan {
  dataDir: string
  topic: string
  action: 'move' | 'delete'
  start: number
  end: number
  /** `move` only: how far partitions move. */
  offset?: number
  /** In the order they are applied. */
  steps: PartitionStep[]
  /** Partitions in start..end without a directory (nothing to do for them). */
  missing: number[]
}

/** Most partitions one command touches (a typo such as `--end 10000000` is refused, not planned). */
const MAX_RANGE = 65_536

interface RangeOptions {
  dataDir: string
  topic: string
  start: number
  end: number
}

/** The plan of `move`. Throws INVALID_ARGUMENT for a bad range or a clash, DATA_DIR_LOCKED while a broker holds the directory. */
export async function planMovePartitions(options: RangeOptions & {offset: number}): Promise<PartitionPlan> {
  const {dataDir, topic, start, end, offset} = options
  checkRange(options)
  if (!Number.isSafeInteger(offset) || offset === 0) throw MetaError.invalidArgument(`invalid offset "${offset}": expected a non-zero integer`)
  if (start + offset < 0) {
    throw MetaError.invalidArgument(`invalid offset "${offset}": partition ${start} would become ${start + offset}; expected start + offset >= 0`)
  }
  const existing = await partitionsOf(dataDir, topic)
  const moved = range(start, end).filter((p) => existing.has(p))
  for (const p of moved) {
    const target = p + offset
    if (existing.has(target) && !(target >= start && target <= end)) {
      throw MetaError.invalidArgument(
        `cannot move "${partitionDirName(topic, p)}" to "${partitionDirName(topic, target)}": that directory exists in "${dataDir}"`,
      )
    }
  }
  const order = offset > 0 ? [...moved].reverse() : moved
  const steps = await Promise.all(
    order.map(async (p) => ({
      action: 'rename' as const,
      partition: p,
      from: partitionDirName(topic, p),
      to: partitionDirName(topic, p + offset),
      ...(await contents(join(dataDir, partitionDirName(topic, p)))),
    })),
  )
  return {dataDir, topic, action: 'move', start, end, offset, steps, missing: range(start, end).filter((p) => !existing.has(p))}
}

/** The plan of `delete`. Throws INVALID_ARGUMENT for a bad range, DATA_DIR_LOCKED while a broker holds the directory. */
export async function planDeletePartitions(options: RangeOptions): Promise<PartitionPlan> {
  const {dataDir, topic, start, end} = options
  checkRange(options)
  const existing = await partitionsOf(dataDir, topic)
  const deleted = range(start, end).filter((p) => existing.has(p))
  const steps = await Promise.all(
    deleted.map(async (p) => ({
      action: 'delete' as const,
      partition: p,
      from: partitionDirName(topic, p),
      ...(await contents(join(dataDir, partitionDirName(topic, p)))),
    })),
  )
  return {dataDir, topic, action: 'delete', start, end, steps, missing: range(start, end).filter((p) => !existing.has(p))}
}

/**
 * Carry out a plan under the data directory lock, step by step in order, then move or drop
 * the closed-partition marks. Throws DATA_DIR_LOCKED when a broker (or another command)
 * holds the directory; a failed step stops there and names it (earlier steps stay done).
 */
export async function applyPartitionPlan(plan: PartitionPlan, command: string): Promise<void> {
  const lock = acquireDataDirLock(plan.dataDir, {command})
  try {
    for (const step of plan.steps) {
      const from = join(plan.dataDir, step.from)
      try {
        if (step.action === 'rename') await rename(from, join(plan.dataDir, step.to!))
        else await rm(from, {recursive: true, force: true})
      } catch (error) {
        const what = step.action === 'rename' ? `rename "${step.from}" to "${step.to}"` : `delete "${step.from}"`
        throw new MetaError('STORAGE_ERROR', `cannot ${what} in "${plan.dataDir}": ${(error as Error).message}`, {cause: error})
      }
    }
    await updateClosedMarks(plan)
  } finally {
    lock.release()
  }
}

async function updateClosedMarks(plan: PartitionPlan): Promise<void> {
  const closed = loadClosedPartitions(plan.dataDir)
  const marks = closed.get(plan.topic)
  if (marks === undefined) return
  const touched = new Set(plan.steps.map((s) => s.partition))
  const next = new Set<number>()
  for (const p of marks) {
    if (!touched.has(p)) next.add(p)
    else if (plan.action === 'move') next.add(p + plan.offset!)
  }
  if (next.size === marks.size && [...next].every((p) => marks.has(p))) return
  closed.set(plan.topic, next)
  await saveClosedPartitions(plan.dataDir, closed)
}

function checkRange({dataDir, topic, start, end}: RangeOptions): void {
  try {
    validateTopicName(topic)
  } catch (error) {
    throw MetaError.invalidArgument((error as Error).message)
  }
  if (!Number.isSafeInteger(start) || start < 0) throw MetaError.invalidArgument(`invalid start "${start}": expected a partition number >= 0`)
  if (!Number.isSafeInteger(end) || end < start) throw MetaError.invalidArgument(`invalid end "${end}": expected a partition number >= start (${start})`)
  if (end - start >= MAX_RANGE) throw MetaError.invalidArgument(`invalid range ${start}..${end}: expected at most ${MAX_RANGE} partitions at once`)
  checkDataDirFree(dataDir)
}

/** Partition numbers of `topic` that have a directory under `dataDir`. */
async function partitionsOf(dataDir: string, topic: string): Promise<Set<number>> {
  let names: string[]
  try {
    const info = await stat(dataDir)
    if (!info.isDirectory()) throw Object.assign(new Error('not a directory'), {code: 'ENOTDIR'})
    names = await readdir(dataDir)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such directory' : code === 'ENOTDIR' ? 'not a directory' : (error as Error).message
    throw MetaError.invalidArgument(`invalid data directory "${dataDir}": ${why}`)
  }
  const prefix = `${topic}-`
  const found = new Set<number>()
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const rest = name.slice(prefix.length)
    if (/^\d+$/.test(rest) && Number.isSafeInteger(Number(rest))) found.add(Number(rest))
  }
  return found
}

async function contents(dir: string): Promise<{segments: number; archives: number; sizeBytes: number}> {
  let segments = 0
  let archives = 0
  let sizeBytes = 0
  for (const entry of await readdir(dir, {withFileTypes: true})) {
    if (!entry.isFile()) continue
    if (parseSegmentFileName(entry.name) !== undefined) segments += 1
    else if (isArchivedSegmentName(entry.name)) archives += 1
    sizeBytes += (await stat(join(dir, entry.name))).size
  }
  return {segments, archives, sizeBytes}
}

function range(start: number, end: number): number[] {
  return Array.from({length: end - start + 1}, (_, i) => start + i)
}
