/**
 * What a spool directory holds, found by reading it: the acknowledged position, the whole
 * records after it, damaged ranges (scan.ts resynchronises past them) and a torn tail. The
 * writer (spool.ts) acts on it when it opens a spool; `meta spool list` reads it without the
 * lock (inspectSpool), so a spool in use is counted too, without disturbing its writer.
 */
import {closeSync, fstatSync, openSync, readdirSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {readDestinationFile, type SpoolDestination} from './destination.js'
import {DESTINATION_FILE, parseSegmentName, POSITION_FILE, QUARANTINE_DIR, segmentName} from './format.js'
import {heldBy} from './lock.js'
import {readPositionFile, type PositionState} from './position-file.js'
import {scanSegmentFile} from './scan.js'

/**
 * A damaged range of a spool: spool positions [position, end), bytes [from, to) of one segment
 * file. Either may be empty: positions no file holds (missing bytes), or bytes of a file that
 * no position stands for (past the next segment's start).
 */
export interface DamagedRange {
  /** The segment file's name. */
  segment: string
  from: number
  to: number
  position: number
  end: number
  /** What was wrong with the first bad record ('checksum mismatch', 'zeroed bytes', ...). */
  reason: string
  /** Where its bytes are kept, once they are (the writer quarantines them when it opens the spool). */
  quarantine?: string
}

export interface SegmentFile {
  start: number
  name: string
  fd: number
  /** Bytes in the file. */
  size: number
}

interface SpoolScanResult {
  /** The acknowledged position (the first segment's start when the position file is damaged). */
  position: number
  positionState: PositionState
  /** Segments wholly before the position: left by a save cut short. */
  stale: SegmentFile[]
  /** The others, in order. */
  segments: SegmentFile[]
  /** Whole records after the position. */
  records: number
  /** Bytes of those records. */
  bytes: number
  /** Damaged ranges after the position, in order. */
  damaged: DamagedRange[]
  /** An incomplete last record (what a writer killed mid-write leaves): where it starts in the last segment. */
  torn?: {segment: string; from: number; bytes: number}
  /** Where the spool ends: after its last whole record or damaged range. */
  end: number
}

/** The segment files of a spool directory, oldest first. */
export function segmentStarts(dir: string): number[] {
  return readdirSync(dir)
    .map((name) => parseSegmentName(name))
    .filter((start): start is number => start !== undefined)
    .sort((a, b) => a - b)
}

/** Scan the segments (open, in order) of the spool in `dir`. */
export function scanSpool(dir: string, files: SegmentFile[]): SpoolScanResult {
  const saved = readPositionFile(join(dir, POSITION_FILE))
  const result: SpoolScanResult = {
    position: saved.value,
    positionState: saved.state,
    stale: [],
    segments: [...files],
    records: 0,
    bytes: 0,
    damaged: [],
    end: saved.value,
  }
  if (files.length === 0) return result
  // A damaged position: everything still in the segments is sent again (at-least-once).
  if (saved.state === 'damaged' || saved.value < files[0]!.start) result.position = files[0]!.start
  while (result.segments.length > 1 && result.segments[1]!.start <= result.position) result.stale.push(result.segments.shift()!)
  let at = result.position
  for (let i = 0; i < result.segments.length; i++) {
    const segment = result.segments[i]!
    const next = result.segments[i + 1]
    // A segment never holds bytes past the next one's start.
    const limit = next === undefined ? segment.size : Math.min(segment.size, next.start - segment.start)
    if (at < segment.start) {
      // The previous segment ends before this one starts: the bytes in between were never written.
      result.damaged.push({segment: segment.name, from: 0, to: 0, position: at, end: segment.start, reason: 'missing bytes before this segment'})
      at = segment.start
    }
    const from = at - segment.start
    if (from < limit) {
      const scan = scanSegmentFile(segment.fd, from, limit, next === undefined)
      result.records += scan.records
      for (const hole of scan.holes) {
        result.damaged.push({
          segment: segment.name,
          from: hole.from,
          to: hole.to,
          position: segment.start + hole.from,
          end: segment.start + hole.to,
          reason: hole.reason,
        })
      }
      if (scan.torn !== undefined) result.torn = {segment: segment.name, from: scan.torn, bytes: segment.size - scan.torn}
      at = segment.start + scan.end
    }
    if (next !== undefined && segment.size > limit) {
      // Bytes the positions of the next segment cover: quarantined, no position skipped for them.
      result.damaged.push({
        segment: segment.name,
        from: limit,
        to: segment.size,
        position: next.start,
        end: next.start,
        reason: "bytes past the next segment's start",
      })
    }
  }
  result.end = at
  const holeBytes = result.damaged.reduce((n, d) => n + (d.end - d.position), 0)
  result.bytes = Math.max(0, at - result.position - holeBytes)
  return result
}

/** What `meta spool list` shows of a spool. */
export interface SpoolInspection {
  dir: string
  destination: SpoolDestination | undefined
  /** The destination file exists and cannot be read. */
  destinationUnreadable: boolean
  /** The live process that has the spool open, if any. */
  inUseBy: number | undefined
  position: number
  positionState: PositionState
  /** Whole records not yet acknowledged, and their bytes. */
  records: number
  bytes: number
  damaged: DamagedRange[]
  torn?: {segment: string; from: number; bytes: number}
  /** Files of damaged bytes kept in the spool's quarantine directory. */
  quarantined: Array<{path: string; bytes: number}>
}

/**
 * Read a spool without its lock and without changing anything: a spool in use is read as far
 * as its writer has written (its last record may be half written: not counted, not damage).
 */
export function inspectSpool(dir: string): SpoolInspection {
  const inUseBy = heldBy(dir)
  let destination: SpoolDestination | undefined
  let destinationUnreadable = false
  try {
    destination = readDestinationFile(join(dir, DESTINATION_FILE))
  } catch {
    destinationUnreadable = true
  }
  const files: SegmentFile[] = []
  try {
    for (const start of segmentStarts(dir)) {
      const name = segmentName(start)
      let fd: number
      try {
        fd = openSync(join(dir, name), 'r')
      } catch {
        continue // deleted by its writer meanwhile
      }
      files.push({start, name, fd, size: fstatSync(fd).size})
    }
    const scan = scanSpool(dir, files)
    return {
      dir,
      destination,
      destinationUnreadable,
      inUseBy,
      position: scan.position,
      positionState: scan.positionState,
      records: scan.records,
      bytes: scan.bytes,
      damaged: scan.damaged,
      ...(scan.torn === undefined || inUseBy !== undefined ? {} : {torn: scan.torn}),
      quarantined: quarantinedFiles(dir),
    }
  } finally {
    for (const file of files) closeSync(file.fd)
  }
}

/** Bytes of a spool's segments past its position, from the file sizes alone (nothing read). */
export function pendingSize(dir: string): number {
  const position = readPositionFile(join(dir, POSITION_FILE)).value
  let bytes = 0
  for (const start of segmentStarts(dir)) {
    try {
      const size = statSync(join(dir, segmentName(start))).size
      bytes += Math.max(0, Math.min(size, start + size - position))
    } catch {} // deleted meanwhile
  }
  return bytes
}

/** The files of a spool's quarantine directory. */
function quarantinedFiles(dir: string): Array<{path: string; bytes: number}> {
  const qdir = join(dir, QUARANTINE_DIR)
  let names: string[]
  try {
    names = readdirSync(qdir).sort()
  } catch {
    return []
  }
  const out: Array<{path: string; bytes: number}> = []
  for (const name of names) {
    try {
      out.push({path: join(qdir, name), bytes: statSync(join(qdir, name)).size})
    } catch {}
  }
  return out
}
