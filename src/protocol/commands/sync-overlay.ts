/**
 * sync-overlay — meta extension (docs/protocol.md): a synchronous master sends its topic
 * overlay (the topics created, changed and deleted online, broker/topic-overlay.ts) to its
 * meta sync slave, which takes it as its own. Sent only to a slave whose
 * `stats meta-capabilities` says `sync_overlay true`: when the link (re)connects, before any
 * partition is brought up to date, and after every change of the master's overlay.
 *
 *   sync-overlay <len> <opaque>\r\n<len bytes>
 *
 * The body is the overlay as `stats meta-topic-overlay` answers it (`{"version": 1, "topics":
 * {…}}`). Reply: `result 200` with body `<topics>` (how many topics the overlay holds); 500
 * CONFIG_INVALID when the slave cannot apply it (nothing changed there), DECODE_ERROR when the
 * body is not an overlay.
 *
 * The broker dispatches the frame with sync-batch's (`type: 'sync-batch'`, `overlay` set):
 * both are orders of the sync link, served by the same slave handler.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {lengthField, opaqueField, tokenCount} from '../tokens.js'
import type {SyncBatchCommand} from './sync-batch.js'

const EMPTY = Buffer.alloc(0)

export function parseSyncOverlay(tokens: string[]): {frame: SyncBatchCommand; bodyLength: number} {
  tokenCount('sync-overlay', tokens, [3])
  const frame: SyncBatchCommand = {
    type: 'sync-batch',
    topic: '-',
    partition: 0,
    offset: 0,
    segmentStart: 0,
    count: 0,
    opaque: opaqueField('sync-overlay', tokens[2]),
    body: EMPTY,
    overlay: true,
  }
  return {frame, bodyLength: lengthField('sync-overlay', 'length', tokens[1])}
}

export function encodeSyncOverlay(out: OutputBuffer, json: Buffer, opaque: number): void {
  out.writeAscii(`sync-overlay ${json.length} ${opaque}\r\n`)
  out.writeBytes(json)
}
