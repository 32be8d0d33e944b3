/**
 * One segment: the file `<start offset, 20 digits>.meta` holding log bytes
 * [start, start + size) in MetaQ's record format (see protocol/message-set.ts), its side
 * index `<start offset, 20 digits>.idx` (format in layout.ts), and what the store knows about
 * both. Only the last segment of a partition is written to; the others are sealed.
 */
import {join} from 'node:path'
import {CachedFile} from './fd-cache.js'
import {indexFileName, segmentFileName} from './layout.js'
import type {Hole} from './resync.js'

export class Segment {
  /** The `.meta` file. */
  readonly file: CachedFile
  /** The side index file beside it (replaced when the index is rewritten). */
  indexFile: CachedFile
  /** Written since the last fdatasync of this segment began. */
  unsynced = false
  /** Whole messages in the segment (written ones). */
  messageCount = 0
  /** Largest message timestamp in the segment (ms since the Unix epoch), 0 when none. */
  maxTimestamp = 0
  /** Position (relative) of the last side index entry, -1 when there is none. */
  lastEntryPos = -1
  /** Entries in the side index file. */
  indexEntries = 0
  /**
   * `none`: no index file yet (created with the first entry); `ok`: the file holds
   * `indexEntries` valid entries; `broken`: unusable until the next open (queries scan).
   */
  indexState: 'none' | 'ok' | 'broken' = 'none'
  /**
   * Damaged ranges readers step over (damage.ts), sorted and disjoint; undefined when there
   * are none, so the read path's check costs one comparison.
   */
  holes: Hole[] | undefined = undefined
  /**
   * Every record was checked (checksums) since the store opened, or written by it: reads need
   * no checks. False for sealed segments taken at their index's word until the scrub runs.
   */
  verified = true
  /** Damaged ranges `meta repair` acknowledged (`.damage.json`): logged at info, not warn. */
  acknowledged: Hole[] | undefined = undefined

  constructor(
    /** Absolute log offset of the segment's first byte. */
    readonly start: number,
    dir: string,
    /** Bytes of the segment that belong to the log (the file size once recovered). */
    public size: number,
  ) {
    this.file = new CachedFile(join(dir, segmentFileName(start)))
    this.indexFile = new CachedFile(join(dir, indexFileName(start)))
  }

  /** Offset after the segment's last byte. */
  get end(): number {
    return this.start + this.size
  }
}

/**
 * Index of the segment holding `offset` in `segments` (sorted by start, contiguous): the
 * last one whose start is <= offset. The caller checks the range first.
 */
export function findSegmentIndex(segments: ReadonlyArray<{readonly start: number}>, offset: number): number {
  let lo = 0
  let hi = segments.length - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1
    if (segments[mid].start <= offset) lo = mid
    else hi = mid - 1
  }
  return lo
}
