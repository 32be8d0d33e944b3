/**
 * Storage test support: a store in a temp dir (closed after the test), promise wrappers
 * around the callback API and hand-built MetaQ records. Faults go through the store's own
 * seam, test/helpers/fault-file-ops.ts (the only fake the storage tests use).
 */
import {readdirSync} from 'node:fs'
import {MessageStore, type MessageStoreOptions, type PartitionLog} from '../../src/storage/index.js'
import type {TopicStorageConfig} from '../../src/storage/index.js'
import {checksum} from '../../src/protocol/crc.js'
import type {Cleanup} from '../helpers/index.js'

export const THRESHOLD_DEFAULTS = {unflushThreshold: 1000, unflushIntervalMs: 10_000, maxSegmentBytes: 1024 * 1024}

/** Open a store on `dataPath` whose topics all use `config`; closed after the test. */
export async function openStore(
  t: Cleanup,
  dataPath: string,
  config: Partial<TopicStorageConfig> = {},
  options: Partial<MessageStoreOptions> = {},
): Promise<MessageStore> {
  const store = await MessageStore.open({
    dataPath,
    topicConfig: () => ({dataPath, ...THRESHOLD_DEFAULTS, ...config}),
    ...options,
  })
  t.after(() => store.close())
  return store
}

/** Append one message and resolve with its offset once its callback reports success. */
export function put(log: PartitionLog, data: string | Buffer, id = 1n, flag = 0): Promise<number> {
  const payload = typeof data === 'string' ? Buffer.from(data) : data
  return new Promise((resolve, reject) => {
    const offset = log.append(id, flag, payload, checksum(payload), (err) => (err ? reject(err) : resolve(offset)))
  })
}

/** Append many messages in one turn; resolves with their offsets when all succeeded. */
export function putMany(log: PartitionLog, items: Array<string | Buffer>, firstId = 1n): Promise<number[]> {
  return Promise.all(items.map((item, i) => put(log, item, firstId + BigInt(i))))
}

/** A MetaQ record built byte by byte (length | crc | id | flag | payload, big-endian). */
export function handRecord(id: bigint, flag: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(20)
  header.writeUInt32BE(payload.length, 0)
  header.writeUInt32BE(checksum(payload), 4)
  header.writeBigInt64BE(id, 8)
  header.writeUInt32BE(flag, 16)
  return Buffer.concat([header, payload])
}

/** Read [offset, end) of the log, across segments, as one buffer. */
export async function readAll(log: PartitionLog, offset = log.minOffset, end = log.maxOffset): Promise<Buffer> {
  const parts: Buffer[] = []
  while (offset < end) {
    const result = await log.read(offset, end - offset)
    if (result.kind !== 'data') throw new Error(`expected data at ${offset}, got ${JSON.stringify(result)}`)
    parts.push(result.data)
    offset += result.data.length
  }
  return Buffer.concat(parts)
}

/** Sorted file names of a directory. */
export function files(dir: string): string[] {
  return readdirSync(dir).sort()
}

/** Open file descriptors of this process. */
export function openFdCount(): number {
  return readdirSync('/proc/self/fd').length
}
