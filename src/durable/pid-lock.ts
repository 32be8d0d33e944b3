/**
 * PID lock files: one process at a time holds a directory or a file (the data directory of a
 * broker, a spool, the registry of `meta send --follow`). The lock is a small JSON file:
 *
 *   {"pid": 1234, "host": "box-1", "startedAt": "2026-12-01T10:00:00.000Z",
 *    "procStart": 123456, "command": "meta serve", "address": "127.0.0.1:8123"}
 *
 * (command and address are optional; a file holding only a decimal pid, as older spool and
 * registry locks do, is read as that pid on this host). It is created whole: written to a temp
 * file, fsynced and hard-linked to its name, which fails when a lock exists, so two processes
 * never both create it and no reader sees it half written.
 *
 * A lock whose holder is gone is stale and is taken over (the result says so). On this host a
 * holder is gone when its pid does not run, is a zombie, or now belongs to a process started
 * at another time than `procStart` (process.ts). A lock naming this process's own pid is held
 * only while this process took it and has not released it (two holders in one process, as
 * tests run brokers, are refused): a container restarted with the same pid (often 1) finds its
 * previous run's lock, which no look at /proc can tell from its own. A lock written on another
 * host cannot be checked from here and is never taken over.
 *
 * Taking over renames the stale lock aside first and checks that what was renamed is still the
 * stale lock (not a fresh one another process made meanwhile), so two processes that both saw
 * the stale lock cannot both end up holding it.
 */
import {closeSync, fsyncSync, linkSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeSync} from 'node:fs'
import {hostname} from 'node:os'
import {processAlive, processStart} from './process.js'
import {replaceFileSync, tempPathFor} from './replace.js'

/** What a lock file says about its holder. */
export interface PidLockInfo {
  pid: number
  /** The holder's host name (os.hostname()). */
  host: string
  /** ISO time the holder took the lock ('?' when the file does not say). */
  startedAt: string
  /** The holder's start time in clock ticks after boot (process.ts); absent off Linux and in older files. */
  procStart?: number
  /** What holds it: `meta serve`, `meta send`, … */
  command?: string
  /** Where the holder listens (`host:port`), once known. */
  address?: string
}

/** A lock this process holds. */
export interface PidLock {
  readonly path: string
  readonly info: PidLockInfo
  /** Set when a stale lock was taken over: what it said. */
  readonly tookOverFrom?: PidLockInfo
  /** Record the address once known (rewrites the file atomically). */
  setAddress(address: string): void
  /** Remove the lock file (only if it is still ours); idempotent. */
  release(): void
}

/** What {@link acquirePidLock} found: the lock, or the live holder that has it. */
type PidLockResult = {lock: PidLock; holder?: undefined} | {lock?: undefined; holder: PidLockInfo}

/** A lock that others kept taking and releasing while this process tried to take it. */
export class PidLockBusyError extends Error {
  constructor(readonly path: string) {
    super(`cannot take the lock "${path}": it keeps changing under this process`)
    this.name = 'PidLockBusyError'
  }
}

/** Lock file path → the `startedAt` of the lock this process holds there (until released). */
const heldHere = new Map<string, string>()

/** Attempts at taking a lock that keeps changing (others taking and releasing it) before giving up. */
const ATTEMPTS_MAX = 6

/**
 * The lock file's holder; undefined when there is none, or the file is garbage (torn, hand
 * edited: no holder can be named, so it counts as stale). Throws the file system's error
 * when it cannot be read.
 */
export function readPidLock(path: string): PidLockInfo | undefined {
  const text = readRaw(path)
  return text === undefined ? undefined : parsePidLock(text)
}

/**
 * Whether the holder `info` describes still holds its lock: a live process on this host (this
 * process only for a lock it took), and any lock written on another host.
 */
export function isPidLockHeld(info: PidLockInfo): boolean {
  if (info.host !== hostname()) return true
  if (info.pid === process.pid) return [...heldHere.values()].includes(info.startedAt)
  return processAlive(info.pid, info.procStart)
}

/**
 * Take the lock file `path` (its directory must exist) for this process. Returns the lock,
 * taking over a stale one, or the live holder that has it. Throws the file system's error,
 * and {@link PidLockBusyError}.
 */
export function acquirePidLock(path: string, options: {command?: string; address?: string; mode?: number} = {}): PidLockResult {
  const info: PidLockInfo = {pid: process.pid, host: hostname(), startedAt: new Date().toISOString()}
  const procStart = processStart(process.pid)
  if (procStart !== undefined) info.procStart = procStart
  if (options.command !== undefined) info.command = options.command
  if (options.address !== undefined) info.address = options.address
  const mode = options.mode ?? 0o644
  let tookOverFrom: PidLockInfo | undefined
  for (let attempt = 0; ; attempt++) {
    if (createWhole(path, info, mode)) break
    const current = readRaw(path)
    if (current === undefined) continue // released meanwhile: try again
    const holder = parsePidLock(current)
    if (holder !== undefined && isPidLockHeld(holder)) return {holder}
    if (attempt >= ATTEMPTS_MAX) throw new PidLockBusyError(path)
    if (takeOverStale(path, current)) tookOverFrom = holder ?? {pid: 0, host: '?', startedAt: '?'}
  }
  heldHere.set(path, info.startedAt)
  let released = false
  let current = info
  const lock: PidLock = {
    path,
    get info() {
      return current
    },
    ...(tookOverFrom === undefined ? {} : {tookOverFrom}),
    setAddress(address: string) {
      if (released) return
      current = {...current, address}
      replaceFileSync(path, `${JSON.stringify(current)}\n`, {mode})
    },
    release() {
      if (released) return
      released = true
      heldHere.delete(path)
      // Only remove it if it is still ours (an operator may have removed and reused it).
      const holder = readPidLock(path)
      if (holder?.pid === process.pid && holder.startedAt === current.startedAt) rmSync(path, {force: true})
    },
  }
  return {lock}
}

/** The holder in a lock file's text; undefined for garbage. */
function parsePidLock(text: string): PidLockInfo | undefined {
  // The older spool and registry locks: a decimal pid and a newline, written on this host.
  if (/^\d+\n?$/.test(text)) {
    const pid = Number(text.trim())
    return Number.isSafeInteger(pid) && pid > 0 ? {pid, host: hostname(), startedAt: '?'} : undefined
  }
  let value: Partial<PidLockInfo>
  try {
    value = JSON.parse(text) as Partial<PidLockInfo>
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || typeof value.pid !== 'number' || typeof value.host !== 'string') return undefined
  return {
    pid: value.pid,
    host: value.host,
    ...(typeof value.address === 'string' ? {address: value.address} : {}),
    startedAt: typeof value.startedAt === 'string' ? value.startedAt : '?',
    ...(typeof value.command === 'string' ? {command: value.command} : {}),
    ...(typeof value.procStart === 'number' ? {procStart: value.procStart} : {}),
  }
}

/** Create `path` holding `info`, whole, unless it exists (false then). */
function createWhole(path: string, info: PidLockInfo, mode: number): boolean {
  const temp = tempPathFor(path)
  const fd = openSync(temp, 'w', mode)
  try {
    try {
      writeSync(fd, `${JSON.stringify(info)}\n`)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    linkSync(temp, path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw error
  } finally {
    rmSync(temp, {force: true})
  }
}

/**
 * Move a stale lock (whose text is `stale`) out of the way. True when the stale lock was
 * removed by this call; false when what was renamed turned out to be a newer lock, which is
 * put back (another process won the race).
 */
function takeOverStale(path: string, stale: string): boolean {
  const aside = `${path}.stale-${process.pid}`
  try {
    renameSync(path, aside)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
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
  try {
    unlinkSync(aside)
  } catch {
    // Gone already.
  }
  return false
}

function readRaw(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}
