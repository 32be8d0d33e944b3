/**
 * The data directory lock: one process at a time owns a data directory.
 *
 *   <dataPath>/.meta.lock    {"pid": 1234, "host": "box-1", "address": "127.0.0.1:8123",
 *                             "startedAt": "2026-12-01T10:00:00.000Z", "command": "meta serve",
 *                             "procStart": 123456}
 *
 * A broker takes it before it opens a partition and removes it on a clean stop; the offline
 * commands (`meta partitions move|delete`, `meta repair`) take it while they change files and
 * refuse while someone else holds it. The file is created with O_EXCL, so two processes
 * never both create it. A lock whose process is gone is stale: it is taken over (the caller
 * logs it). On this host a holder is gone when its pid is not running, is a zombie (state Z
 * or X in /proc/PID/stat: killed, not yet reaped by its parent), or now belongs to another
 * process (its start time, field 22 of /proc/PID/stat, differs from `procStart`; lock files
 * written without `procStart` skip that check). A lock naming this process's own pid is held
 * only when this process took it and has not released it (two brokers in one process): a
 * container restarted with the same pid (often 1) finds its previous run's lock, which no
 * check of /proc can tell from its own. A lock written on another host cannot be checked from
 * here and is never taken over.
 *
 * Taking over a stale lock renames it aside first and checks that what was renamed is still
 * the stale lock (not a fresh one another process created meanwhile), so two processes that
 * both saw the stale lock cannot both end up holding the directory.
 */
import {closeSync, existsSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, writeSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {LOCK_FILE_NAME} from './layout.js'

/** What the lock file says about its holder. */
export interface DataDirLockInfo {
  pid: number
  /** The holder's host name (os.hostname()). */
  host: string
  /** Where the holder listens (`host:port`), once known; absent for offline commands. */
  address?: string
  /** ISO time the holder took the lock. */
  startedAt: string
  /** What holds it: `meta serve`, `meta partitions move`, … */
  command?: string
  /**
   * The holder's start time in clock ticks after boot (/proc/PID/stat field 22), to tell it
   * from a later process given the same pid; absent off Linux and in older lock files.
   */
  procStart?: number
}

/** A lock this process holds. */
export interface DataDirLock {
  readonly dir: string
  readonly path: string
  readonly info: DataDirLockInfo
  /** Set when a stale lock was taken over: what it said. */
  readonly tookOverFrom?: DataDirLockInfo
  /** Record the address once the broker listens (rewrites the file atomically). */
  setAddress(address: string): void
  /** Remove the lock file (only if it is still ours); idempotent. */
  release(): void
}

/** Lock file path → the `startedAt` of the lock this process holds there (until released). */
const heldHere = new Map<string, string>()

/** The lock file of a directory. */
export function dataDirLockPath(dir: string): string {
  return join(dir, LOCK_FILE_NAME)
}

/** The lock file's contents, or undefined when there is none (or it is unreadable garbage). */
export function readDataDirLock(dir: string): DataDirLockInfo | undefined {
  let text: string
  try {
    text = readFileSync(dataDirLockPath(dir), 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new MetaError('STORAGE_ERROR', `cannot read lock file "${dataDirLockPath(dir)}": ${(error as Error).message}`, {cause: error})
  }
  return parseLockInfo(text)
}

/**
 * Whether the holder described by `info` is still running: true for a live pid on this host
 * and for any lock written on another host (which cannot be checked from here).
 */
export function isLockHeld(info: DataDirLockInfo): boolean {
  if (info.host !== hostname()) return true
  if (info.pid === process.pid) return [...heldHere.values()].includes(info.startedAt)
  return processAlive(info.pid, info.procStart)
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
  const info: DataDirLockInfo = {
    pid: process.pid,
    host: hostname(),
    ...(options.address === undefined ? {} : {address: options.address}),
    startedAt: new Date().toISOString(),
    command: options.command,
  }
  const procStart = processStart(process.pid)
  if (procStart !== undefined) info.procStart = procStart
  let tookOverFrom: DataDirLockInfo | undefined
  for (let attempt = 0; ; attempt++) {
    if (createExclusive(path, info)) break
    const current = readRaw(path)
    if (current === undefined) continue // removed meanwhile: try again
    const holder = parseLockInfo(current)
    if (holder !== undefined && isLockHeld(holder)) throw lockedError(dir, holder)
    if (attempt > 5) throw new MetaError('DATA_DIR_LOCKED', `cannot take the lock "${path}": it keeps changing under this process`)
    if (takeOverStale(path, current)) tookOverFrom = holder ?? {pid: 0, host: '?', startedAt: '?'}
  }
  heldHere.set(path, info.startedAt)
  let released = false
  let current = info
  return {
    dir,
    path,
    get info() {
      return current
    },
    tookOverFrom,
    setAddress(address: string) {
      if (released) return
      current = {...current, address}
      const tmp = `${path}.${process.pid}.tmp`
      writeFileDurably(tmp, current)
      renameSync(tmp, path)
    },
    release() {
      if (released) return
      released = true
      heldHere.delete(path)
      // Only remove it if it is still ours (an operator may have removed and reused it).
      const text = readRaw(path)
      const holder = text === undefined ? undefined : parseLockInfo(text)
      if (holder?.pid === process.pid && holder.startedAt === current.startedAt) rmSync(path, {force: true})
    },
  }
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

function createExclusive(path: string, info: DataDirLockInfo): boolean {
  let fd: number
  try {
    fd = openSync(path, 'wx', 0o644)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw new MetaError('STORAGE_ERROR', `cannot create lock file "${path}": ${(error as Error).message}`, {cause: error})
  }
  try {
    writeSync(fd, `${JSON.stringify(info)}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  return true
}

/**
 * Move a stale lock (whose text is `stale`) out of the way. Returns true when the stale lock
 * was removed by this call; false when what was renamed turned out to be a newer lock, which
 * is put back (another process won the race).
 */
function takeOverStale(path: string, stale: string): boolean {
  const aside = `${path}.stale-${process.pid}`
  try {
    renameSync(path, aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw new MetaError('STORAGE_ERROR', `cannot replace stale lock file "${path}": ${(error as Error).message}`, {cause: error})
  }
  if (readRaw(aside) === stale) {
    rmSync(aside, {force: true})
    return true
  }
  // A live process's lock: put it back unless yet another one was created meanwhile.
  try {
    linkSync(aside, path)
  } catch {
    // Someone created a lock in the meantime; the next attempt reads and honours it.
  }
  rmSync(aside, {force: true})
  return false
}

function writeFileDurably(path: string, info: DataDirLockInfo): void {
  const fd = openSync(path, 'w', 0o644)
  try {
    writeSync(fd, `${JSON.stringify(info)}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function readRaw(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw new MetaError('STORAGE_ERROR', `cannot read lock file "${path}": ${(error as Error).message}`, {cause: error})
  }
}

function parseLockInfo(text: string): DataDirLockInfo | undefined {
  try {
    const value = JSON.parse(text) as Partial<DataDirLockInfo>
    if (typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined
    return {
      pid: value.pid,
      host: value.host,
      ...(typeof value.address === 'string' ? {address: value.address} : {}),
      startedAt: typeof value.startedAt === 'string' ? value.startedAt : '?',
      ...(typeof value.command === 'string' ? {command: value.command} : {}),
      ...(typeof value.procStart === 'number' ? {procStart: value.procStart} : {}),
    }
  } catch {
    // A torn or hand-edited file: no holder can be named, so it counts as stale.
    return undefined
  }
}

/**
 * True if the process that wrote a lock as `pid` (started at `procStart`, if known) still runs.
 * Where /proc answers, a zombie (killed, not yet reaped) and a pid now held by a process that
 * started at another time count as gone; elsewhere kill(pid, 0) decides (EPERM: it exists but
 * belongs to someone else).
 */
function processAlive(pid: number, procStart: number | undefined): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  const stat = procStat(pid)
  if (stat === 'gone') return false
  if (stat !== undefined) {
    if (stat.state === 'Z' || stat.state === 'X') return false
    return procStart === undefined || stat.start === procStart
  }
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** This host's start time of `pid` in clock ticks after boot, or undefined without /proc. */
export function processStart(pid: number): number | undefined {
  const stat = procStat(pid)
  return stat === undefined || stat === 'gone' ? undefined : stat.start
}

/**
 * State (field 3) and start time (field 22) from /proc/PID/stat; 'gone' when /proc exists but
 * has no such pid; undefined when /proc cannot tell (not Linux, unreadable, unparsable).
 */
function procStat(pid: number): {state: string; start: number} | 'gone' | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    // ENOENT with /proc mounted: no such process. Without /proc (or unreadable): ask kill(2).
    return code === 'ENOENT' && existsSync('/proc/self/stat') ? 'gone' : undefined
  }
  // Field 2 (comm) is in parentheses and may itself hold spaces or parentheses: fields 3.. follow the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const start = Number(fields[22 - 3])
  if (fields[0] === undefined || fields[0] === '' || !Number.isSafeInteger(start)) return undefined
  return {state: fields[0], start}
}
