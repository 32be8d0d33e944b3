/**
 * Asynchronous replication — meta extensions between a meta master and a meta slave
 * (docs/protocol.md#replication). New command names: they cannot clash with a topic name
 * (a topic is never token 0), and MetaQ brokers never see them (a slave asks only a broker
 * that lists `replicate true` in `stats meta-capabilities`).
 *
 *   replicate <topic> <partition> <offset> <maxSize> <maxWaitMs> <opaque>\r\n
 *
 * A long-poll get for a slave. Reply: `value <n> <opaque>` whose body is a 24-byte header —
 * the start of the master's segment holding `offset`, the master's end (written) offset and
 * its first offset, three big-endian int64 — followed by the raw log bytes from `offset`,
 * which never cross a segment boundary (may end mid-record). Every other answer is get's:
 * 301 + the first offset when `offset` is below the log (retention passed it), 301 + the end
 * when past it, 404 when nothing arrived within `maxWaitMs` (or no such partition), 403 when
 * the partition is closed.
 *
 *   slave-status <opaque>\r\n
 *
 * Reply: `result 200` + the JSON {@link SlaveStatusReport} of a slave; on a broker that is not
 * a slave `404` with code NOT_A_SLAVE.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, intField, lengthField, longField, nameField, opaqueField, tokenCount} from '../tokens.js'
import {arrayOf, booleanOf, integerOf, member, oneOf, optional, parseJsonBody, stringOf} from '../json-body.js'

export interface ReplicateCommand {
  readonly type: 'replicate'
  topic: string
  partition: number
  offset: number
  maxSize: number
  maxWaitMs: number
  opaque: number
}

export interface SlaveStatusCommand {
  readonly type: 'slave-status'
  opaque: number
}

/** Bytes before the log data in a `replicate` reply's body. */
const REPLICA_HEADER_BYTES = 24

export function parseReplicate(tokens: string[]): {frame: ReplicateCommand; bodyLength: number} {
  tokenCount('replicate', tokens, [7])
  return {
    frame: {
      type: 'replicate',
      topic: nameField('replicate', 'topic', tokens[1]),
      partition: canonicalIntField('replicate', 'partition', tokens[2]),
      offset: longField('replicate', 'offset', tokens[3]),
      maxSize: intField('replicate', 'maxSize', tokens[4]),
      maxWaitMs: lengthField('replicate', 'maxWaitMs', tokens[5]),
      opaque: opaqueField('replicate', tokens[6]),
    },
    bodyLength: 0,
  }
}

export function encodeReplicate(out: OutputBuffer, cmd: Omit<ReplicateCommand, 'type'>): void {
  out.writeAscii(`replicate ${cmd.topic} ${cmd.partition} ${cmd.offset} ${cmd.maxSize} ${cmd.maxWaitMs} ${cmd.opaque}\r\n`)
}

export function parseSlaveStatus(tokens: string[]): {frame: SlaveStatusCommand; bodyLength: number} {
  tokenCount('slave-status', tokens, [2])
  return {frame: {type: 'slave-status', opaque: opaqueField('slave-status', tokens[1])}, bodyLength: 0}
}

export function encodeSlaveStatus(out: OutputBuffer, opaque: number): void {
  out.writeAscii(`slave-status ${opaque}\r\n`)
}

/** The header of a `replicate` reply. */
interface ReplicaHeader {
  /** Start of the master's segment holding the requested offset. */
  segmentStart: number
  /** The master's end of log when it answered. */
  masterEnd: number
  /** The master's first offset. */
  masterMin: number
}

export function writeReplicaHeader(header: ReplicaHeader): Buffer {
  const buf = Buffer.allocUnsafe(REPLICA_HEADER_BYTES)
  buf.writeBigInt64BE(BigInt(header.segmentStart), 0)
  buf.writeBigInt64BE(BigInt(header.masterEnd), 8)
  buf.writeBigInt64BE(BigInt(header.masterMin), 16)
  return buf
}

/** The header and the log bytes of a `replicate` reply body (undefined when it is too short to be one). */
export function readReplicaBody(body: Buffer): {header: ReplicaHeader; data: Buffer} | undefined {
  if (body.length < REPLICA_HEADER_BYTES) return undefined
  return {
    header: {
      segmentStart: Number(body.readBigInt64BE(0)),
      masterEnd: Number(body.readBigInt64BE(8)),
      masterMin: Number(body.readBigInt64BE(16)),
    },
    data: body.subarray(REPLICA_HEADER_BYTES),
  }
}

/** One replicated partition, as `slave-status` reports it. */
export interface ReplicaPartitionStatus {
  topic: string
  partition: number
  /** The master's end offset at the last answer (-1 before the first). */
  masterEnd: number
  /** This slave's end offset. */
  slaveEnd: number
  /** masterEnd - slaveEnd (0 when unknown). */
  lagBytes: number
  /** Whole messages in the master's log past the slave's end, as of the last answer (-1 when not known). */
  lagMessages: number
  /** When the last fetch was answered (ms since the epoch; 0 = never). */
  lastFetchMs: number
  /** `replicating`, `waiting` (no answer yet, or the master is unreachable), `stopped` (the slave's log is ahead of the master's: see error). */
  state: 'replicating' | 'waiting' | 'stopped'
  error?: string
}

/**
 * The JSON body of `slave-status` (MetaQ's slave-status attributes plus meta's per-partition
 * detail: docs/protocol.md#slave-status).
 */
export interface SlaveStatusReport {
  brokerId: number
  slaveId: number
  slaveGroup: string
  /** The master's address, `host:port`. */
  master: string
  /** Is the master answering right now. */
  masterConnected: boolean
  /** `Subscriber handler` / `Replicate runner`: running until the broker stops. */
  running: boolean
  /** Answered at (ms since the epoch). */
  nowMs: number
  partitions: ReplicaPartitionStatus[]
}

const REPLICA_STATES = ['replicating', 'waiting', 'stopped'] as const

/** The slave-status reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeSlaveStatus(body: Buffer | string): SlaveStatusReport {
  const root = parseJsonBody(body, 'slave-status reply')
  return {
    brokerId: integerOf(member(root, 'brokerId')),
    slaveId: integerOf(member(root, 'slaveId')),
    slaveGroup: stringOf(member(root, 'slaveGroup')),
    master: stringOf(member(root, 'master')),
    masterConnected: booleanOf(member(root, 'masterConnected')),
    running: booleanOf(member(root, 'running')),
    nowMs: integerOf(member(root, 'nowMs'), 0),
    partitions: arrayOf(member(root, 'partitions'), (p): ReplicaPartitionStatus => {
      const error = optional(member(p, 'error'), stringOf)
      return {
        topic: stringOf(member(p, 'topic')),
        partition: integerOf(member(p, 'partition'), 0),
        masterEnd: integerOf(member(p, 'masterEnd'), -1),
        slaveEnd: integerOf(member(p, 'slaveEnd'), 0),
        lagBytes: integerOf(member(p, 'lagBytes')),
        lagMessages: integerOf(member(p, 'lagMessages'), -1),
        lastFetchMs: integerOf(member(p, 'lastFetchMs'), 0),
        state: oneOf(member(p, 'state'), REPLICA_STATES),
        ...(error === undefined ? {} : {error}),
      }
    }),
  }
}
