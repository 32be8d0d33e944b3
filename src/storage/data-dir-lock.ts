/**
 * The data directory lock: one process at a time owns a data directory.
 *
 *   <dataPath>/.meta.lock    {"pid": 1234, "host": "box-1", "address": "127.0.0.1:8123",
 *                             "startedAt": "2026-12-01T10:00:00.000Z", "command": "meta serve",
 *                             "procStart": 123456}
 *
 * A broker takes it before it opens a partition and removes it on a clean stop; the offline
 * commands (`meta partitions move|delete`, `meta repair`) take it while they change files and
 * refuse while someone else holds it. It is a PID lock file (durable/pid-lock.ts): created
 * whole or not at all, taken over when its holder is gone (a dead, zombie or reused pid; the
 * caller logs it), refused while a live process on this host or any process on another host
 * holds it, and, for this process's own pid, held only while this process holds it (a
 * container restarted with the same pid takes its previous run's lock over).
 */
import {join} from 'node:path'
import {hostname} from 'node:os'
import {acquirePidLock, isPidLockHeld, PidLockBusyError, readPidLock, type PidLock, type PidLockInfo} from '../durable/pid-lock.js'
import {MetaError} from '../protocol/errors.js'
import {LOCK_FILE_NAME} from './layout.js'

/** What the lock file says about its holder. */
export type DataDirLockInfo = PidLockInfo

/** A lock this process holds. */
export interface DataDirLock extends PidLock {
  readonly dir: string
}

/** The lock file of a directory. */
export function dataDirLockPath(dir: string): string {
  return join(dir, LOCK_FILE_NAME)
}

/** The lock file's contents, or undefined when there is none (or it is unreadable garbage). */
export function readDataDirLock(dir: string): DataDirLockInfo | undefined {
  try {
    return readPidLock(dataDirLockPath(dir))
  } catch (error) {
    throw new MetaError('STORAGE_ERROR', `cannot read lock file "${dataDirLockPath(dir)}": ${(error as Error).message}`, {cause: error})
  }
}

/**
 * Whether the holder described by `info` is still running: true for a live pid on this host
 * and for any lock written on another host (which cannot be checked from here).
 */
export function isLockHeld(info: DataDirLockInfo): boolean {
  return isPidLockHeld(info)
}

/** One line naming the holder: `pid 1234 on box-1 (127.0.0.1:8123), since 2026-…`. */
export function describeLockHolder(info: DataDirLockInfo): string {
  const what = info.command === undefined ? '' : `${info.command}, `
  const where = info.address === undefined ? '' : ` listening on ${info.address}`
  const host = info.host === hostname() ? '' : ` on host ${info.host}`
  return `${what}pid ${info.pid}${host}${where}, since ${info.startedAt}`
}

/**
 * Take the lock of `dir` (which must exist) for this process. Throws DATA_DIR_LOCKED naming
 * the holder when a live process (or another host) holds it; takes over a stale lock and
 * reports it in `tookOverFrom`.
 */
export function acquireDataDirLock(dir: string, options: {command: string; address?: string}): DataDirLock {
  const path = dataDirLockPath(dir)
  let result
  try {
    result = acquirePidLock(path, options)
  } catch (error) {
    if (error instanceof PidLockBusyError) throw new MetaError('DATA_DIR_LOCKED', error.message)
    throw new MetaError('STORAGE_ERROR', `cannot take the lock "${path}": ${(error as Error).message}`, {cause: error})
  }
  if (result.holder !== undefined) throw lockedError(dir, result.holder)
  return Object.assign(result.lock, {dir})
}

/** DATA_DIR_LOCKED for `dir` held by `holder`. */
export function lockedError(dir: string, holder: DataDirLockInfo): MetaError {
  return new MetaError(
    'DATA_DIR_LOCKED',
    `data directory "${dir}" is in use by ${describeLockHolder(holder)}; stop that process first or use another data directory`,
    {details: {dir, holder}},
  )
}

/**
 * For the offline commands: throw DATA_DIR_LOCKED if a live process holds `dir`. A stale lock
 * is not an obstacle (the command takes it over when it takes the lock itself).
 */
export function checkDataDirFree(dir: string): void {
  const holder = readDataDirLock(dir)
  if (holder !== undefined && isLockHeld(holder)) throw lockedError(dir, holder)
}
