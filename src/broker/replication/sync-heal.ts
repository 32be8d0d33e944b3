/**
 * A sync master heals its meta slave's divergent log (docs/invariants.md 5a): before it sends a
 * partition's missing bytes (on connecting, and after the slave refused a batch), it finds the
 * fork point, the end of the last whole record both logs hold byte for byte, and when the
 * slave's log goes past it, orders the slave to cut back there (`sync-cut`; the slave keeps
 * the cut bytes in a `.meta.cut-<ms>` file and logs the count, sync-cut.ts).
 *
 * Why a slave can be ahead: the master forwards a turn's appends while its own write of them
 * is under way, so a `kill -9` of the master can leave the slave with records the master's
 * files never got; and frames of the dead master's connection can still be appended after
 * the restarted master began forwarding its own, so the slave's end can fall inside one of
 * the master's records. Neither was acknowledged: the master acknowledges a put only after its
 * own write and the slave's answer, so an acknowledged record is in the master's log.
 *
 * The fork point is found by content, from the master's side (fork-point.ts findForkPoint over
 * the slave's `replicate`, its bytes read at the master's record boundaries). The fast path,
 * one round trip: the master's record that ends where the slave's log ends (or the master's
 * last record, when the slave is ahead) is the same on the slave.
 *
 * The cut is refused (the partition keeps refusing puts, and the master logs an error) when
 * the fork point lies below the end of a batch the slave confirmed to this master process
 * (a put up to there may have been acknowledged), or when it would cut more than
 * {@link SYNC_CUT_MAX_BYTES}: far more than a master can have forwarded and not yet written,
 * so the master has lost writes (a power failure, a restored backup) and the slave's tail
 * may hold acknowledged messages: an operator decides.
 */
import {setImmediate as nextTurn} from 'node:timers/promises'
import type {Logger} from '../../log.js'
import {parseSyncEnd} from '../../protocol/commands/sync-batch.js'
import {encodeSyncCut, parseSyncCutReply} from '../../protocol/commands/sync-cut.js'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import type {PartitionLog} from '../../storage/index.js'
import {findForkPoint, masterBytesOver, recordAt, type ForkPoint, type MasterBytesAt} from './fork-point.js'
import type {SyncLink} from './sync-link.js'

/**
 * The most a master orders its slave to cut of one partition (bytes). What a master can have
 * forwarded and not yet written when it dies is one turn's appends (plus a group commit's),
 * a few MiB at most; more means the master lost written bytes.
 */
const SYNC_CUT_MAX_BYTES = 64 * 1024 * 1024
/** How long the master waits for its own appends of a partition to be written before comparing. */
const WRITTEN_WAIT_MS = 30_000
/** Cut orders tried per catch-up when the slave's end moved between the probe and the cut. */
const CUT_ATTEMPTS = 5

interface FitInput {
  log: PartitionLog
  /** Where the slave's log of the partition ends. */
  slaveEnd: number
  /** The end of the last batch the slave confirmed to this master process (0: none). */
  confirmedEnd: number
  link: SyncLink
  logger: Logger
  /** Ask the slave again where its log ends. */
  probe(): Promise<number>
}

/**
 * Make the slave's log of `log`'s partition a prefix of the master's: returns the slave's end
 * from which the master sends what it lacks, or the error the partition's puts are refused
 * with (not retried: an operator decides). A lost connection or a refused order is thrown.
 */
export async function fitSlaveLog(input: FitInput): Promise<number | MetaError> {
  const {log, link, logger} = input
  const {topic, partition} = log
  let slaveEnd = input.slaveEnd
  for (let attempt = 1; ; attempt++) {
    if (slaveEnd <= log.minOffset) return slaveEnd // nothing both could hold
    await written(log)
    const fork = await forkPoint(
      log,
      slaveEnd,
      masterBytesOver(() => link, topic, partition),
    )
    if ('below' in fork) {
      return new MetaError(
        'SYNC_OFFSET_MISMATCH',
        `the sync slave's log of ${topic}-${partition} parts from the master's below the master's first offset ${fork.below}: nothing can be compared there; puts to this partition are refused until an operator removes the slave's copy of it`,
      )
    }
    if (fork.offset >= slaveEnd) return slaveEnd
    const cutBytes = slaveEnd - fork.offset
    if (fork.offset < input.confirmedEnd || cutBytes > SYNC_CUT_MAX_BYTES) {
      const why =
        fork.offset < input.confirmedEnd
          ? `below ${input.confirmedEnd}, the end of a batch the slave confirmed (a put up to there may have been acknowledged)`
          : `${cutBytes} bytes, more than the ${SYNC_CUT_MAX_BYTES} a master can have forwarded unwritten (the master lost writes?)`
      logger.error(
        'ALARM: the sync slave holds a tail the master does not, and cutting it could lose acknowledged messages: not cut; puts to the partition are refused until an operator repairs one side',
        {
          topic,
          partition,
          fork: fork.offset,
          slaveEnd,
          masterEnd: log.maxOffset,
          confirmedEnd: input.confirmedEnd,
        },
      )
      return new MetaError(
        'SYNC_OFFSET_MISMATCH',
        `the sync slave's log of ${topic}-${partition} ends at ${slaveEnd}, and parts from the master's at ${fork.offset}: cutting it there would be ${why}; puts to this partition are refused until one side is repaired (remove the slave's copy of the partition, or restore the master's)`,
      )
    }
    try {
      const body = await link.call((out, opaque) => encodeSyncCut(out, {topic, partition, offset: fork.offset, end: slaveEnd, opaque}))
      const reply = parseSyncCutReply(body)
      logger.warn(
        'the sync slave held a tail the master does not (never acknowledged): ordered it cut at the fork point; the slave keeps the bytes in a .meta.cut file',
        {
          topic,
          partition,
          fork: fork.offset,
          slaveEnd,
          messages: reply?.messages,
          bytes: reply?.bytes ?? cutBytes,
        },
      )
      return fork.offset
    } catch (error) {
      // The slave's log moved since it was probed (frames of an older connection): again.
      if (!isMetaError(error, 'SYNC_OFFSET_MISMATCH') || attempt >= CUT_ATTEMPTS) throw error
      slaveEnd = parseSyncEnd(error.message) ?? (await input.probe())
    }
  }
}

/** Wait until every append of `log` is written (its bytes readable), so the comparison sees them. */
async function written(log: PartitionLog): Promise<void> {
  const deadline = Date.now() + WRITTEN_WAIT_MS
  while (log.maxOffset < log.appendOffset) {
    if (Date.now() > deadline)
      throw new MetaError(
        'STORAGE_ERROR',
        `the appends of ${log.topic}-${log.partition} up to ${log.appendOffset} were not written within ${WRITTEN_WAIT_MS} ms (written up to ${log.maxOffset})`,
      )
    await nextTurn()
  }
}

/**
 * The fork point of the master's `log` and the slave's (which ends at `slaveEnd`): the first
 * master byte the slave does not hold the same (the master's end when it holds all of it).
 */
async function forkPoint(log: PartitionLog, slaveEnd: number, slaveAt: MasterBytesAt): Promise<ForkPoint> {
  const near = Math.min(slaveEnd, log.maxOffset)
  if (near > log.minOffset && (await log.shiftOffset(near, 0)) === near) {
    const before = await log.shiftOffset(near, -1)
    const local = await recordAt(log, before)
    if (local !== undefined) {
      const theirs = await slaveAt(before, local.length)
      if (Buffer.isBuffer(theirs) && theirs.length >= local.length && theirs.subarray(0, local.length).equals(local)) return {offset: near}
    }
  }
  return findForkPoint(log, slaveAt)
}
