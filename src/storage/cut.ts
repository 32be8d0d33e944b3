/**
 * Cutting a replica's divergent tail (MessageStore.cutTail): the log bytes [offset, end) of a
 * CLOSED partition directory are copied into `<20-digit offset>.meta.cut-<epoch ms>` next to
 * the segments (layout.ts; fdatasynced first), then the segment holding `offset` is truncated
 * there and every later segment is removed with its side index and damage map. The side index
 * of the segment that becomes the last is removed too: recovery rebuilds it when the store
 * opens the directory again.
 *
 * A crash part-way leaves either the whole old log (the cut file is a copy, the next check
 * cuts again) or the cut log with its cut file: never a log with a gap.
 */
import assert from 'node:assert'
import {closeSync, fdatasyncSync, ftruncateSync, openSync, readSync, rmSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import {cutFileName, damageMapFileName, indexFileName, segmentFileName} from './layout.js'
import {ioError} from './io-error.js'

/** Bytes copied per step into the cut file. */
const COPY_CHUNK_BYTES = 1024 * 1024

/** A segment of the directory: its start and size. */
interface CutSegment {
  readonly start: number
  readonly sizeBytes: number
}

/**
 * Cut `dir`'s log (its segments, oldest first, contiguous, ending at `end`) at `offset`, a
 * record boundary in [first start, end). Returns the path of the file keeping the cut bytes.
 */
export function cutSegmentFiles(dir: string, segments: readonly CutSegment[], offset: number, end: number, atMs: number): string {
  assert(segments.length > 0 && offset >= segments[0].start && offset < end, 'a cut lies inside the log, before its end')
  for (let i = 1; i < segments.length; i++) {
    assert(segments[i].start === segments[i - 1].start + segments[i - 1].sizeBytes, 'the segments cut are contiguous')
  }
  const lastSegment = segments[segments.length - 1]
  assert(lastSegment.start + lastSegment.sizeBytes === end, 'the segments end at the log end')
  const keep = join(dir, cutFileName(offset, atMs))
  const out = open(keep, 'wx')
  try {
    const buf = Buffer.allocUnsafe(COPY_CHUNK_BYTES)
    for (const segment of segments) {
      const segEnd = segment.start + segment.sizeBytes
      if (segEnd <= offset) continue
      const path = join(dir, segmentFileName(segment.start))
      const fd = open(path, 'r')
      try {
        for (let pos = Math.max(segment.start, offset); pos < segEnd;) {
          const n = readSync(fd, buf, 0, Math.min(buf.length, segEnd - pos), pos - segment.start)
          if (n === 0) throw new Error(`${path} ends before its size ${segment.sizeBytes}`)
          writeAll(out, buf.subarray(0, n))
          pos += n
        }
      } finally {
        closeSync(fd)
      }
    }
    fdatasyncSync(out)
  } catch (error) {
    throw ioError(error, 'write', keep)
  } finally {
    closeSync(out)
  }
  const first = segments[0].start
  let last: CutSegment | undefined
  for (const segment of segments) {
    if (segment.start < offset || segment.start === first) last = segment
  }
  for (const segment of segments) {
    if (segment === last || segment.start < (last?.start ?? first)) continue
    for (const name of [segmentFileName(segment.start), indexFileName(segment.start), damageMapFileName(segment.start)]) remove(join(dir, name))
  }
  if (last !== undefined) {
    const path = join(dir, segmentFileName(last.start))
    assert(offset - last.start <= last.sizeBytes, 'a cut never goes past the end of a segment')
    const fd = open(path, 'r+')
    try {
      ftruncateSync(fd, offset - last.start)
      fdatasyncSync(fd)
    } catch (error) {
      throw ioError(error, 'truncate', path)
    } finally {
      closeSync(fd)
    }
    remove(join(dir, indexFileName(last.start)))
  }
  syncDir(dir)
  return keep
}

function open(path: string, flags: string): number {
  try {
    return openSync(path, flags)
  } catch (error) {
    throw ioError(error, 'open', path)
  }
}

function writeAll(fd: number, bytes: Buffer): void {
  for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done, bytes.length - done)
}

function remove(path: string): void {
  try {
    rmSync(path, {force: true})
  } catch (error) {
    throw ioError(error, 'remove', path)
  }
}

function syncDir(dir: string): void {
  const fd = open(dir, 'r')
  try {
    fdatasyncSync(fd)
  } catch (error) {
    throw ioError(error, 'sync', dir)
  } finally {
    closeSync(fd)
  }
}
