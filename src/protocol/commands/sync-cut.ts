/**
 * sync-cut — meta extension (docs/protocol.md): a synchronous master orders its meta sync slave
 * to cut its log of one partition back to the fork point, the end of the last whole record
 * both logs hold byte for byte. Sent only to a slave whose `stats meta-capabilities` says
 * `sync_cut true`, and only while puts to that partition are refused.
 *
 *   sync-cut <topic> <partition> <offset> <end> <opaque>\r\n
 *
 * `offset` is the fork point (a record boundary of the slave's log); `end` is where the master
 * saw the slave's log end: the slave cuts only when its log still ends there, so a slave that
 * appended meanwhile is compared again rather than cut blind. The slave keeps the cut bytes in
 * `<offset>.meta.cut-<ms>` beside its segments.
 *
 * Reply: `result 200` with body `<partition> <offset> <messages> <bytes>` (the slave's new end
 * and what it cut); 500 SYNC_OFFSET_MISMATCH naming the slave's end (as sync-batch's, read by
 * parseSyncEnd) when its log ends elsewhere; 400 INVALID_ARGUMENT when `offset` is past `end`
 * or not a record boundary of the slave's log.
 *
 * The broker dispatches the frame with sync-batch's (`type: 'sync-batch'`, `cutEnd` set): both
 * are orders of the sync link, served by the same slave handler.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, longField, nameField, opaqueField, tokenCount} from '../tokens.js'
import type {SyncBatchCommand} from './sync-batch.js'

export interface SyncCutOrder {
  topic: string
  partition: number
  /** The fork point: the slave's new end. */
  offset: number
  /** Where the master saw the slave's log end. */
  end: number
  opaque: number
}

const EMPTY = Buffer.alloc(0)

export function parseSyncCut(tokens: string[]): {frame: SyncBatchCommand; bodyLength: number} {
  tokenCount('sync-cut', tokens, [6])
  const offset = longField('sync-cut', 'offset', tokens[3])
  const frame: SyncBatchCommand = {
    type: 'sync-batch',
    topic: nameField('sync-cut', 'topic', tokens[1]),
    partition: canonicalIntField('sync-cut', 'partition', tokens[2]),
    offset,
    segmentStart: offset,
    count: 0,
    opaque: opaqueField('sync-cut', tokens[5]),
    body: EMPTY,
    cutEnd: longField('sync-cut', 'end', tokens[4]),
  }
  return {frame, bodyLength: 0}
}

export function encodeSyncCut(out: OutputBuffer, order: SyncCutOrder): void {
  out.writeAscii(`sync-cut ${order.topic} ${order.partition} ${order.offset} ${order.end} ${order.opaque}\r\n`)
}

/** What the slave answered a sync-cut with: its new end and what it cut. */
export interface SyncCutReply {
  end: number
  messages: number
  bytes: number
}

export function parseSyncCutReply(body: string): SyncCutReply | undefined {
  const match = /^\d+ (\d+) (\d+) (\d+)$/.exec(body)
  return match === null ? undefined : {end: Number(match[1]), messages: Number(match[2]), bytes: Number(match[3])}
}
