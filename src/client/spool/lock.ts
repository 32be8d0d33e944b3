/**
 * The lock of a spool: a `lock` file naming the process that has the spool open, a PID lock
 * file (durable/pid-lock.ts: a lock whose process is gone, a zombie or a reused pid, is taken
 * over; a second open in this process is refused). A lock holding only a pid, as older
 * versions write it, is read too.
 */
import {join} from 'node:path'
import {acquirePidLock, isPidLockHeld, readPidLock, type PidLock} from '../../durable/pid-lock.js'
import {PRIVATE_FILE_MODE} from '../../durable/private-file.js'
import {MetaError} from '../../protocol/errors.js'
import {LOCK_FILE} from './format.js'

/** The locks of the spools this process has open, by directory. */
const held = new Map<string, PidLock>()

/** Take the spool's lock file; a lock left by a process that is gone is taken over. Throws DATA_DIR_LOCKED, or the file system's error. */
export function lock(dir: string): void {
  let result
  try {
    result = acquirePidLock(join(dir, LOCK_FILE), {mode: PRIVATE_FILE_MODE})
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== undefined) throw error
    throw new MetaError('DATA_DIR_LOCKED', `spool ${dir}: ${(error as Error).message}`, {cause: error})
  }
  if (result.holder !== undefined) throw new MetaError('DATA_DIR_LOCKED', `spool ${dir} is in use by process ${result.holder.pid}`, {cause: result.holder.pid})
  held.set(dir, result.lock)
}

export function unlock(dir: string): void {
  const lock = held.get(dir)
  held.delete(dir)
  try {
    lock?.release()
  } catch {
    // A lock that cannot be read back is left for the next open to take over.
  }
}

/** The pid of the live process (this one included) that holds the spool, if any. */
export function heldBy(dir: string): number | undefined {
  let holder
  try {
    holder = readPidLock(join(dir, LOCK_FILE))
  } catch {
    return undefined
  }
  return holder !== undefined && isPidLockHeld(holder) ? holder.pid : undefined
}
