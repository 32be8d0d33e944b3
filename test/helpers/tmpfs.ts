/**
 * A small real file system that fills up: a tmpfs of a few MiB mounted on a fresh directory
 * (needs root, as the test machines run), unmounted after the test. A machine where it cannot
 * be mounted fails the test, naming why: a full disk is what the tests using it exist for.
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmdirSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import type {Cleanup} from './index.js'

export function mountTmpfs(t: Cleanup, bytes: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'meta-tmpfs-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir], {stdio: 'pipe'})
  } catch (error) {
    const stderr = (error as {stderr?: Buffer}).stderr?.toString().trim()
    rmdirSync(dir)
    throw new Error(`cannot mount a ${bytes}-byte tmpfs on ${dir} (these tests need root to make a disk that fills up): ${stderr || (error as Error).message}`)
  }
  // Unmounted (lazily if a process still holds a file in it), then its mount point removed.
  t.after(() => {
    try {
      execFileSync('umount', [dir], {stdio: 'pipe'})
    } catch {
      try {
        execFileSync('umount', ['-l', dir], {stdio: 'pipe'})
      } catch (error) {
        process.stderr.write(`mountTmpfs: could not unmount ${dir}: ${(error as Error).message}\n`)
        return
      }
    }
    try {
      rmdirSync(dir)
    } catch {}
  })
  return dir
}

/** Fill a file system with a file of zeroes until it is full; returns the file (delete it to give the space back). */
export function fillUp(dir: string, name = 'filler'): string {
  const path = join(dir, name)
  const chunk = Buffer.alloc(64 * 1024)
  writeFileSync(path, '')
  for (;;) {
    try {
      writeFileSync(path, chunk, {flag: 'a'})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error
      break
    }
  }
  // The last chunk may have been taken in part: fill the rest byte-sized.
  for (let size = 4096; size >= 1; size = Math.floor(size / 2)) {
    try {
      for (;;) writeFileSync(path, Buffer.alloc(size), {flag: 'a'})
    } catch {}
  }
  return path
}
