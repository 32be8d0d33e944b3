/**
 * Retention (docs/configuration.md#retention): removing the oldest sealed segments of a partition
 * log by age (MetaQ's `deletePolicy`, judged by the `.meta` file's modification time) or by size
 * (meta's `maxPartitionBytes`), with MetaQ's three actions:
 *
 *   delete        unlink `<start>.meta`
 *   archive       rename it to `<start>.meta.arc`
 *   archive-zip   write `<start>.meta.zip.tmp` (a zip holding `<start>.meta`, streamed, never
 *                 held in memory), fdatasync it, rename it to `<start>.meta.zip`, unlink the segment
 *
 * The side index (`<start>.idx`) goes with its segment in every case.
 *
 * Only a prefix of sealed segments can go, so the log stays contiguous (a gap would make the
 * next open fail with STORAGE_CORRUPT); the active segment always stays. Segments leave the
 * in-memory log first (synchronously: reads below the new start answer "below", i.e. 301),
 * then their files are handled one at a time, oldest first, with asynchronous file
 * operations, so neither a large unlink nor the zipping ever blocks the event loop, and a
 * crash midway leaves a contiguous directory (at worst a segment comes back at restart and
 * is removed by the next run).
 */
import assert from 'node:assert'
import {createReadStream, createWriteStream} from 'node:fs'
import {open, rename, rm, stat, unlink} from 'node:fs/promises'
import {basename} from 'node:path'
import {pipeline} from 'node:stream/promises'
import type {StoreContext} from './context.js'
import {ioError} from './io-error.js'
import {ARCHIVE_SUFFIX, ZIP_ARCHIVE_SUFFIX, ZIP_TEMP_SUFFIX} from './layout.js'
import type {Segment} from './segment.js'

/** One segment, for retention decisions and admin output. */
export interface SegmentInfo {
  /** Offset of its first byte. */
  start: number
  sizeBytes: number
  /** False for the active (last) segment, which is never removed. */
  sealed: boolean
  /** Modification time of the `.meta` file (ms since the Unix epoch). */
  lastModifiedMs: number
  /** Path of the `.meta` file. */
  path: string
}

/**
 * What happens to a removed segment's `.meta` file (MetaQ's policies,
 * docs/configuration.md#retention).
 */
export type RetentionAction = 'delete' | 'archive' | 'archive-zip'

/** Which segments may go: older than `maxAgeMs`, and/or the oldest beyond `maxBytes` in total. */
export interface RetentionRule {
  /** Remove sealed segments last modified more than this long before `nowMs`. */
  maxAgeMs?: number
  /** Remove the oldest sealed segments while the log holds more than this many bytes (0 = no bound). */
  maxBytes?: number
  /** The time the age is measured against (default Date.now()). */
  nowMs?: number
}

/** What one retention pass did to a partition. */
export interface RetentionOutcome {
  /** Segments removed, oldest first. */
  removed: Array<{start: number; sizeBytes: number; file: string; reason: 'age' | 'size'}>
  /** The log start after the pass. */
  minOffset: number
}

export async function describeSegments(segments: readonly Segment[]): Promise<SegmentInfo[]> {
  return Promise.all(
    segments.map(async (segment, i) => {
      const path = segment.file.path
      let lastModifiedMs: number
      try {
        lastModifiedMs = (await stat(path)).mtimeMs
      } catch (error) {
        throw ioError(error, 'stat', path)
      }
      return {start: segment.start, sizeBytes: segment.size, sealed: i < segments.length - 1, lastModifiedMs, path}
    }),
  )
}

/**
 * How many segments from the front `rule` removes, and why each: expired ones (a prefix:
 * the first young segment stops the age rule, as later ones are younger still), then the
 * oldest of the rest while the total exceeds `maxBytes`. Never the last (active) segment.
 */
export function selectExpired(infos: readonly SegmentInfo[], rule: RetentionRule): Array<'age' | 'size'> {
  const now = rule.nowMs ?? Date.now()
  const reasons: Array<'age' | 'size'> = []
  let total = infos.reduce((sum, info) => sum + info.sizeBytes, 0)
  for (const info of infos) {
    if (!info.sealed) break
    const old = rule.maxAgeMs !== undefined && now - info.lastModifiedMs > rule.maxAgeMs
    const big = rule.maxBytes !== undefined && rule.maxBytes > 0 && total > rule.maxBytes
    if (!old && !big) break
    reasons.push(old ? 'age' : 'size')
    total -= info.sizeBytes
  }
  return reasons
}

/**
 * Remove (splice out of `segments`) the sealed segments that end at or before `offset`,
 * oldest first, and retire their descriptors. Synchronous and in memory only: the caller
 * then hands them to {@link disposeSegments}.
 */
/**
 * One retention pass over `segments` (a log's, oldest first): detach the oldest sealed
 * segments `rule` selects and handle their files with `action`. `isOpen` is asked again once
 * the files' times are known (the log may have closed meanwhile).
 */
export async function applyRetentionRule(
  ctx: StoreContext,
  segments: Segment[],
  rule: RetentionRule,
  action: RetentionAction,
  isOpen: () => boolean,
): Promise<RetentionOutcome> {
  const infos = await describeSegments(segments)
  const reasons = selectExpired(infos, rule)
  if (reasons.length === 0 || !isOpen()) return {removed: [], minOffset: segments[0].start}
  assert(reasons.length < infos.length, 'retention never selects the active segment')
  const last = infos[reasons.length - 1]
  const detached = detachSealedPrefix(ctx, segments, last.start + last.sizeBytes)
  const removed = detached.map((segment, i) => ({
    start: segment.start,
    sizeBytes: segment.size,
    file: segment.file.path,
    reason: reasons[i] ?? 'age',
  }))
  await disposeSegments(ctx, detached, action)
  return {removed, minOffset: segments[0].start}
}

export function detachSealedPrefix(ctx: StoreContext, segments: Segment[], offset: number): Segment[] {
  const detached: Segment[] = []
  while (segments.length > 1 && segments[0].end <= offset) {
    const segment = segments.shift() as Segment
    ctx.fds.retire(segment.file)
    ctx.fds.retire(segment.indexFile)
    detached.push(segment)
  }
  return detached
}

/** Apply `action` to detached segments' files, one at a time, oldest first. */
export async function disposeSegments(ctx: StoreContext, segments: readonly Segment[], action: RetentionAction): Promise<void> {
  for (const segment of segments) {
    const path = segment.file.path
    try {
      if (action === 'archive') await rename(path, `${path}${ARCHIVE_SUFFIX}`)
      else if (action === 'archive-zip') await zipSegment(path)
      else await unlink(path)
    } catch (error) {
      // The segment is out of the log either way; a leftover file costs only disk space
      // (and is back in the log after a restart, where the next run removes it again).
      ctx.log.error('cannot remove segment file', {file: path, action, error: ioError(error, action, path).message})
      continue
    }
    await rm(segment.indexFile.path, {force: true}).catch((error: Error) => {
      ctx.log.warn('cannot remove side index of a removed segment', {file: segment.indexFile.path, error: error.message})
    })
    const verb = action === 'delete' ? 'deleted segment' : action === 'archive' ? 'archived segment' : 'zipped segment'
    ctx.log.info(verb, {file: path, bytes: segment.size})
  }
}

/**
 * Write `<path>.zip` holding `<path>` (deflated, streamed through yazl: constant memory
 * whatever the segment's size), make it durable, then remove the segment.
 */
async function zipSegment(path: string): Promise<void> {
  // Loaded on first use: only a broker that zips needs it.
  const {ZipFile} = (await import('yazl')).default
  const info = await stat(path)
  const tmp = `${path}${ZIP_TEMP_SUFFIX}`
  const target = `${path}${ZIP_ARCHIVE_SUFFIX}`
  const zip = new ZipFile()
  zip.addReadStream(createReadStream(path), basename(path), {mtime: info.mtime, mode: 0o100644, size: info.size})
  zip.end()
  await pipeline(zip.outputStream, createWriteStream(tmp))
  const handle = await open(tmp, 'r+')
  try {
    await handle.datasync()
  } finally {
    await handle.close()
  }
  await rename(tmp, target)
  await unlink(path)
}
