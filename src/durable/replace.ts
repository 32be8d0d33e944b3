/**
 * Replace a small file so that a crash leaves the old content or the new one, never a torn
 * file, and the new content survives a power loss once the call returns:
 *
 *   write `<path>.tmp.<pid>.<8 hex>` (beside it: rename is atomic within a directory) →
 *   fdatasync it → rename it over `<path>` → fsync the directory (makes the rename durable)
 *
 * The temp name carries the writer's pid and random bytes, so two writers (two processes, or
 * two calls in one) never share a temp file, and a temp file a crashed writer left behind is
 * recognised as such and removed ({@link removeStaleTemps}). A failed replace removes its temp
 * file and leaves the old content as it was.
 */
import {randomBytes} from 'node:crypto'
import {closeSync, fdatasyncSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync} from 'node:fs'
import {mkdir, open, rename, unlink} from 'node:fs/promises'
import {basename, dirname, join} from 'node:path'
import {processAlive} from './process.js'

/** Between the target's name and the writer's pid in a temp file's name. */
const TEMP_INFIX = '.tmp.'

/**
 * The steps of a replace that can fail, as a seam for tests (a rename that fails stands for a
 * crash between the write and the rename). Each defaults to node:fs.
 */
export interface ReplaceOps {
  rename(from: string, to: string): Promise<void>
  renameSync(from: string, to: string): void
}

const nodeReplaceOps: ReplaceOps = {rename, renameSync}

interface ReplaceOptions {
  /** Mode of a new file (default 0644; 0600 for secrets). */
  mode?: number
  ops?: ReplaceOps
}

/** Temp files of replaces in flight in this process (their pid is ours, yet they are not stale). */
const inFlight = new Set<string>()

/** A fresh temp file name for writing `path` whole (the one scheme of this module). */
export function tempPathFor(path: string): string {
  return `${path}${TEMP_INFIX}${process.pid}.${randomBytes(4).toString('hex')}`
}

/** The pid that wrote `name` as a temp file of `target` (both base names), or undefined when it is not one. */
function tempWriter(name: string, target: string): number | undefined {
  if (!name.startsWith(`${target}${TEMP_INFIX}`)) return undefined
  const match = /^(\d+)\.[0-9a-f]{8}$/.exec(name.slice(target.length + TEMP_INFIX.length))
  return match === null ? undefined : Number(match[1])
}

/** Replace `path` with `data` (asynchronous file operations); creates the directory when missing. */
export async function replaceFile(path: string, data: string | Uint8Array, options: ReplaceOptions = {}): Promise<void> {
  const dir = dirname(path)
  await mkdir(dir, {recursive: true})
  const temp = tempPathFor(path)
  inFlight.add(temp)
  try {
    const file = await open(temp, 'wx', options.mode ?? 0o644)
    try {
      await file.writeFile(data)
      await file.datasync()
    } finally {
      await file.close()
    }
    await (options.ops ?? nodeReplaceOps).rename(temp, path)
  } catch (error) {
    await unlink(temp).catch(() => {
      // Never created, or renamed already: the original error is the one to report.
    })
    throw error
  } finally {
    inFlight.delete(temp)
  }
  const dirHandle = await open(dir, 'r')
  try {
    await dirHandle.sync()
  } finally {
    await dirHandle.close()
  }
}

/** {@link replaceFile} with synchronous file operations, for callers that cannot wait (a lock's rewrite, `meta user`). */
export function replaceFileSync(path: string, data: string | Uint8Array, options: ReplaceOptions = {}): void {
  const dir = dirname(path)
  mkdirSync(dir, {recursive: true})
  const temp = tempPathFor(path)
  try {
    const fd = openSync(temp, 'wx', options.mode ?? 0o644)
    try {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
      let written = 0
      while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written)
      fdatasyncSync(fd)
    } finally {
      closeSync(fd)
    }
    ;(options.ops ?? nodeReplaceOps).renameSync(temp, path)
  } catch (error) {
    try {
      unlinkSync(temp)
    } catch {
      // Never created, or renamed already: the original error is the one to report.
    }
    throw error
  }
  const dirFd = openSync(dir, 'r')
  try {
    fsyncSync(dirFd)
  } finally {
    closeSync(dirFd)
  }
}

/**
 * Remove the temp files of `path` that their writers left behind: those of a process that is
 * gone, and those with this process's pid that no replace of this process is writing (a
 * container restarted with the same pid). A temp file of a live process is its replace in
 * flight and stays. Returns the names removed. Errors other than a missing directory are thrown.
 */
export function removeStaleTemps(path: string): string[] {
  const dir = dirname(path)
  const target = basename(path)
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  const removed: string[] = []
  for (const name of names) {
    const pid = tempWriter(name, target)
    if (pid === undefined) continue
    const temp = join(dir, name)
    const stale = pid === process.pid ? !inFlight.has(temp) : !processAlive(pid, undefined)
    if (!stale) continue
    try {
      unlinkSync(temp)
      removed.push(name)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  return removed
}
