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

/** From this many descriptors up, the store's budget is a share of the limit, not the fixed default. */
export const LARGE_FD_LIMIT = 16_384

/**
 * Descriptors the message store may keep open (a segment and an index file per partition,
 * closed least recently used first beyond it). With a large limit the store gets three
 * quarters of it, so that 10,000 partitions keep their segment files open instead of
 * reopening one for nearly every put (docs/benchmarks.md: open + close were a third of the
 * broker's CPU with puts spread over 10,000 partitions and a 1,024-file budget); connections
 * get the rest ({@link connectionCap}). A small or unknown limit keeps `fallback`.
 */
export function storeFileBudget(limit: number | undefined, fallback: number): number {
  return limit !== undefined && limit >= LARGE_FD_LIMIT ? Math.floor((limit * 3) / 4) : fallback
}

/**
 * Connections the broker may accept with `limit` descriptors when `othersOpen` are in use by
 * everything else: all but a reserve for the files the store may open later (its whole
 * budget with a large limit; otherwise a quarter of what is free, between 16 and `storeBudget`).
 */
export function connectionCap(limit: number, othersOpen: number, storeBudget: number): number {
  const free = Math.max(0, limit - othersOpen)
  // A budget taken from a large limit (storeFileBudget) is reserved whole while it fits.
  const whole = limit >= LARGE_FD_LIMIT && storeBudget <= free - 16
  const reserve = whole ? storeBudget : Math.min(storeBudget, Math.max(16, Math.floor(free / 4)))
  return Math.max(1, free - reserve)
}
