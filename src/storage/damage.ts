/**
 * Damaged ranges ("holes") of segments: how they are kept, announced and set aside.
 *
 * Representation (the decision, docs/invariants.md#recovery): a hole is [from, to) relative
 * to its segment, held in memory on the Segment (`holes`, sorted, disjoint). The segment file
 * is never rewritten around it: the records after a hole keep their byte offsets (consumers'
 * committed offsets point into the file), and no filler record is written (a MetaQ client
 * would deliver it as a message). Readers step over a hole instead: a read that reaches one
 * ends at its start, a read inside one answers `damaged` with its end (get → 301), and
 * `offset` inside one answers its end. Holes are found again at every open (recovery scans
 * the last segment; reads of unverified sealed segments and the background scrub check the
 * others), so nothing on disk has to be trusted about them.
 *
 * Each new hole is logged once (warn; info when `meta repair` acknowledged it in
 * `<segment>.damage.json`), counted (stats `crc_failures`), and, unless acknowledged, its
 * bytes are copied to `<20-digit offset>.damaged` beside the segment (not when they are all
 * zeros, unwritten space, or when that file exists).
 *
 * Damage map file (`<20-digit segment start>.damage.json`, written by `meta repair`):
 *
 *   {"version": 1, "segment": "<segment file name>",
 *    "ranges": [{"offset": <absolute>, "bytes": <n>, "reason": "<why>"}, ...]}
 */
import assert from 'node:assert'
import {existsSync, readFileSync} from 'node:fs'
import {open, rename, rm} from 'node:fs/promises'
import {dirname, join} from 'node:path'
import type {StoreContext} from './context.js'
import type {FileOps} from './file-ops.js'
import {damagedFileName, SCAN_CHUNK_BYTES, segmentFileName, TEMP_SUFFIX} from './layout.js'
import type {Hole} from './resync.js'
import {readFully} from './scan.js'
import type {Segment} from './segment.js'
import {withFile} from './segment-io.js'

export {DamageBook} from './damage-book.js'

/** Which partition a segment belongs to (for log lines). */
export interface PartitionRef {
  readonly topic: string
  readonly partition: number
}

/** What found a hole (for log lines). */
export type DamageSource = 'recovery' | 'read' | 'scrub' | 'offset' | 'index'

/** One damaged range as reported by stats, admin and `meta repair`. */
export interface DamagedRange {
  /** Absolute log offset of the first damaged byte. */
  offset: number
  bytes: number
  reason: string
  /** The segment file holding it. */
  file: string
  /** Acknowledged by `meta repair` (`.damage.json`). */
  acknowledged: boolean
}

/** The hole holding or following relative position `rel` (the first with `to > rel`). */
export function holeAt(holes: readonly Hole[] | undefined, rel: number): Hole | undefined {
  if (holes === undefined) return undefined
  for (const hole of holes) if (hole.to > rel) return hole
  return undefined
}

/** Add `hole` to the segment, merging overlaps; false when it was already covered. */
function addHole(segment: Segment, hole: Hole): boolean {
  assert(hole.from >= 0 && hole.to > hole.from, 'a damaged range is a non-empty range of its segment')
  const holes = segment.holes ?? []
  if (holes.some((h) => h.from <= hole.from && h.to >= hole.to)) return false
  const merged = {...hole}
  const kept: Hole[] = []
  for (const h of holes) {
    if (h.to < merged.from || h.from > merged.to) {
      kept.push(h)
    } else {
      merged.from = Math.min(merged.from, h.from)
      merged.to = Math.max(merged.to, h.to)
    }
  }
  kept.push(merged)
  kept.sort((a, b) => a.from - b.from)
  for (let i = 1; i < kept.length; i++) assert(kept[i].from > kept[i - 1].to, 'damaged ranges stay sorted and disjoint')
  segment.holes = kept
  return true
}

/** The segment's holes as absolute ranges. */
export function damagedRangesOf(segment: Segment): DamagedRange[] {
  return (segment.holes ?? []).map((hole) => ({
    offset: segment.start + hole.from,
    bytes: hole.to - hole.from,
    reason: hole.reason,
    file: segment.file.path,
    acknowledged: isAcknowledged(segment, hole),
  }))
}

/** Damaged ranges and bytes over `segments` (PartitionInfo). */
export function damageTotals(segments: readonly Segment[]): {damagedRanges: number; damagedBytes: number} {
  let damagedRanges = 0
  let damagedBytes = 0
  for (const segment of segments) {
    if (segment.holes === undefined) continue
    damagedRanges += segment.holes.length
    for (const hole of segment.holes) damagedBytes += hole.to - hole.from
  }
  return {damagedRanges, damagedBytes}
}

function isAcknowledged(segment: Segment, hole: Hole): boolean {
  return segment.acknowledged?.some((a) => a.from === hole.from && a.to === hole.to) ?? false
}

/**
 * Take the holes a scan of `segment` found: add each new one, count it, keep its bytes aside
 * and log it once with the file, offsets and reason.
 */
export async function recordHoles(ctx: StoreContext, owner: PartitionRef, segment: Segment, holes: readonly Hole[], source: DamageSource): Promise<void> {
  for (const hole of holes) {
    if (!addHole(segment, hole)) continue
    ctx.damage.found += 1
    const acknowledged = isAcknowledged(segment, hole)
    // An acknowledged range was kept aside by `meta repair`; the operator owns that file now.
    const keptAside = acknowledged ? undefined : await keepAside(ctx, segment, hole.from, hole.to)
    const fields = {
      topic: owner.topic,
      partition: owner.partition,
      file: segment.file.path,
      offset: segment.start + hole.from,
      bytes: hole.to - hole.from,
      resumesAt: segment.start + hole.to,
      reason: hole.reason,
      foundBy: source,
      keptAside,
    }
    if (acknowledged) ctx.log.info('known damaged range skipped (acknowledged by meta repair)', fields)
    else ctx.log.warn('damaged range skipped: readers resume after it', fields)
  }
}

const ZEROS = Buffer.alloc(SCAN_CHUNK_BYTES)

/**
 * Copy segment bytes [from, to) to `<20-digit offset>.damaged` beside it, unless that file
 * exists or the bytes are all zeros. Returns the file's path (undefined when nothing needed
 * keeping). A failure is logged, never thrown: the damage is still in the segment file.
 */
export async function keepAside(ctx: StoreContext, segment: Segment, from: number, to: number): Promise<string | undefined> {
  const path = join(dirname(segment.file.path), damagedFileName(segment.start + from))
  try {
    const kept = await withFile(ctx, segment.file, 'read', (fd) => copyAside(ctx.ops, fd, path, from, to))
    return kept ? path : undefined
  } catch (error) {
    ctx.log.error('cannot keep damaged bytes aside', {file: segment.file.path, offset: segment.start + from, to: path, error: String(error)})
    return undefined
  }
}

/**
 * Copy bytes [from, to) of `fd` to a new file `path` (through `<path>.tmp`), zero runs left
 * sparse. False (and no file) when they are all zeros; true when `path` exists already.
 */
export async function copyAside(ops: FileOps, fd: number, path: string, from: number, to: number): Promise<boolean> {
  if (existsSync(path)) return true
  const tmp = `${path}${TEMP_SUFFIX}`
  let wrote = false
  try {
    const out = await open(tmp, 'w')
    try {
      const buf = Buffer.allocUnsafe(Math.max(1, Math.min(SCAN_CHUNK_BYTES, to - from)))
      for (let pos = from; pos < to;) {
        const n = await readFully(ops, fd, buf, 0, Math.min(buf.length, to - pos), pos)
        if (n === 0) break
        if (!buf.subarray(0, n).equals(ZEROS.subarray(0, n))) {
          await out.write(buf, 0, n, pos - from)
          wrote = true
        }
        pos += n
      }
      await out.truncate(to - from)
    } finally {
      await out.close()
    }
    if (wrote) await rename(tmp, path)
  } finally {
    if (!wrote || existsSync(tmp)) await rm(tmp, {force: true})
  }
  return wrote
}

/** Ranges of a damage map file as holes of the segment at `start`; undefined when unreadable. */
export function readDamageMap(path: string, start: number): Hole[] | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as {version?: number; ranges?: Array<{offset: number; bytes: number; reason: string}>}
    if (parsed.version !== 1 || !Array.isArray(parsed.ranges)) return undefined
    return parsed.ranges.map((r) => ({from: r.offset - start, to: r.offset - start + r.bytes, reason: r.reason as Hole['reason']}))
  } catch {
    // Missing or not JSON: an acknowledgement we cannot read acknowledges nothing.
    return undefined
  }
}

/** The text of a damage map for the segment at `start` with `holes`. */
export function damageMapText(start: number, holes: readonly Hole[]): string {
  const ranges = holes.map((h) => ({offset: start + h.from, bytes: h.to - h.from, reason: h.reason}))
  return `${JSON.stringify({version: 1, segment: segmentFileName(start), ranges}, null, 2)}\n`
}
