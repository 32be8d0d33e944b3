/**
 * Which partitions each member of a group consumes (docs/protocol.md#load-balancing). Every member
 * computes this from the same inputs, so they agree without talking to each other.
 *
 * DEFAULT (MetaQ's default): members and partitions sorted as strings (so `0-10` sorts before
 * `0-2`); with n partitions, m members and my index k:
 *   start = floor(n/m)·k + min(k, n mod m), count = floor(n/m) + (k < n mod m ? 1 : 0)
 * and I take that contiguous slice. Members beyond n get nothing.
 *
 * CONSIST (MetaQ's consistent hashing): a ketama ring with 160 points per member (40 MD5s of
 * `"<memberId>-<i>"`, four little-endian 32-bit points each); a partition goes to the first
 * point at or after the first four MD5 bytes (little-endian) of its name, wrapping around.
 */
import {createHash} from 'node:crypto'
import {partitionName, type Partition} from './types.js'

export type AssignmentStrategy = 'default' | 'consist'

/** Sort as MetaQ sorts strings (UTF-16 code units, like Java's String.compareTo). */
function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** MetaQ's DEFAULT strategy: my contiguous slice of the partitions sorted as strings. */
export function defaultAssignment(members: readonly string[], partitions: readonly Partition[], me: string): Partition[] {
  const sortedMembers = [...members].sort(compareStrings)
  const k = sortedMembers.indexOf(me)
  if (k < 0 || partitions.length === 0) return []
  const sorted = [...partitions].sort((a, b) => compareStrings(partitionName(a), partitionName(b)))
  const n = sorted.length
  const m = sortedMembers.length
  const per = Math.floor(n / m)
  const extra = n % m
  const start = per * k + Math.min(k, extra)
  const count = per + (k < extra ? 1 : 0)
  return sorted.slice(start, start + count)
}

/** MetaQ's CONSIST strategy (ketama). */
export function consistentAssignment(members: readonly string[], partitions: readonly Partition[], me: string): Partition[] {
  if (!members.includes(me)) return []
  const ring: Array<[number, string]> = []
  for (const member of members) {
    for (let i = 0; i < 40; i++) {
      const digest = createHash('md5').update(`${member}-${i}`).digest()
      for (let h = 0; h < 4; h++) ring.push([digest.readUInt32LE(h * 4), member])
    }
  }
  ring.sort((a, b) => a[0] - b[0] || compareStrings(a[1], b[1]))
  return partitions.filter((p) => {
    const hash = createHash('md5').update(partitionName(p)).digest().readUInt32LE(0)
    const point = ring.find(([value]) => value >= hash) ?? ring[0]
    return point[1] === me
  })
}

export function assign(strategy: AssignmentStrategy, members: readonly string[], partitions: readonly Partition[], me: string): Partition[] {
  return strategy === 'consist' ? consistentAssignment(members, partitions, me) : defaultAssignment(members, partitions, me)
}
