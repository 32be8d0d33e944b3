/**
 * sync-batch — meta extension (docs/protocol.md): a synchronous master forwards one append
 * (a put, or a whole put-batch) to its meta sync slave in one frame. A MetaQ master never
 * sends it; a meta master sends it only to a slave whose `stats meta-capabilities` says
 * `sync_batch true`, and MetaQ's one-message `sync` (sync.ts) to any other.
 *
 *   sync-batch <topic> <partition> <offset> <segmentStart> <count> <len> <opaque>\r\n<len bytes>
 *
 * The body is `count` records in MetaQ's stored format (message-set.ts) exactly as the master
 * wrote them (its ids, flags, checksums). `offset` is where the first record starts in the
 * master's log: the slave appends the records only when its own log ends exactly there, so the
 * two logs stay byte-identical. `segmentStart` is the start of the master's segment holding
 * the records: the slave starts a new segment exactly when the master's starts at `offset`,
 * and never by its own maxSegmentSize, so both have the same segment files. A batch of 0
 * records (empty body) asks for the slave's end and appends nothing.
 *
 * Reply: `result 200` with body `<partition> <end>`: the slave's log end after the append.
 * When the slave's log does not end at `offset` it appends nothing and answers 500 with code
 * SYNC_OFFSET_MISMATCH and a body naming its end (`… ends at <end> …`, parseSyncEnd), from
 * which the master sends what the slave lacks. Other errors are put's.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, lengthField, longField, nameField, opaqueField, tokenCount} from '../tokens.js'

export interface SyncBatchCommand {
  readonly type: 'sync-batch'
  topic: string
  partition: number
  /** Offset of the first record in the master's log. */
  offset: number
  /** Start of the master's segment that holds the records (<= offset). */
  segmentStart: number
  count: number
  opaque: number
  /** `count` stored-format records with the master's ids. */
  body: Buffer
  /**
   * Set on a `sync-cut` order (sync-cut.ts), decoded into this frame type so that it reaches
   * the slave's sync handler: cut back to `offset` if the log ends at `cutEnd`. No records.
   */
  cutEnd?: number
  /** Set on a `sync-overlay` order (sync-overlay.ts): the body is the master's topic overlay. */
  overlay?: true
}

const EMPTY = Buffer.alloc(0)

export function parseSyncBatch(tokens: string[]): {frame: SyncBatchCommand; bodyLength: number} {
  tokenCount('sync-batch', tokens, [8])
  const frame: SyncBatchCommand = {
    type: 'sync-batch',
    topic: nameField('sync-batch', 'topic', tokens[1]),
    partition: canonicalIntField('sync-batch', 'partition', tokens[2]),
    offset: longField('sync-batch', 'offset', tokens[3]),
    segmentStart: longField('sync-batch', 'segmentStart', tokens[4]),
    count: lengthField('sync-batch', 'count', tokens[5]),
    opaque: opaqueField('sync-batch', tokens[7]),
    body: EMPTY,
  }
  return {frame, bodyLength: lengthField('sync-batch', 'length', tokens[6])}
}

export function encodeSyncBatch(out: OutputBuffer, cmd: Omit<SyncBatchCommand, 'type'>): void {
  out.writeAscii(`sync-batch ${cmd.topic} ${cmd.partition} ${cmd.offset} ${cmd.segmentStart} ${cmd.count} ${cmd.body.length} ${cmd.opaque}\r\n`)
  out.writeBytes(cmd.body)
}

/** The text of a SYNC_OFFSET_MISMATCH refusal (the slave's end is read back by parseSyncEnd). */
export function syncMismatchText(topic: string, partition: number, end: number, offset: number): string {
  return `the sync slave's log of ${topic}-${partition} ends at ${end}, not at ${offset} where the master's batch starts`
}

/** The slave's end named in a SYNC_OFFSET_MISMATCH body, or undefined. */
export function parseSyncEnd(text: string): number | undefined {
  const match = / ends at (\d+),/.exec(text)
  return match === null ? undefined : Number(match[1])
}
