/**
 * File operations on segment and index files through the descriptor budget: pin the file
 * for exactly one operation, turn node:fs errors into DISK_FULL / STORAGE_ERROR naming the
 * file (io-error.ts), and release it. Every module that touches a file goes through these.
 */
import assert from 'node:assert'
import {rmSync} from 'node:fs'
import type {StoreContext} from './context.js'
import type {CachedFile, FdCache} from './fd-cache.js'
import {writeFullySync} from './file-ops.js'
import {ioError} from './io-error.js'
import {readBuffers} from './read-buffers.js'
import {readFully} from './scan.js'
import type {Segment} from './segment.js'

/** Run a synchronous `fn` with `file` pinned open; errors name `action` and the file. */
export function withFileSync<T>(ctx: StoreContext, file: CachedFile, action: string, fn: (fd: number) => T): T {
  try {
    const fd = ctx.fds.acquire(file)
    try {
      return fn(fd)
    } finally {
      ctx.fds.release(file)
    }
  } catch (error) {
    throw ioError(error, action, file.path)
  }
}

/** Run `fn` with `file` pinned open (waiting for a descriptor); errors name `action` and the file. */
export async function withFile<T>(ctx: StoreContext, file: CachedFile, action: string, fn: (fd: number) => Promise<T>): Promise<T> {
  try {
    const fd = await ctx.fds.acquireAsync(file)
    try {
      return await fn(fd)
    } finally {
      ctx.fds.release(file)
    }
  } catch (error) {
    throw ioError(error, action, file.path)
  }
}

/**
 * Create the empty file of a new segment and leave it open in the cache. `exclusive` fails
 * when the file exists (a new partition must not clobber data it did not load).
 */
export function createSegmentFile(fds: FdCache, segment: Segment, exclusive = false): void {
  try {
    fds.create(segment.file, exclusive)
  } catch (error) {
    throw ioError(error, 'create', segment.file.path)
  }
  fds.release(segment.file)
}

/** Write `pieces` into `segment` at log offset `from` (one gather write, looping if short). */
export function writeSegment(ctx: StoreContext, segment: Segment, pieces: Buffer[], from: number): void {
  assert(from >= segment.start, 'a write lands inside its segment')
  withFileSync(ctx, segment.file, 'write', (fd) => writeFullySync(ctx.ops, fd, pieces, from - segment.start))
}

/**
 * Log bytes [from, to) of `segment`; shorter when the file ends first. Large reads use a
 * buffer of the read-buffer pool (read-buffers.ts), which the sender may give back.
 */
export function readSegment(ctx: StoreContext, segment: Segment, from: number, to: number): Promise<Buffer> {
  assert(from >= segment.start && to > from, 'a read asks for bytes of its segment')
  return withFile(ctx, segment.file, 'read', async (fd) => {
    const data = readBuffers.take(to - from)
    const got = await readFully(ctx.ops, fd, data, 0, data.length, from - segment.start)
    return got === data.length ? data : data.subarray(0, got)
  })
}

/** fdatasync `file`. */
export function syncFile(ctx: StoreContext, file: CachedFile): Promise<void> {
  return withFile(ctx, file, 'fdatasync', (fd) => ctx.ops.fdatasync(fd))
}

/** Cut `segment` to `size` bytes; a failure is logged (later writes overwrite from `size`). */
export function truncateSegment(ctx: StoreContext, segment: Segment, size: number): void {
  assert(size >= 0 && Number.isSafeInteger(size), 'a segment is cut to a byte count')
  segment.size = size
  try {
    withFileSync(ctx, segment.file, 'truncate', (fd) => ctx.ops.ftruncateSync(fd, size))
  } catch (error) {
    // Later appends overwrite from `size`, and recovery drops any torn bytes after them.
    ctx.log.error('cannot truncate segment', {file: segment.file.path, size, error: String(error)})
  }
}

/** Close and delete a segment's files (its data and its side index). */
export function removeSegmentFiles(ctx: StoreContext, segment: Segment): void {
  for (const file of [segment.file, segment.indexFile]) {
    ctx.fds.retire(file)
    try {
      rmSync(file.path, {force: true})
    } catch (error) {
      ctx.log.error('cannot remove file', {file: file.path, error: String(error)})
    }
  }
}
