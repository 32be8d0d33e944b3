/**
 * Replace a file so that readers see either the old or the new content, never a mix, and the
 * new content survives a crash once the call resolves:
 *
 *   write `<path>.tmp.<pid>.<random>` (same directory, so rename is atomic) → fsync it →
 *   rename it over `<path>` → fsync the directory (makes the rename itself durable)
 *
 * The temp name carries the pid and random bytes so processes (even on hosts sharing the
 * directory over NFS) never write the same temp file. On failure the temp file is removed.
 */
import {randomBytes} from 'node:crypto'
import {mkdir, open, rename, unlink} from 'node:fs/promises'
import {dirname} from 'node:path'

/** The infix of temp file names, after the target path (MetaQ's LocalOffsetStorage uses `.tmp.` too). */
const TEMP_INFIX = '.tmp.'

export async function replaceFileAtomically(path: string, data: string): Promise<void> {
  const dir = dirname(path)
  await mkdir(dir, {recursive: true})
  const temp = `${path}${TEMP_INFIX}${process.pid}.${randomBytes(4).toString('hex')}`
  try {
    const file = await open(temp, 'wx', 0o644)
    try {
      await file.writeFile(data, 'utf8')
      await file.sync()
    } finally {
      await file.close()
    }
    await rename(temp, path)
  } catch (error) {
    await unlink(temp).catch(() => {
      // The temp file may never have been created, or is already renamed; the original
      // error is the one worth reporting.
    })
    throw error
  }
  const dirHandle = await open(dir, 'r')
  try {
    await dirHandle.sync()
  } finally {
    await dirHandle.close()
  }
}
