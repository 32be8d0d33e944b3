/**
 * The storage engine's public types. The broker talks to storage only through these.
 *
 * Glossary: an *offset* is always a byte position in a partition log (MetaQ's meaning);
 * a number of messages is a *count*. A *segment* is one `<20-digit start offset>.meta` file.
 */
import type {MetaError} from '../protocol/errors.js'

/**
 * Flush policy and layout of one topic (docs/protocol.md#flush-policy,
 * docs/configuration.md#system).
 */
export interface TopicStorageConfig {
  /** Root directory; the partition's directory is `<dataPath>/<topic>-<partition>`. */
  dataPath: string
  /**
   * > 0: fdatasync after more than this many unflushed messages (or when unflushIntervalMs
   * elapsed), acknowledging puts after the write. <= 0: group commit, acknowledging puts only
   * after an fdatasync that covers them.
   */
  unflushThreshold: number
  /** Max ms between fdatasyncs in threshold mode; also the periodic flush timer. */
  unflushIntervalMs: number
  /** Roll to a new segment once the current one reaches this many bytes. */
  maxSegmentBytes: number
}

/**
 * Called once per append when its outcome is known: after the bytes are written (threshold
 * mode) or after the fdatasync that covers them (group commit). `err` is a MetaError
 * (DISK_FULL, STORAGE_ERROR) when nothing was stored.
 */
export type AppendCallback = (err: MetaError | null) => void

/** Outcome of a read. */
export type ReadResult =
  /**
   * `data` holds raw log bytes starting at the requested offset (may end mid-record). When
   * it is a view of the tail cache, `release` may be called once `data` is no longer used,
   * so that its memory can be reused (tail-cache.ts); not calling it is always safe.
   */
  | {readonly kind: 'data'; readonly data: Buffer; readonly release?: () => void}
  /** The offset is below the first segment; retry from `offset` (get → 301). */
  | {readonly kind: 'below'; readonly offset: number}
  /** The offset is at or past the end of the log; `end` is the current end (get → 404/301). */
  | {readonly kind: 'end'; readonly end: number}
  /** The offset lies in a damaged range; the next readable record is at `offset` (get → 301). */
  | {readonly kind: 'damaged'; readonly offset: number}

/** Point-in-time facts about a partition (stats, admin commands). */
export interface PartitionInfo {
  topic: string
  partition: number
  /** First readable offset (start of the first segment). */
  minOffset: number
  /** End of the written log: the offset the next message will get. */
  maxOffset: number
  /** Total bytes held on disk across segments. */
  sizeBytes: number
  /** Messages in the log (exact: counted per segment by the side index and by appends). */
  messageCount: number
  segmentCount: number
  /** Messages written but not yet fdatasynced. */
  unflushedCount: number
  /** Time of the last append (ms since the Unix epoch), or of the newest file when none. */
  lastAppendMs: number
  /** Damaged ranges readers step over (found since the store opened). */
  damagedRanges: number
  /** Bytes in those ranges. */
  damagedBytes: number
}

/**
 * A partition log as the store context hands it back to the store (StoreContext.queueWrite,
 * rolled). PartitionLog implements it; naming only this keeps context.ts from importing
 * partition-log.ts, which imports everything that imports the context.
 */
export interface StoreLog {
  readonly topic: string
  readonly partition: number
  /** Write the queued batch; true when bytes were written. */
  writePending(): boolean
}
