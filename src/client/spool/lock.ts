/**
 * The lock of a spool: a `lock` file holding the pid of the process that has it open. A lock
 * whose process is gone is taken over.
 */
import {readFileSync, unlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {LOCK_FILE} from './format.js'

/** Take the spool's lock file; a lock left by a dead process is taken over. */
export function lock(dir: string): void {
  const file = join(dir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, {flag: 'wx', mode: 0o600})
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') {
        // A full disk can leave the file created and empty: it must not look like a lock.
        try {
          if (lockOwner(dir) === undefined) unlinkSync(file)
        } catch {}
        throw error
      }
    }
    const owner = lockOwner(dir)
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) {
      throw new MetaError('DATA_DIR_LOCKED', `spool ${dir} is in use by process ${owner}`, {cause: owner})
    }
    try {
      unlinkSync(file)
    } catch {}
  }
  throw new MetaError('DATA_DIR_LOCKED', `spool ${dir}: cannot take its lock file`)
}

export function unlock(dir: string): void {
  try {
    if (lockOwner(dir) === process.pid) unlinkSync(join(dir, LOCK_FILE))
  } catch {}
}

/** The pid in a spool's lock file, if any. */
function lockOwner(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, LOCK_FILE), 'utf8').trim())
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The live process other than this one that holds the spool, if any. */
export function heldBy(dir: string): number | undefined {
  const owner = lockOwner(dir)
  return owner !== undefined && owner !== process.pid && isAlive(owner) ? owner : undefined
}
