/**
 * A read inside one segment (PartitionLog.read): the slice stops at the segment's end and at
 * the next damaged range (damage.ts); it comes from the tail cache (tail-cache.ts) when the
 * bytes are still there, else from the file; a slice of a sealed segment the scrub has not
 * verified yet has its records checked first (verify.ts), and is read again when that found
 * new damage.
 */
import assert from 'node:assert'
import type {StoreContext} from './context.js'
import {holeAt, type PartitionRef} from './damage.js'
import type {Segment} from './segment.js'
import {readSegment} from './segment-io.js'
import type {PartitionTail} from './tail-cache.js'
import type {ReadResult} from './types.js'
import {damageBeforeServing} from './verify.js'

/** What a read of one segment's slice found; `again` when new damage was recorded (read again). */
type SliceResult = ReadResult | {kind: 'again'}

/** The partition a slice is read for: its name, its start now, its written end now. */
interface SliceOwner extends PartitionRef {
  readonly minOffset: number
  readonly maxOffset: number
}

/** Read [offset, offset + maxBytes) of `segment`, cut at its end and at the next damaged range. */
export async function readSlice(
  ctx: StoreContext,
  owner: SliceOwner,
  tail: PartitionTail,
  segment: Segment,
  offset: number,
  maxBytes: number,
): Promise<SliceResult> {
  assert(offset >= segment.start && offset < segment.end, 'a slice starts inside its segment')
  let to = Math.min(offset + maxBytes, segment.end)
  if (segment.holes !== undefined) {
    const hole = holeAt(segment.holes, offset - segment.start)
    if (hole !== undefined && segment.start + hole.from <= offset) return {kind: 'damaged', offset: segment.start + hole.to}
    if (hole !== undefined) to = Math.min(to, segment.start + hole.from)
  }
  assert(to > offset && to <= segment.end, 'a slice is not empty and stays inside its segment')
  const cached = tail.slice(offset, to)
  if (cached !== undefined) return {kind: 'data', data: cached.data, release: cached.release}
  let data: Buffer
  try {
    data = await readSegment(ctx, segment, offset, to)
  } catch (error) {
    // Retention removed the segment between the lookup and the read: the offset is now
    // below the log start, which the caller answers with a 301 like any such offset.
    if (segment.file.retired && offset < owner.minOffset) return {kind: 'below', offset: owner.minOffset}
    throw error
  }
  if (data.length === 0) return {kind: 'end', end: owner.maxOffset}
  assert(data.length <= to - offset, 'a file read returns no more than asked')
  if (segment.verified) return {kind: 'data', data}
  return (await damageBeforeServing(ctx, owner, segment, offset, data)) ? {kind: 'again'} : {kind: 'data', data}
}
