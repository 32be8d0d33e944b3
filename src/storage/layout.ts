/**
 * Every on-disk name and format constant of the store, in one place (STYLE 5).
 *
 *   <dataPath>/<topic>-<partition>/<start offset, 20+ digits>.meta   segment (MetaQ's format)
 *   <dataPath>/<topic>-<partition>/<start offset, 20+ digits>.idx    side index of that segment
 *
 * A partition directory name splits on its LAST '-' (topics may contain '-'). Segment names
 * are the absolute byte offset of the segment's first byte, zero-padded to at least 20
 * digits. Only `*.meta` files are segments: MetaQ's archived `*.meta.arc` / `*.meta.zip`,
 * our index files and anything else are not.
 *
 * Side index file (format version 1), all integers big-endian:
 *
 *   header  16 bytes: magic u32 | version u32 | interval bytes u32 | entry bytes u32
 *   entry   24 bytes: position u64 | count u64 | max timestamp u64
 *
 * `position` is relative to the segment start and is a record boundary; `count` is the
 * number of messages in the segment before `position`; `max timestamp` is the largest
 * message timestamp (ms since the Unix epoch, from the id) of those messages, 0 when none.
 * Retention (spec §2.7) leaves MetaQ's archive names behind in the partition directory:
 * `<start>.meta.arc` (policy `archive,<N>`, the segment renamed) and `<start>.meta.zip`
 * (`archive,<N>,true`, a zip holding `<start>.meta`), written as `<start>.meta.zip.tmp` first.
 *
 * At the top of a data directory, besides partition directories:
 *
 *   <dataPath>/.meta.lock                               the holder of the directory (data-dir-lock.ts)
 *   <dataPath>/__meta_state/closed-partitions.json      partitions closed by `meta partitions close`
 *   <dataPath>/__meta_offsets/                          standalone groups' committed offsets
 *
 * An entry exists for the first record and then for the first record at least
 * INDEX_INTERVAL_BYTES after the previous entry; a sealed (non-last) segment ends with an
 * entry whose position is the segment size (its totals).
 */

/** Suffix of a segment file. */
export const SEGMENT_SUFFIX = '.meta'
/** Suffix added to a segment file archived by retention (MetaQ's `archive` policy). */
export const ARCHIVE_SUFFIX = '.arc'
/** Suffix added to a segment file zipped by retention (MetaQ's `archive,<N>,true` policy). */
export const ZIP_ARCHIVE_SUFFIX = '.zip'
/** Suffix of a zip archive while it is written (renamed to ZIP_ARCHIVE_SUFFIX when complete). */
export const ZIP_TEMP_SUFFIX = '.zip.tmp'
/** The data directory's lock file (data-dir-lock.ts). */
export const LOCK_FILE_NAME = '.meta.lock'
/** Directory of the broker's own state files at the top of the data directory. */
export const STATE_DIR_NAME = '__meta_state'
/** Closed partitions, in STATE_DIR_NAME: `{"version": 1, "closed": {"<topic>": [0, 2]}}`. */
export const CLOSED_PARTITIONS_FILE_NAME = 'closed-partitions.json'
/** Suffix of a segment's side index file. */
export const INDEX_SUFFIX = '.idx'
/** Minimum digits of a segment's start offset in its file name. */
export const SEGMENT_NAME_DIGITS = 20
/** A segment file name: start offset (20+ digits) and the suffix. */
export const SEGMENT_NAME_PATTERN = /^(\d{20,})\.meta$/
/** A partition directory name: topic, then the partition number after the last '-'. */
export const PARTITION_DIR_PATTERN = /^(.+)-(\d+)$/

/** Side index magic, "MQIX". */
export const INDEX_MAGIC = 0x4d514958
/** Side index format version written by this code. */
export const INDEX_VERSION = 1
/** Bytes of the side index header. */
export const INDEX_HEADER_BYTES = 16
/** Bytes of one side index entry. */
export const INDEX_ENTRY_BYTES = 24
/** Log bytes between two side index entries. */
export const INDEX_INTERVAL_BYTES = 4096

/** Bytes read per step while scanning a segment (recovery, index rebuild). */
export const SCAN_CHUNK_BYTES = 1024 * 1024
/** A record longer than this is treated as damage by the scanner (bounds its buffer). */
export const SCAN_MAX_RECORD_BYTES = 64 * 1024 * 1024
/** Partitions recovered at once when the store opens. */
export const RECOVERY_CONCURRENCY = 16

/** The file name of the segment starting at `start`. */
export function segmentFileName(start: number): string {
  return `${String(start).padStart(SEGMENT_NAME_DIGITS, '0')}${SEGMENT_SUFFIX}`
}

/** Whether a partition directory entry is a segment archived by retention (`.meta.arc`, `.meta.zip` or a zip being written). */
export function isArchivedSegmentName(name: string): boolean {
  return /^\d{20,}\.meta\.(arc|zip|zip\.tmp)$/.test(name)
}

/** The file name of the side index of the segment starting at `start`. */
export function indexFileName(start: number): string {
  return `${String(start).padStart(SEGMENT_NAME_DIGITS, '0')}${INDEX_SUFFIX}`
}

/** The start offset named by a segment file name, or undefined when it is not a segment. */
export function parseSegmentFileName(name: string): number | undefined {
  const match = SEGMENT_NAME_PATTERN.exec(name)
  if (match === null) return undefined
  const start = Number(match[1])
  return Number.isSafeInteger(start) ? start : undefined
}

/** The directory name of a partition. */
export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`
}

/** Topic and partition named by a directory, or undefined when the name does not match. */
export function parsePartitionDirName(name: string): {topic: string; partition: number} | undefined {
  const match = PARTITION_DIR_PATTERN.exec(name)
  if (match === null) return undefined
  const partition = Number(match[2])
  return Number.isSafeInteger(partition) ? {topic: match[1], partition} : undefined
}
