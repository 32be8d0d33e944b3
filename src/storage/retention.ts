/**
 * Retention primitives (spec §2.7): what the broker's scheduler needs to apply MetaQ's
 * delete policies, and only that. Only a prefix of sealed segments can go, so the log stays
 * contiguous (a gap would make the next open fail with STORAGE_CORRUPT); the active segment
 * always stays. A removed segment's side index is deleted with it; with `archive` the
 * `.meta` file is renamed to `.meta.arc` (MetaQ's archive policy), which open ignores.
 */
import {renameSync, rmSync} from 'node:fs'
import {stat} from 'node:fs/promises'
import type {StoreContext} from './context.js'
import {ioError} from './io-error.js'
import {ARCHIVE_SUFFIX} from './layout.js'
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

/** What to do with a segment's `.meta` file when it is removed. */
export type RemoveMode = 'delete' | 'archive'

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
 * Remove (splice out of `segments` and from disk) the sealed segments that end at or before
 * `offset`, oldest first. Returns how many were removed.
 */
export function removeSealedPrefix(ctx: StoreContext, segments: Segment[], offset: number, mode: RemoveMode): number {
  let removed = 0
  while (segments.length > 1 && segments[0].end <= offset) {
    const segment = segments.shift() as Segment
    removeFiles(ctx, segment, mode)
    removed += 1
  }
  return removed
}

function removeFiles(ctx: StoreContext, segment: Segment, mode: RemoveMode): void {
  ctx.fds.retire(segment.file)
  ctx.fds.retire(segment.indexFile)
  const path = segment.file.path
  try {
    if (mode === 'archive') renameSync(path, `${path}${ARCHIVE_SUFFIX}`)
    else rmSync(path, {force: true})
    rmSync(segment.indexFile.path, {force: true})
  } catch (error) {
    // The segment is out of the log either way; a leftover file is only disk space.
    ctx.log.error('cannot remove segment file', {file: path, error: ioError(error, mode, path).message})
  }
  ctx.log.info(mode === 'archive' ? 'archived segment' : 'deleted segment', {file: path, bytes: segment.size})
}
