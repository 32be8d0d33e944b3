/**
 * A spool's files made ready when it is opened: its segments opened, the leftovers of a save
 * cut short deleted, a torn tail cut, damaged ranges copied to the quarantine directory, and
 * the destination it records read. The Spool (spool.ts) takes its position and counts from
 * what this finds.
 */
import {closeSync, constants, fstatSync, ftruncateSync, mkdirSync, openSync, unlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {readDestinationFile, type SpoolDestination} from './destination.js'
import {DESTINATION_FILE, LEGACY_POSITION_TEMP_FILE, QUARANTINE_DIR, quarantineName, segmentName} from './format.js'
import {scanSpool, segmentStarts, type DamagedRange, type SegmentFile} from './recover.js'
import {readAt} from './scan.js'

/** A segment file a spool has open. */
export interface Segment {
  start: number
  fd: number
  /** Bytes written to the file. */
  size: number
}

/** What the files of a spool hold after recovery. */
interface RecoveredFiles {
  /** Damaged ranges stepped over (positions with no record). */
  holes: Array<{position: number; end: number}>
  /** Records after the position. */
  records: number
  /** The position the position file holds (or the first record's, when it is damaged). */
  position: number
  /** Where the next record goes. */
  end: number
  positionDamaged: boolean
  /** Damaged ranges (copied to the quarantine directory) and the bytes of a torn tail cut off. */
  damaged: DamagedRange[]
  tornBytes: number
}

/**
 * Open a spool's segments into `segments` (the spool's own list, so that its close() closes
 * them when this throws), check every record after the position, quarantine damage, cut a torn
 * tail.
 */
export function recoverFiles(dir: string, segments: Segment[]): RecoveredFiles {
  const files: SegmentFile[] = []
  for (const start of segmentStarts(dir)) {
    const name = segmentName(start)
    const fd = openSync(join(dir, name), constants.O_RDWR)
    files.push({start, name, fd, size: fstatSync(fd).size})
    segments.push({start, fd, size: files.at(-1)!.size})
  }
  const scan = scanSpool(dir, files)
  // Segments before the one holding the position are leftovers of a save cut short.
  for (const stale of scan.stale) {
    closeSync(stale.fd)
    unlinkSync(join(dir, stale.name))
  }
  for (let i = segments.length - 1; i >= 0; i--) if (scan.stale.some((f) => f.start === segments[i]!.start)) segments.splice(i, 1)
  const last = segments.at(-1)
  let tornBytes = 0
  if (scan.torn !== undefined && last !== undefined) {
    tornBytes = scan.torn.bytes
    ftruncateSync(last.fd, scan.torn.from)
    last.size = scan.torn.from
  }
  for (const range of scan.damaged) quarantine(dir, segments, range)
  // Damage at the very end of the last segment: its positions are written again.
  const tail = scan.damaged.at(-1)
  let end = scan.end
  if (
    last !== undefined &&
    tail !== undefined &&
    tail.end === scan.end &&
    tail.to === last.size &&
    tail.segment === segmentName(last.start) &&
    tail.to > tail.from
  ) {
    ftruncateSync(last.fd, tail.from)
    last.size = tail.from
    end = tail.position
  }
  try {
    unlinkSync(join(dir, LEGACY_POSITION_TEMP_FILE))
  } catch {}
  return {
    holes: scan.damaged.filter((d) => d.end > d.position && d.position < end).map((d) => ({position: d.position, end: d.end})),
    records: scan.records,
    position: scan.position,
    end,
    positionDamaged: scan.positionState === 'damaged',
    damaged: scan.damaged,
    tornBytes,
  }
}

/** Copy a damaged range's bytes to the quarantine directory. */
function quarantine(dir: string, segments: Segment[], range: DamagedRange): void {
  if (range.to <= range.from) return
  const segment = segments.find((s) => segmentName(s.start) === range.segment)
  if (segment === undefined) return
  const quarantineDir = join(dir, QUARANTINE_DIR)
  mkdirSync(quarantineDir, {recursive: true, mode: 0o700})
  const path = join(quarantineDir, quarantineName(range.segment, range.from, range.to))
  writeFileSync(path, readAt(segment.fd, range.from, range.to - range.from), {mode: 0o600})
  range.quarantine = path
}

/** The destination a spool records; with `retarget` one that cannot be read counts as none. */
export function recordedDestination(dir: string, retarget: boolean): SpoolDestination | undefined {
  try {
    return readDestinationFile(join(dir, DESTINATION_FILE))
  } catch (error) {
    if (retarget) return undefined
    throw new MetaError(
      'STORAGE_CORRUPT',
      `cannot read the destination of the spool ${dir} (${(error as Error).message}): send it with --retarget to name one`,
      {cause: error},
    )
  }
}
