/**
 * sync — master → synchronous slave replication of one message (docs/protocol.md#sync).
 *
 *   sync <topic> <partition> <len> <flag> <msgId> <checksum> <opaque>\r\n<body>   (>= 1.4.4)
 *   sync <topic> <partition> <len> <flag> <msgId> <opaque>\r\n<body>              (older)
 *
 * The slave stores the message with the master's id; the reply is the same as for put.
 * A broker that is not a sync slave answers 503.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, badToken, intField, lengthField, nameField, opaqueField, parseBigIntToken, tokenCount} from '../tokens.js'
import {NO_CHECKSUM} from './put.js'

/** MetaQ's internal topic a sync master's test syncs write to (`-Dmetaq.slave.status.test.topic`). */
export const SLAVE_STATUS_TEST_TOPIC = '_metaq_slave_status_test'

export interface SyncCommand {
  readonly type: 'sync'
  topic: string
  partition: number
  flag: number
  msgId: bigint
  checksum: number
  opaque: number
  body: Buffer
}

export function parseSync(tokens: string[]): {frame: SyncCommand; bodyLength: number} {
  tokenCount('sync', tokens, [7, 8])
  const msgId = parseBigIntToken(tokens[5])
  if (msgId === undefined) throw badToken('sync', 'message id', tokens[5], 'a 64-bit integer')
  return {
    frame: {
      type: 'sync',
      topic: nameField('sync', 'topic', tokens[1]),
      partition: canonicalIntField('sync', 'partition', tokens[2]),
      flag: intField('sync', 'flag', tokens[4]),
      msgId,
      checksum: tokens.length === 8 ? intField('sync', 'checksum', tokens[6]) : NO_CHECKSUM,
      opaque: opaqueField('sync', tokens[tokens.length - 1]),
      body: Buffer.alloc(0),
    },
    bodyLength: lengthField('sync', 'length', tokens[3]),
  }
}

export function encodeSync(out: OutputBuffer, cmd: Omit<SyncCommand, 'type'>): void {
  out.writeAscii(`sync ${cmd.topic} ${cmd.partition} ${cmd.body.length} ${cmd.flag} ${cmd.msgId} ${cmd.checksum} ${cmd.opaque}\r\n`)
  out.writeBytes(cmd.body)
}
