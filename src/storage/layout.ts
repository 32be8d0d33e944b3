/**
 * Every on-disk name and format constant of the store, in one place (STYLE 5).
 *
 *   <dataPath>/<topic>-<partition>/<start offset, 20 digits>.meta   segment (MetaQ's format)
 *   <dataPath>/<topic>-<partition>/<start offset, 20 digits>.idx    side index of that segment
 *
 * A partition directory name splits on its LAST '-' (topics may contain '-'). Segment names
 * are the absolute byte offset of the segment's first byte, zero-padded to 20 digits (a
 * longer name would need an offset above 2^63). Every other file in a partition directory is
 * classified by {@link classifyPartitionFile}, the one list of what meta writes there:
 *
 *   <20 digits>.meta.arc | .meta.zip   a segment archived by retention (MetaQ's names;
 *                                      `.meta.zip.tmp` while a zip is written)
 *   <20 digits>.damaged                log bytes starting at that offset, cut out of the log
 *                                      or copied from a damaged range: kept aside, never read
 *   <20 digits>.damage.json            damaged ranges of that segment acknowledged by
 *                                      `meta repair` (JSON, format below)
 *   <20 digits>.meta.cut-<epoch ms>    log bytes from that offset to the old end, cut off a
 *                                      replica's log because its master does not hold them
 *                                      (a divergent tail, MessageStore.cutTail): kept aside,
 *                                      never read
 *   <any name>.aside                   a file `meta repair` set aside (e.g. `junk.meta.aside`)
 *   <any name>.tmp                     a file being written atomically (left by a crash)
 *
 * A `.meta` file whose name is not a segment name is damage: the partition is quarantined
 * (recovery.ts), because loading around it could reuse its offsets. Anything else unknown is
 * reported once at open and otherwise left alone.
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
 *   <dataPath>/__meta_state/topic-deletes.json          topic deletes begun and not finished
 *   <root>/__meta_state/deleted-topics/                 partition directories of a topic being deleted
 *   <dataPath>/__meta_offsets/                          standalone groups' committed offsets
 *
 * An entry exists for the first record and then for the first record at least
 * INDEX_INTERVAL_BYTES after the previous entry; a sealed (non-last) segment ends with an
 * entry whose position is the segment size (its totals).
 */

/** Suffix of a segment file. */
const SEGMENT_SUFFIX = '.meta'
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
/** Topic deletes begun and not finished, in STATE_DIR_NAME: `{"version": 1, "topics": {"<topic>": {"local": true, "zookeeper": false}}}` (broker/topic-deletions.ts). */
export const TOPIC_DELETES_FILE_NAME = 'topic-deletes.json'
/** Topics created or changed online, in STATE_DIR_NAME: `{"version": 1, "topics": {"<topic>": {"<server.ini key>": "<value>"}}}` (broker/topic-overlay.ts). */
export const TOPIC_OVERLAY_FILE_NAME = 'topic-overlay.json'
/** Suffix of a segment's side index file. */
const INDEX_SUFFIX = '.idx'
/** Suffix of log bytes kept aside (cut from the log, or copied from a damaged range). */
const DAMAGED_SUFFIX = '.damaged'
/** Suffix of a segment's acknowledged damaged ranges (written by `meta repair`). */
const DAMAGE_MAP_SUFFIX = '.damage.json'
/** Infix of a replica's divergent tail cut off its log: `<20 digits>.meta.cut-<epoch ms>`. */
const CUT_INFIX = '.meta.cut-'
/** Suffix `meta repair` adds to a file it sets aside. */
export const ASIDE_SUFFIX = '.aside'
/** Suffix of a file being written (renamed over its final name when complete). */
export const TEMP_SUFFIX = '.tmp'
/** Digits of a segment's start offset in its file name. */
const SEGMENT_NAME_DIGITS = 20
/** A segment file name: start offset (20 digits) and the suffix. */
const SEGMENT_NAME_PATTERN = /^(\d{20})\.meta$/
/** A partition directory name: topic, then the partition number after the last '-'. */
const PARTITION_DIR_PATTERN = /^(.+)-(\d+)$/

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

/**
 * Resynchronising after a damaged record (resync.ts): a candidate record longer than this
 * (header included) is not considered, unless the store is told records can be longer.
 */
export const RESYNC_MAX_RECORD_BYTES = 4 * 1024 * 1024
/** Valid records (with a payload) that confirm a resynchronisation point. */
export const RESYNC_CONFIRM_RECORDS = 3
/** Default read rate of the background scrub of sealed segments. */
export const SCRUB_BYTES_PER_SECOND = 64 * 1024 * 1024

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

/** The name of the file keeping aside log bytes that started at `offset`. */
export function damagedFileName(offset: number): string {
  return `${String(offset).padStart(SEGMENT_NAME_DIGITS, '0')}${DAMAGED_SUFFIX}`
}

/** The name of the file keeping a divergent tail cut at `offset` at time `atMs`. */
export function cutFileName(offset: number, atMs: number): string {
  return `${String(offset).padStart(SEGMENT_NAME_DIGITS, '0')}${CUT_INFIX}${atMs}`
}

/** The name of the acknowledged-damage file of the segment starting at `start`. */
export function damageMapFileName(start: number): string {
  return `${String(start).padStart(SEGMENT_NAME_DIGITS, '0')}${DAMAGE_MAP_SUFFIX}`
}

/** What a file in a partition directory is (see the list at the top of this file). */
export type PartitionFile =
  /** `<20 digits>.meta`: a segment starting at `start`. */
  | {readonly kind: 'segment'; readonly start: number}
  /** `<20 digits>.idx`: the side index of the segment starting at `start`. */
  | {readonly kind: 'index'; readonly start: number}
  /** `<20 digits>.damage.json`: acknowledged damaged ranges of the segment at `start`. */
  | {readonly kind: 'damage-map'; readonly start: number}
  /** `<20 digits>.damaged`: log bytes that started at `offset`, kept aside. */
  | {readonly kind: 'damaged'; readonly offset: number}
  /** `<20 digits>.meta.arc`, `.meta.zip` (`.meta.zip.tmp`): archived by retention. */
  | {readonly kind: 'archive'}
  /** `<20 digits>.meta.cut-<ms>`: a replica's divergent tail from `offset`, cut off its log. */
  | {readonly kind: 'cut'; readonly offset: number}
  /** `*.aside`: set aside by `meta repair`. */
  | {readonly kind: 'aside'}
  /** `*.tmp`: an unfinished atomic write. */
  | {readonly kind: 'temp'}
  /**
   * Ends in `.meta` but is not a segment name (`junk.meta`, `525041.meta`). `start` is the
   * offset its digits name when it is all digits (`meta repair` can rename it).
   */
  | {readonly kind: 'bad-segment-name'; readonly start?: number}
  /** Anything else: reported, left alone. */
  | {readonly kind: 'unknown'}

const NUMBERED = /^(\d{20})(\.idx|\.damage\.json|\.damaged)$/
const NUMBERED_KINDS = {'.idx': 'index', '.damage.json': 'damage-map', '.damaged': 'damaged'} as const

/**
 * Classify one entry name of a partition directory. The one place that knows every name
 * meta writes there: add new kinds here (and to the list at the top of this file).
 */
export function classifyPartitionFile(name: string): PartitionFile {
  const start = parseSegmentFileName(name)
  if (start !== undefined) return {kind: 'segment', start}
  const numbered = NUMBERED.exec(name)
  if (numbered !== null && Number.isSafeInteger(Number(numbered[1]))) {
    const kind = NUMBERED_KINDS[numbered[2] as keyof typeof NUMBERED_KINDS]
    const at = Number(numbered[1])
    return kind === 'damaged' ? {kind, offset: at} : {kind, start: at}
  }
  const cut = /^(\d{20})\.meta\.cut-\d+$/.exec(name)
  if (cut !== null && Number.isSafeInteger(Number(cut[1]))) return {kind: 'cut', offset: Number(cut[1])}
  if (isArchivedSegmentName(name)) return {kind: 'archive'}
  if (name.endsWith(ASIDE_SUFFIX)) return {kind: 'aside'}
  if (name.endsWith(TEMP_SUFFIX)) return {kind: 'temp'}
  if (name.endsWith(SEGMENT_SUFFIX)) {
    const digits = /^(\d+)\.meta$/.exec(name)
    const named = digits === null ? undefined : Number(digits[1])
    return named !== undefined && Number.isSafeInteger(named) ? {kind: 'bad-segment-name', start: named} : {kind: 'bad-segment-name'}
  }
  return {kind: 'unknown'}
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
