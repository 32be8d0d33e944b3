/**
 * Where a replica's log parts from its master's: the longest common prefix, found by comparing the
 * replica's record at one of its record boundaries with the master's bytes at the same offset
 * (`replicate` with no wait). Message ids are unique, so a record that matches byte for byte means
 * both logs agree up to and including it; the first record that does not starts the divergent tail
 * (a former master's messages its slave never took: README.md#failover-beyond-metaq). The search
 * walks back from the end in doubling steps, then bisects: a divergent tail of n records costs
 * about 2·log2(n) round trips (under synchronous replication it is at most the puts that were in
 * flight).
 *
 * {@link cutDivergentTail} then cuts the replica's log there (MessageStore.cutTail), keeping
 * the cut bytes in a file beside the segments.
 */
import type {Logger} from '../../log.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../../protocol/message-set.js'
import {encodeReplicate, readReplicaBody} from '../../protocol/commands/replication.js'
import type {ResponseFrame} from '../../protocol/frames.js'
import type {OutputBuffer} from '../../protocol/output-buffer.js'
import type {CutResult, MessageStore, PartitionLog} from '../../storage/index.js'

/**
 * The master's bytes at `offset` (up to `bytes`), or: `end` when it holds nothing there (its
 * log ends at or before `offset`, or it has no such partition); `{below}` when its log starts
 * after `offset` (retention), with its first offset.
 */
export type MasterBytesAt = (offset: number, bytes: number) => Promise<Buffer | 'end' | {below: number}>

/**
 * The fork point: `{offset}` the first local byte the master does not hold the same (the log
 * end when the whole log is a prefix of the master's); `{below}` when the logs may part below
 * the master's first offset, where nothing can be compared (the caller sets the log aside).
 */
export type ForkPoint = {offset: number} | {below: number}

export async function findForkPoint(log: PartitionLog, masterAt: MasterBytesAt): Promise<ForkPoint> {
  const total = log.info().messageCount
  if (total === 0 || log.maxOffset <= log.minOffset) return {offset: log.maxOffset}
  const boundary = (i: number): Promise<number> => log.shiftOffset(log.minOffset, i)
  let below: number | undefined
  /** Does the master hold local record number i at the same offset? undefined: below its start. */
  const matches = async (i: number): Promise<boolean | undefined> => {
    const at = await boundary(i)
    const local = await recordAt(log, at)
    if (local === undefined) return false // damaged here: never keep what cannot be compared
    const theirs = await masterAt(at, local.length)
    if (theirs === 'end') return false
    if (!Buffer.isBuffer(theirs)) {
      below = theirs.below
      return undefined
    }
    return theirs.length >= local.length && theirs.subarray(0, local.length).equals(local)
  }
  let hi = total - 1 // a record known not to match (once checked)
  const last = await matches(hi)
  if (last === true) return {offset: log.maxOffset}
  if (last === undefined) return {below: below as number}
  let lo = -1 // a record known to match (-1: none)
  for (let step = 1; ; step *= 2) {
    let i = hi - step
    if (i < 0) i = 0
    if (i <= lo || i >= hi) break
    const m = await matches(i)
    if (m === undefined) {
      // The probe fell below the master's start: try the first local record at or above it.
      const first = await log.countBetween(log.minOffset, below as number)
      if (first >= hi) return {below: below as number}
      const again = await matches(first)
      if (again !== true) return {below: below as number}
      lo = first
      break
    }
    if (m) {
      lo = i
      break
    }
    hi = i
    if (i === 0) break
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1
    const m = await matches(mid)
    if (m === undefined) return {below: below as number}
    if (m) lo = mid
    else hi = mid
  }
  return {offset: await boundary(hi)}
}

/** The whole record starting at the record boundary `at`, or undefined when it cannot be read. */
export async function recordAt(log: PartitionLog, at: number): Promise<Buffer | undefined> {
  const head = await log.read(at, RECORD_HEADER_BYTES)
  if (head.kind !== 'data' || head.data.length < RECORD_HEADER_BYTES) return undefined
  const length = RECORD_HEADER_BYTES + head.data.readInt32BE(0)
  const read = await log.read(at, length)
  return read.kind === 'data' && read.data.length >= length ? read.data.subarray(0, length) : undefined
}

/** What a replica needs of a connection to the master to ask for its bytes. */
interface ReplicateRequester {
  requestAsync(write: (out: OutputBuffer, opaque: number) => void, timeoutMs?: number): Promise<ResponseFrame>
}

/** {@link MasterBytesAt} over meta's `replicate` (docs/protocol.md), with no long-poll wait. */
export function masterBytesOver(link: () => ReplicateRequester, topic: string, partition: number): MasterBytesAt {
  return async (offset, bytes) => {
    const frame = await link().requestAsync((out, opaque) => encodeReplicate(out, {topic, partition, offset, maxSize: bytes, maxWaitMs: 0, opaque}), 30_000)
    if (frame.type === 'result') {
      if (frame.code === Status.NOT_FOUND) return 'end'
      if (frame.code === Status.MOVED) {
        const moved = Number(frame.body.toString('utf8'))
        return moved > offset ? {below: moved} : 'end'
      }
      throw MetaError.fromWire(frame.code, frame.body.toString('utf8'))
    }
    const reply = readReplicaBody(frame.body)
    if (reply === undefined) throw new MetaError('DECODE_ERROR', `the master's replicate answer is ${frame.body.length} bytes: shorter than its header`)
    return reply.data
  }
}

/**
 * Find where (topic, partition)'s local log parts from the master's and cut it there. Returns
 * the cut (undefined when the log is a prefix of the master's or does not exist), or `{below}`
 * when the logs part below the master's first offset (nothing cut: the caller decides).
 */
export async function cutDivergentTail(
  store: MessageStore,
  topic: string,
  partition: number,
  masterAt: MasterBytesAt,
  log: Logger,
): Promise<CutResult | {below: number} | undefined> {
  const local = store.get(topic, partition)
  if (local === undefined) return undefined
  const fork = await findForkPoint(local, masterAt)
  if ('below' in fork) return fork
  if (fork.offset >= local.maxOffset) return undefined
  return cutTailAt(store, topic, partition, fork.offset, log)
}

/**
 * Cut (topic, partition)'s log back to `offset` (a record boundary: the fork point), keeping the
 * cut bytes in a `.meta.cut-<ms>` file beside the segments, and log what was cut. The caller
 * makes sure nothing appends to the partition meanwhile and forgets the old PartitionLog.
 */
export async function cutTailAt(store: MessageStore, topic: string, partition: number, offset: number, log: Logger): Promise<CutResult> {
  const cut = await store.cutTail(topic, partition, offset)
  log.warn('this replica held a divergent tail its master does not: cut it off (the bytes are kept in the file named)', {
    topic,
    partition,
    fork: cut.from,
    oldEnd: cut.to,
    messages: cut.messages,
    bytes: cut.bytes,
    file: cut.file,
  })
  return cut
}
