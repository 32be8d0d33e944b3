/**
 * File descriptors of this process (Linux /proc; undefined elsewhere), so that the broker can
 * refuse connections, with a log line, before accepting one would run out of descriptors.
 * (At EMFILE, libuv accepts and closes pending connections itself and tells nobody.)
 */
import {readdirSync, readFileSync} from 'node:fs'

/** The soft limit of open files (`ulimit -n`; Node raises it to the hard limit at start), or undefined. */
export function openFileLimit(): number | undefined {
  try {
    const limits = readFileSync('/proc/self/limits', 'latin1')
    const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1]
    return soft === undefined || soft === 'unlimited' ? undefined : Number(soft)
  } catch {
    return undefined // not Linux: no limit known, no connection cap
  }
}

/** Descriptors open now, or undefined. */
export function openFileCount(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length - 1 // minus the one readdir itself opened
  } catch {
    return undefined // not Linux
  }
}

/**
 * Connections the broker may accept with `limit` descriptors when `othersOpen` are in use by
 * everything else: all but a reserve for the files the store may open later (a quarter of
 * what is free, between 16 and `storeBudget`).
 */
export function connectionCap(limit: number, othersOpen: number, storeBudget: number): number {
  const free = Math.max(0, limit - othersOpen)
  const reserve = Math.min(storeBudget, Math.max(16, Math.floor(free / 4)))
  return Math.max(1, free - reserve)
}
