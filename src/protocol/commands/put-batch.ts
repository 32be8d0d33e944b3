/**
 * put-batch — meta extension (docs/protocol.md): many messages for one partition in one frame.
 * A MetaQ 1.4 client never sends it; brokers that serve it say `batch_put true` in
 * `stats meta-capabilities`, and clients use it only then.
 *
 *   put-batch <topic> <partition> <count> <len> <opaque>\r\n<len bytes>
 *
 * The body is `count` records in MetaQ's stored format (message-set.ts): length, checksum
 * (CRC of the payload, masked as always), id (0: the broker assigns ids), flag, payload. The
 * broker checks every record and checksum, writes the ids in place and appends the batch as
 * one contiguous run of the partition log: all of it or none of it.
 *
 * Reply: `result 200` with body `<partition> <offset> <runs>`, where `offset` is the byte
 * offset of the first record (record i is at offset + the sizes of the records before it)
 * and `runs` lists `<index>:<id>` for record 0 and for every record whose id is not the
 * previous id + 1 (ids are consecutive within a run), e.g. `0 4096 0:7205759403792793600`.
 * Errors: the same result codes and bodies as put (403 closed, 500 with MetaQ's failure
 * text), for the whole batch.
 *
 * Transactional form (docs/protocol.md): `put-batch <topic> <partition> <count> <len> <txKey> <opaque>`
 * puts the records into the transaction (journaled, appended at commit); the partition must
 * be explicit and the reply is `<partition> -1 <runs>`.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {canonicalIntField, lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'

export interface PutBatchCommand {
  readonly type: 'put-batch'
  topic: string
  /** A partition index, or -1: the broker picks one for the whole batch. */
  partition: number
  count: number
  /** Transaction key (`TX:…`, `XID:…`) or null outside a transaction. */
  txKey: string | null
  opaque: number
  /** `count` stored-format records (ids 0). */
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parsePutBatch(tokens: string[]): {frame: PutBatchCommand; bodyLength: number} {
  tokenCount('put-batch', tokens, [6, 7])
  const txKey = tokens.length === 7 && tokens[5] !== 'null' ? nameField('put-batch', 'transaction key', tokens[5]) : null
  const frame: PutBatchCommand = {
    type: 'put-batch',
    topic: nameField('put-batch', 'topic', tokens[1]),
    partition: canonicalIntField('put-batch', 'partition', tokens[2]),
    count: lengthField('put-batch', 'count', tokens[3]),
    txKey,
    opaque: opaqueField('put-batch', tokens[tokens.length - 1]),
    body: EMPTY,
  }
  return {frame, bodyLength: lengthField('put-batch', 'length', tokens[4])}
}

const PREFIX_CACHE_MAX = 1024
const prefixes = new Map<string, Buffer>()

/**
 * The header line of a batch; the caller writes the `bodyLength` bytes of records right
 * after it into the same buffer.
 */
export function writePutBatchHeader(
  out: OutputBuffer,
  topic: string,
  partition: number,
  count: number,
  bodyLength: number,
  opaque: number,
  txKey: string | null = null,
): void {
  let prefix = prefixes.get(topic)
  if (prefix === undefined) {
    if (prefixes.size >= PREFIX_CACHE_MAX) prefixes.clear()
    prefix = Buffer.from(`put-batch ${topic} `, 'latin1')
    prefixes.set(topic, prefix)
  }
  out.writeBytes(prefix)
  out.writeInt(partition)
  out.writeByte(0x20)
  out.writeInt(count)
  out.writeByte(0x20)
  out.writeInt(bodyLength)
  out.writeByte(0x20)
  if (txKey !== null) out.writeAscii(`${txKey} `)
  out.writeInt(opaque)
  out.writeCrlf()
}

/** A parsed reply body: where the batch went and the id runs. */
export interface PutBatchReply {
  partition: number
  offset: number
  /** Record index where each run of consecutive ids starts (runStarts[0] === 0). */
  runStarts: number[]
  /** The id of the record at each run start. */
  runIds: bigint[]
}

/** Parse `<partition> <offset> <index>:<id>…`; undefined when malformed. */
export function parsePutBatchReply(text: string): PutBatchReply | undefined {
  const tokens = text.split(' ')
  if (tokens.length < 3) return undefined
  const partition = Number(tokens[0])
  const offset = Number(tokens[1])
  if (!Number.isInteger(partition) || !Number.isInteger(offset)) return undefined
  const runStarts: number[] = []
  const runIds: bigint[] = []
  for (let i = 2; i < tokens.length; i++) {
    const colon = tokens[i].indexOf(':')
    const index = Number(tokens[i].slice(0, colon))
    const id = tokens[i].slice(colon + 1)
    if (colon <= 0 || !Number.isInteger(index) || !/^-?\d{1,19}$/.test(id)) return undefined
    if (runStarts.length === 0 ? index !== 0 : index <= runStarts[runStarts.length - 1]) return undefined
    runStarts.push(index)
    runIds.push(BigInt(id))
  }
  return {partition, offset, runStarts, runIds}
}
