/**
 * Small files that must survive a crash whole: the broker's state files under
 * `<dataPath>/__meta_state/` and `meta send --follow`'s registry of file positions.
 */
import {mkdir, open, rename} from 'node:fs/promises'
import {dirname} from 'node:path'

/**
 * Write `text` to `path` so that a crash leaves the old file or the new one, never a torn
 * one: a temp file beside it, fdatasync, rename, then an fsync of the directory (which is
 * created when missing).
 */
export async function writeFileDurably(path: string, text: string): Promise<void> {
  const dir = dirname(path)
  await mkdir(dir, {recursive: true})
  const tmp = `${path}.tmp`
  const file = await open(tmp, 'w', 0o644)
  try {
    await file.writeFile(text)
    await file.datasync()
  } finally {
    await file.close()
  }
  await rename(tmp, path)
  const dirHandle = await open(dir, 'r')
  try {
    await dirHandle.sync()
  } finally {
    await dirHandle.close()
  }
}
