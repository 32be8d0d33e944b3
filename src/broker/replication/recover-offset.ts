/**
 * `recoverOffset` (MetaQ samsa's key, docs/protocol.md#synchronous-replication): when a former
 * slave starts as the master of its broker id, consumer groups' committed offsets for this broker
 * in ZooKeeper (`<root>/consumers/<group>/offsets/<topic>/<brokerId>-<p>` = `"<msgId>-<offset>"`)
 * were positions in the old master's log. Before the broker registers, each entry with a message id
 * is rewritten to this broker's own position of that message: the offset just after it, where the
 * group resumes. A meta sync slave's log is byte-identical to its master's, so its entries stay as
 * they are; a MetaQ-form slave's may differ.
 *
 * Entries whose message is not in the local log are reported (a warning naming them) and left
 * alone, unless no entry matched at all: then, as MetaQ does, they are reset to `-1-0`.
 */
import type {Logger} from '../../log.js'
import {encodeZkOffset, parseBrokerPartition, parseZkOffset, type ZkPaths} from '../../cluster/paths.js'
import type {ZkSession} from '../../cluster/zk-session.js'
import {RECORD_HEADER_BYTES, scanRecords} from '../../protocol/message-set.js'
import type {MessageStore, PartitionLog} from '../../storage/index.js'

const READ_BYTES = 1024 * 1024

interface RecoverOffsetReport {
  /** Entries whose message id was found (rewritten when the position differed). */
  matched: number
  rewritten: number
  /** Paths of entries whose message is not in the local log. */
  unmatched: string[]
  /** True when nothing matched and the unmatched entries were reset to `-1-0`. */
  reset: boolean
}

interface Entry {
  path: string
  msgId: string
  offset: number
}

export async function recoverOffsets(options: {
  session: ZkSession
  paths: ZkPaths
  brokerId: number
  store: MessageStore
  log: Logger
  /**
   * Reset entries to `-1-0` when none matched (MetaQ; default true). A failover of an
   * asynchronous slave passes false: its log is byte-identical to the old master's, so an
   * unmatched entry is one past its end (a message it never fetched), which a fetch answers
   * with the end of the log (301); resetting would make the group read everything again.
   */
  resetWhenNoneMatched?: boolean
}): Promise<RecoverOffsetReport> {
  const {session, paths, brokerId, store, log} = options
  // Every entry of this broker, by partition log.
  const wanted = new Map<PartitionLog | undefined, Entry[]>()
  for (const group of await session.children(paths.consumers())) {
    for (const topic of await session.children(paths.offsetsOf(group))) {
      for (const child of await session.children(paths.offsets(group, topic))) {
        const bp = parseBrokerPartition(child)
        if (bp === undefined || bp.brokerId !== brokerId) continue
        const path = `${paths.offsets(group, topic)}/${child}`
        const value = parseZkOffset((await session.getString(path)) ?? '')
        if (value === undefined || value.msgId === '-1') continue
        const partitionLog = store.get(topic, bp.partition)
        const list = wanted.get(partitionLog) ?? []
        list.push({path, ...value})
        wanted.set(partitionLog, list)
      }
    }
  }
  const report: RecoverOffsetReport = {matched: 0, rewritten: 0, unmatched: [], reset: false}
  for (const [partitionLog, entries] of wanted) {
    const positions = partitionLog === undefined ? new Map<bigint, number>() : await positionsAfter(partitionLog, new Set(entries.map((e) => BigInt(e.msgId))))
    for (const entry of entries) {
      const after = positions.get(BigInt(entry.msgId))
      if (after === undefined) {
        report.unmatched.push(entry.path)
        continue
      }
      report.matched += 1
      if (after !== entry.offset) {
        await session.setData(entry.path, encodeZkOffset(entry.msgId, after))
        report.rewritten += 1
        log.info("recoverOffset: rewrote a committed offset to this broker's position of its message", {
          path: entry.path,
          msgId: entry.msgId,
          from: entry.offset,
          to: after,
        })
      }
    }
  }
  if (report.unmatched.length > 0) {
    if (report.matched === 0 && options.resetWhenNoneMatched !== false) {
      for (const path of report.unmatched) await session.setData(path, encodeZkOffset('-1', 0))
      report.reset = true
    }
    log.warn(
      report.reset
        ? 'recoverOffset: no committed offset matched a message here; they were reset to -1-0 (as MetaQ does)'
        : "recoverOffset: committed offsets whose message is not in this broker's log were left as they are",
      {entries: report.unmatched},
    )
  }
  log.info('recoverOffset done', {matched: report.matched, rewritten: report.rewritten, unmatched: report.unmatched.length, reset: report.reset})
  return report
}

/** For each wanted id found in `log`: the offset just after its record. One pass over the log. */
async function positionsAfter(log: PartitionLog, ids: Set<bigint>): Promise<Map<bigint, number>> {
  const found = new Map<bigint, number>()
  let pos = log.minOffset
  let size = READ_BYTES
  while (found.size < ids.size) {
    const read = await log.read(pos, size)
    if (read.kind === 'end') break
    if (read.kind !== 'data') {
      pos = read.offset // below the log, or past a damaged range
      continue
    }
    const data = read.data
    const base = pos
    const {end} = scanRecords(data, 0, (at, length) => {
      const id = data.readBigInt64BE(at + 8)
      if (ids.has(id)) found.set(id, base + at + RECORD_HEADER_BYTES + length)
    })
    if (end > 0) {
      pos += end
      size = READ_BYTES
    } else if (data.length >= RECORD_HEADER_BYTES && RECORD_HEADER_BYTES + data.readInt32BE(0) > size) {
      size = RECORD_HEADER_BYTES + data.readInt32BE(0) // one record larger than the read
    } else {
      break // no whole record here: nothing more can be matched
    }
  }
  return found
}
