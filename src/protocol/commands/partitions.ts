/**
 * partitions — meta extension: how many partitions a topic has on this broker, so a client
 * without ZooKeeper can spread messages itself (round-robin, hash) instead of sending -1.
 *
 *   partitions <topic> <opaque>\r\n
 *
 * Reply: `result 200` with body `<numPartitions>`; 500 when the broker does not accept the
 * topic. MetaQ brokers do not know this command (clients ask only brokers that list it in
 * `stats meta-capabilities`).
 */
import type {OutputBuffer} from '../output-buffer.js'
import {nameField, opaqueField, tokenCount} from '../tokens.js'

export interface PartitionsCommand {
  readonly type: 'partitions'
  topic: string
  opaque: number
}

export function parsePartitions(tokens: string[]): {frame: PartitionsCommand; bodyLength: number} {
  tokenCount('partitions', tokens, [3])
  return {
    frame: {type: 'partitions', topic: nameField('partitions', 'topic', tokens[1]), opaque: opaqueField('partitions', tokens[2])},
    bodyLength: 0,
  }
}

export function encodePartitions(out: OutputBuffer, cmd: Omit<PartitionsCommand, 'type'>): void {
  out.writeAscii(`partitions ${cmd.topic} ${cmd.opaque}\r\n`)
}
