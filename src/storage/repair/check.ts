/**
 * `meta repair`, part 1: check a partition directory offline and plan what to do about each
 * thing found. Nothing here writes. The broker's own rules decide what is damage (the same
 * listing and classification as recovery.ts, the same record scan as resync.ts), so a
 * directory this calls clean is one the broker opens without quarantine, warnings or holes it
 * has not been told about.
 *
 * What is found, and the planned repair (apply.ts applies it, never deleting data):
 *
 *   bad-segment-name   `525041.meta`: renamed to its 20-digit name when that fits the log;
 *                      otherwise (`junk.meta`, or it would overlap) set aside as `<name>.aside`
 *   duplicate-segment  a second name for a segment's start: set aside
 *   gap                a sealed segment truncated or missing: bridged by a placeholder
 *                      segment of that many zero bytes (sparse), acknowledged as damaged, so
 *                      every later record keeps its offset and the partition is served again
 *   overlap            a segment longer than the next one's start: cut at that start, the cut
 *                      bytes kept aside in `<offset>.damaged`
 *   torn-tail          damage running to the end of the last segment: truncated after its last
 *                      valid record, the cut bytes kept aside (what the broker does at start)
 *   damaged-range      damage that valid records follow (a hole readers step over): copied
 *                      aside and acknowledged in `<segment>.damage.json`
 *   stale-index        a side index that is missing or disagrees with its segment: rebuilt
 *   leftover-temp      `*.tmp` left by a crash: removed
 *   orphan-file        a side index or damage map without its segment: removed (derived data)
 *   unknown-file       reported, left alone (not damage)
 *   unreadable         the directory or a file cannot be read (permissions, I/O error):
 *                      reported as damage, nothing done
 *
 * `known-damaged-range` is a range `meta repair` acknowledged before: reported, not damage.
 */
import {open, readFile, stat} from 'node:fs/promises'
import {join} from 'node:path'
import {readDamageMap} from '../damage.js'
import {nodeFileOps} from '../file-ops.js'
import {ASIDE_SUFFIX, damagedFileName, damageMapFileName, indexFileName, RESYNC_MAX_RECORD_BYTES, segmentFileName} from '../layout.js'
import {listPartition} from '../recovery.js'
import {scanSegment, type Hole} from '../resync.js'
import {encodeEntries, encodeHeader, IndexCursor, recordTimestamp} from '../side-index.js'

/** What `meta repair` does about a finding (executed by apply.ts). */
export type RepairAction =
  | {readonly kind: 'rename'; readonly file: string; readonly to: string}
  | {readonly kind: 'set-aside'; readonly file: string; readonly to: string}
  | {readonly kind: 'bridge'; readonly file: string; readonly start: number; readonly bytes: number}
  | {readonly kind: 'cut'; readonly file: string; readonly at: number; readonly keepAs: string}
  | {readonly kind: 'acknowledge'; readonly file: string; readonly start: number; readonly ranges: readonly Hole[]}
  | {readonly kind: 'rebuild-index'; readonly file: string; readonly bytes: Buffer}
  | {readonly kind: 'remove'; readonly file: string}

type FindingKind =
  | 'bad-segment-name'
  | 'duplicate-segment'
  | 'gap'
  | 'overlap'
  | 'torn-tail'
  | 'damaged-range'
  | 'known-damaged-range'
  | 'stale-index'
  | 'leftover-temp'
  | 'orphan-file'
  | 'unknown-file'
  | 'unreadable'

export interface Finding {
  kind: FindingKind
  /** The file it is about (a name in the partition directory). */
  file: string
  /** Absolute log offset and size, for ranges. */
  offset?: number
  bytes?: number
  /** What was found, in words. */
  detail: string
  /** True for damage (exit status 1 of a dry run); false for housekeeping and notes. */
  damage: boolean
  action?: RepairAction
}

export interface PartitionReport {
  topic: string
  partition: number
  dir: string
  findings: Finding[]
}

/** A segment of the log as it will be once the layout repairs are applied. */
interface PlannedSegment {
  start: number
  size: number
  /** Its file name now (a bridge has none yet). */
  file: string | undefined
}

/** Check one partition directory; `topic` and `partition` come from its name. */
export async function checkPartition(dir: string, topic: string, partition: number): Promise<PartitionReport> {
  const listing = await listPartition(dir)
  const findings: Finding[] = []
  const names = new Set(listing.entries.map((e) => e.name))
  for (const entry of listing.entries) {
    if (entry.directory || entry.file.kind === 'unknown') {
      findings.push({kind: 'unknown-file', file: entry.name, detail: 'not a file meta writes; left alone', damage: false})
    } else if (entry.file.kind === 'temp') {
      findings.push({kind: 'leftover-temp', file: entry.name, detail: 'an unfinished write', damage: false, action: {kind: 'remove', file: entry.name}})
    }
  }
  const planned: PlannedSegment[] = listing.segments.map((s) => ({start: s.start, size: s.size, file: s.name}))
  for (const entry of listing.entries) {
    if (entry.directory || entry.file.kind !== 'bad-segment-name') continue
    findings.push(await planBadName(dir, entry.name, entry.file.start, planned, names))
  }
  planned.sort((a, b) => a.start - b.start)
  findings.push(...planLayout(planned))
  for (const [i, segment] of planned.entries()) {
    if (segment.file !== undefined) findings.push(...(await checkSegment(dir, segment, i === planned.length - 1)))
  }
  const starts = new Set(planned.map((s) => s.start))
  for (const entry of listing.entries) {
    const file = entry.file
    if ((file.kind === 'index' || file.kind === 'damage-map') && !starts.has(file.start)) {
      findings.push({kind: 'orphan-file', file: entry.name, detail: 'belongs to no segment', damage: false, action: {kind: 'remove', file: entry.name}})
    }
  }
  return {topic, partition, dir, findings}
}

/** A `.meta` name that is not a segment name: rename it when it fits, else set it aside. */
async function planBadName(dir: string, name: string, start: number | undefined, planned: PlannedSegment[], names: Set<string>): Promise<Finding> {
  const setAside = {kind: 'set-aside' as const, file: name, to: asideName(name, names)}
  if (start === undefined) {
    return {kind: 'bad-segment-name', file: name, detail: 'not a segment name (<20-digit start offset>.meta)', damage: true, action: setAside}
  }
  const same = planned.find((s) => s.start === start)
  if (same !== undefined) {
    return {kind: 'duplicate-segment', file: name, offset: start, detail: `a second name for "${same.file}" (offset ${start})`, damage: true, action: setAside}
  }
  const size = (await stat(join(dir, name))).size
  const overlaps = planned.some((s) => s.start < start + size && start < s.start + s.size)
  const canonical = segmentFileName(start)
  if (overlaps) {
    return {
      kind: 'bad-segment-name',
      file: name,
      offset: start,
      detail: `names offset ${start}, but its ${size} bytes overlap other segments`,
      damage: true,
      action: setAside,
    }
  }
  planned.push({start, size, file: name})
  return {
    kind: 'bad-segment-name',
    file: name,
    offset: start,
    detail: `names offset ${start} without the 20-digit padding`,
    damage: true,
    action: {kind: 'rename', file: name, to: canonical},
  }
}

/** Gaps are bridged and overlaps cut, in the planned layout (which is updated to match). */
function planLayout(planned: PlannedSegment[]): Finding[] {
  const findings: Finding[] = []
  for (let i = 1; i < planned.length; i += 1) {
    const prev = planned[i - 1]
    const next = planned[i]
    const end = prev.start + prev.size
    if (end < next.start) {
      const bytes = next.start - end
      const file = segmentFileName(end)
      findings.push({
        kind: 'gap',
        file,
        offset: end,
        bytes,
        detail: `"${prev.file}" ends at ${end} but "${next.file}" starts at ${next.start}: ${bytes} bytes are missing`,
        damage: true,
        action: {kind: 'bridge', file, start: end, bytes},
      })
      planned.splice(i, 0, {start: end, size: bytes, file: undefined})
      i += 1
    } else if (end > next.start && prev.file !== undefined) {
      findings.push({
        kind: 'overlap',
        file: prev.file,
        offset: next.start,
        bytes: end - next.start,
        detail: `"${prev.file}" runs to ${end}, past the start of "${next.file}" at ${next.start}`,
        damage: true,
        action: {kind: 'cut', file: prev.file, at: next.start - prev.start, keepAs: damagedFileName(next.start)},
      })
      prev.size = next.start - prev.start
    }
  }
  return findings
}

/** Scan one segment: holes, a torn tail (last segment only), and its side index. */
async function checkSegment(dir: string, segment: PlannedSegment, last: boolean): Promise<Finding[]> {
  const file = segment.file as string
  const findings: Finding[] = []
  const cursor = new IndexCursor()
  const fd = await open(join(dir, file), 'r')
  let holes: Hole[]
  try {
    const scan = await scanSegment(nodeFileOps, fd.fd, 0, segment.size, (chunk, pos, _length, filePos) => cursor.record(filePos, recordTimestamp(chunk, pos)), {
      maxRecordBytes: RESYNC_MAX_RECORD_BYTES,
    })
    holes = scan.holes
    if (scan.tail !== undefined && last) {
      const bytes = segment.size - scan.tail.from
      findings.push({
        kind: 'torn-tail',
        file,
        offset: segment.start + scan.tail.from,
        bytes,
        detail: `${bytes} bytes after the last valid record (${scan.tail.reason})`,
        damage: true,
        action: {kind: 'cut', file, at: scan.tail.from, keepAs: damagedFileName(segment.start + scan.tail.from)},
      })
    } else if (scan.tail !== undefined) {
      holes.push({from: scan.tail.from, to: segment.size, reason: scan.tail.reason})
    }
  } finally {
    await fd.close()
  }
  const acknowledged = readDamageMap(join(dir, damageMapFileName(segment.start)), segment.start) ?? []
  const known = (h: Hole) => acknowledged.find((a) => a.from === h.from && a.to === h.to)
  for (const hole of holes) {
    const at = segment.start + hole.from
    const bytes = hole.to - hole.from
    const before = known(hole)
    if (before !== undefined) {
      findings.push({
        kind: 'known-damaged-range',
        file,
        offset: at,
        bytes,
        detail: `acknowledged before (${before.reason}); readers step over it`,
        damage: false,
      })
    } else {
      findings.push({
        kind: 'damaged-range',
        file,
        offset: at,
        bytes,
        detail: `${hole.reason}; valid records resume at ${segment.start + hole.to}`,
        damage: true,
        action: {kind: 'acknowledge', file: damageMapFileName(segment.start), start: segment.start, ranges: holes},
      })
    }
  }
  const expected = expectedIndex(cursor, last ? undefined : segment.size)
  if (!(await indexMatches(join(dir, indexFileName(segment.start)), expected))) {
    const index = indexFileName(segment.start)
    findings.push({
      kind: 'stale-index',
      file: index,
      detail: 'missing or out of date',
      damage: false,
      action: {kind: 'rebuild-index', file: index, bytes: expected},
    })
  }
  return findings
}

/** The side index a clean broker writes for these records (with totals when sealed). */
function expectedIndex(cursor: IndexCursor, sealedSize: number | undefined): Buffer {
  if (sealedSize !== undefined) cursor.seal(sealedSize)
  if (cursor.out.length === 0) return Buffer.alloc(0)
  return Buffer.concat([encodeHeader(), encodeEntries(cursor.out)])
}

async function indexMatches(path: string, expected: Buffer): Promise<boolean> {
  try {
    return (await readFile(path)).equals(expected)
  } catch {
    // Missing: right only when there is nothing to index.
    return expected.length === 0
  }
}

/** `<name>.aside`, or `<name>.<n>.aside` when that exists. */
function asideName(name: string, names: Set<string>): string {
  let candidate = `${name}${ASIDE_SUFFIX}`
  for (let n = 1; names.has(candidate); n += 1) candidate = `${name}.${n}${ASIDE_SUFFIX}`
  names.add(candidate)
  return candidate
}

/** An action in words, for the dry run's plan. */
export function describeAction(action: RepairAction): string {
  switch (action.kind) {
    case 'rename':
      return `rename to "${action.to}"`
    case 'set-aside':
      return `set aside as "${action.to}"`
    case 'bridge':
      return `bridge with a placeholder "${action.file}" of ${action.bytes} zero bytes (acknowledged as damaged)`
    case 'cut':
      return `cut at ${action.at}, keeping the cut bytes in "${action.keepAs}"`
    case 'acknowledge':
      return `record in "${action.file}", bytes kept aside`
    case 'rebuild-index':
      return 'rebuild'
    case 'remove':
      return 'remove'
  }
}

/** An action as plain JSON (without the rebuilt index's bytes). */
export function actionJson(action: RepairAction): Record<string, unknown> {
  if (action.kind === 'rebuild-index') return {kind: action.kind, file: action.file}
  if (action.kind === 'acknowledge') {
    return {kind: action.kind, file: action.file, ranges: action.ranges.map((r) => ({offset: action.start + r.from, bytes: r.to - r.from, reason: r.reason}))}
  }
  return {...action}
}
