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
 * Descriptors kept for everything that is neither a store file nor a client connection:
 * Node's own (stdio, epoll, eventfd, signal pipe, the libuv thread pool's), the listening
 * sockets (MetaQ and HTTP), the offset log and its rewrite, the transaction journal, the data
 * directory locks, ZooKeeper's connection, the directory scans of recovery (16 at a time),
 * dashboard/HTTP connections and the store's brief overshoot (a synchronous write may open one
 * file past its budget while every open one is in use).
 */
export const RESERVED_FDS = 64
/** The least the store is given, however small the limit (it then reopens files nearly per operation). */
export const STORE_FILES_MIN = 16
/** Descriptors left free beyond the connection cap, for what the reserve holds and was not open yet when counted. */
export const CONNECTION_HEADROOM_FDS = 16

/**
 * Descriptors the message store may keep open (segment, index and directory files, closed
 * least recently used first beyond it): three quarters of the limit after {@link RESERVED_FDS},
 * so that with a large limit 10,000 partitions keep their segment files open instead of
 * reopening one for nearly every put (docs/benchmarks.md#many-partitions: open + close were a third of the
 * broker's CPU with puts spread over 10,000 partitions and a 1,024-file budget), and with a
 * small one (256: 144 files) any number of partitions still opens, only slower. Connections
 * get the rest ({@link connectionCap}). An unknown limit (not Linux) keeps `fallback`.
 */
export function storeFileBudget(limit: number | undefined, fallback: number): number {
  if (limit === undefined) return fallback
  return Math.max(STORE_FILES_MIN, Math.floor(((limit - RESERVED_FDS) * 3) / 4))
}

/**
 * Connections the broker may accept with `limit` descriptors when `othersOpen` are in use by
 * everything but connections, `storeOpen` of them the store's: all that is free once the
 * store's budget is reserved whole and {@link CONNECTION_HEADROOM_FDS} kept aside, and at
 * least 1.
 */
export function connectionCap(limit: number, othersOpen: number, storeBudget: number, storeOpen = 0): number {
  const storeGrowth = Math.max(0, storeBudget - storeOpen)
  return Math.max(1, limit - othersOpen - storeGrowth - CONNECTION_HEADROOM_FDS)
}
