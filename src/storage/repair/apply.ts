/**
 * `meta repair`, part 2: apply what check.ts planned for one partition directory, in an order
 * that keeps every step safe to repeat if the repair itself is interrupted:
 *
 *   1. layout: remove leftover `.tmp` files, set aside and rename `.meta` files, cut overlaps
 *      and torn tails (the cut bytes first copied to `<offset>.damaged`), bridge gaps with
 *      sparse zero-filled placeholder segments and acknowledge them as damaged ranges;
 *   2. check again, then acknowledge damaged ranges (`<segment>.damage.json`, their bytes
 *      copied aside), rebuild side indexes and remove orphaned derived files;
 *   3. check again: what is left is reported (and makes the exit status 1).
 *
 * Nothing is deleted except derived data (side indexes, damage maps of missing segments) and
 * unfinished temporary files; segment bytes that leave the log are kept aside first.
 */
import {open, rename, rm, writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {copyAside, damageMapText} from '../damage.js'
import {nodeFileOps} from '../file-ops.js'
import {damagedFileName, damageMapFileName, segmentFileName, TEMP_SUFFIX} from '../layout.js'
import {checkPartition, type PartitionReport, type RepairAction} from './check.js'

/** One action as carried out. */
interface AppliedAction {
  action: RepairAction
  /** What was done, in words. */
  done: string
}

/** Apply the repairs of `report`; resolves with what was done and the directory's new state. */
export async function applyRepairs(report: PartitionReport): Promise<{applied: AppliedAction[]; after: PartitionReport}> {
  const {dir, topic, partition} = report
  const applied: AppliedAction[] = []
  const layoutKinds = new Set(['remove', 'set-aside', 'rename', 'cut', 'bridge'])
  for (const finding of report.findings) {
    const action = finding.action
    if (action === undefined || !layoutKinds.has(action.kind) || (action.kind === 'remove' && finding.kind !== 'leftover-temp')) continue
    applied.push({action, done: await apply(dir, action)})
  }
  const middle = await checkPartition(dir, topic, partition)
  const acknowledged = new Set<number>()
  for (const finding of middle.findings) {
    const action = finding.action
    if (action === undefined || (layoutKinds.has(action.kind) && action.kind !== 'remove')) continue
    if (action.kind === 'acknowledge') {
      if (acknowledged.has(action.start)) continue
      acknowledged.add(action.start)
    }
    applied.push({action, done: await apply(dir, action)})
  }
  return {applied, after: await checkPartition(dir, topic, partition)}
}

async function apply(dir: string, action: RepairAction): Promise<string> {
  const path = join(dir, action.file)
  switch (action.kind) {
    case 'remove':
      await rm(path, {force: true})
      return `removed "${action.file}"`
    case 'set-aside':
    case 'rename':
      await rename(path, join(dir, action.to))
      return `${action.kind === 'rename' ? 'renamed' : 'set aside'} "${action.file}" as "${action.to}"`
    case 'cut':
      return cut(dir, action.file, action.at, action.keepAs)
    case 'bridge':
      return bridge(dir, action.file, action.start, action.bytes)
    case 'acknowledge':
      return acknowledge(dir, action)
    case 'rebuild-index':
      if (action.bytes.length === 0) {
        await rm(path, {force: true})
        return `removed "${action.file}" (nothing to index)`
      }
      await writeAtomically(path, action.bytes)
      return `rebuilt "${action.file}"`
  }
}

/** Keep bytes [at, end) of `file` aside as `keepAs`, then truncate the file at `at`. */
async function cut(dir: string, file: string, at: number, keepAs: string): Promise<string> {
  const handle = await open(join(dir, file), 'r+')
  try {
    const {size} = await handle.stat()
    const kept = await copyAside(nodeFileOps, handle.fd, join(dir, keepAs), at, size)
    await handle.truncate(at)
    await handle.datasync()
    return `cut "${file}" at ${at} (${size - at} bytes${kept ? `, kept in "${keepAs}"` : ', all zeros'})`
  } finally {
    await handle.close()
  }
}

/** A placeholder segment of `bytes` zero bytes (sparse), acknowledged as one damaged range. */
async function bridge(dir: string, file: string, start: number, bytes: number): Promise<string> {
  const handle = await open(join(dir, file), 'wx')
  try {
    await handle.truncate(bytes)
    await handle.datasync()
  } finally {
    await handle.close()
  }
  const map = damageMapFileName(start)
  await writeAtomically(join(dir, map), damageMapText(start, [{from: 0, to: bytes, reason: 'gap'}]))
  return `bridged the gap with "${file}" (${bytes} zero bytes readers step over, recorded in "${map}")`
}

/** Record every damaged range of a segment in its damage map, their bytes copied aside. */
async function acknowledge(dir: string, action: Extract<RepairAction, {kind: 'acknowledge'}>): Promise<string> {
  const {file, start} = action
  const segment = join(dir, segmentFileName(start))
  const handle = await open(segment, 'r')
  const kept: string[] = []
  try {
    for (const range of action.ranges) {
      const name = damagedFileName(start + range.from)
      if (await copyAside(nodeFileOps, handle.fd, join(dir, name), range.from, range.to)) kept.push(name)
    }
  } finally {
    await handle.close()
  }
  await writeAtomically(join(dir, file), damageMapText(start, action.ranges))
  const ranges = action.ranges.length
  return `recorded ${ranges} damaged range${ranges === 1 ? '' : 's'} in "${file}"${kept.length > 0 ? `, bytes kept in ${kept.map((k) => `"${k}"`).join(', ')}` : ''}`
}

async function writeAtomically(path: string, data: string | Buffer): Promise<void> {
  const tmp = `${path}${TEMP_SUFFIX}`
  await writeFile(tmp, data)
  await rename(tmp, path)
}
