/**
 * The file operations the store performs on segment and index files, behind one small
 * interface so tests can inject faults (ENOSPC, EIO) or hold an fdatasync. Directory work
 * (mkdir, readdir, stat, unlink, rename) goes straight to node:fs: it is not on a hot path
 * and needs no fault injection.
 *
 * Writes are synchronous by design: the store issues one write per dirty partition at the
 * end of an event-loop turn, a page-cache write of a batch takes microseconds, and a
 * synchronous write makes "written means visible" trivially true. Reads and fdatasync are
 * asynchronous (libuv threadpool) and never block the event loop.
 */
import fs from 'node:fs'

/**
 * Open modes the store uses: read/write an existing file, create (or truncate), create a
 * file that must not exist yet, read-only.
 */
export type OpenMode = 'r+' | 'w+' | 'wx+' | 'r'

export interface FileOps {
  /** Open a file; throws the node:fs error (with `code`). */
  openSync(path: string, mode: OpenMode): number
  closeSync(fd: number): void
  /** Positional gather write; returns the bytes written (may be short). */
  writevSync(fd: number, buffers: readonly Buffer[], position: number): number
  ftruncateSync(fd: number, length: number): void
  /** Positional read; resolves to the bytes read (0 at end of file). */
  read(fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number>
  fdatasync(fd: number): Promise<void>
}

/** The real file operations (node:fs). */
export const nodeFileOps: FileOps = {
  openSync: (path, mode) => fs.openSync(path, mode),
  closeSync: (fd) => fs.closeSync(fd),
  writevSync: (fd, buffers, position) => fs.writevSync(fd, buffers as Buffer[], position),
  ftruncateSync: (fd, length) => fs.ftruncateSync(fd, length),
  read: (fd, buffer, offset, length, position) =>
    new Promise((resolve, reject) => {
      fs.read(fd, buffer, offset, length, position, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead)))
    }),
  fdatasync: (fd) =>
    new Promise((resolve, reject) => {
      fs.fdatasync(fd, (err) => (err ? reject(err) : resolve()))
    }),
}

/**
 * Write every byte of `pieces` at `position`, looping over short writes. A write that makes
 * no progress throws (EIO-like) rather than spinning.
 */
export function writeFullySync(ops: FileOps, fd: number, pieces: Buffer[], position: number): void {
  let remaining = 0
  for (const piece of pieces) remaining += piece.length
  while (remaining > 0) {
    const written = ops.writevSync(fd, pieces, position)
    if (written <= 0) throw Object.assign(new Error('write made no progress'), {code: 'EIO'})
    remaining -= written
    position += written
    if (remaining > 0) pieces = dropWritten(pieces, written)
  }
}

/** The part of `pieces` after the first `bytes` bytes. */
function dropWritten(pieces: Buffer[], bytes: number): Buffer[] {
  let i = 0
  while (bytes >= pieces[i].length) {
    bytes -= pieces[i].length
    i += 1
  }
  const rest = pieces.slice(i)
  rest[0] = rest[0].subarray(bytes)
  return rest
}
