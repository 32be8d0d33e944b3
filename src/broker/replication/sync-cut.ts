/**
 * The sync slave's side of `sync-cut` (protocol/commands/sync-cut.ts): its master found that
 * this slave's log of a partition holds bytes past the fork point (the last whole record both
 * logs hold byte for byte) and orders them cut. That happens after a `kill -9` of the master:
 * it forwards a turn's appends while its own write of them is still under way, so the slave
 * may hold records the master's files never got (never acknowledged: the master acknowledges
 * only after its own write), and frames of the dead master's connection may still be
 * appended after the restarted master has started to forward its own.
 *
 * The cut is the one a rejoining old master makes (fork-point.ts cutTailAt): the bytes go to
 * `<offset>.meta.cut-<ms>` beside the segments and the count is logged. It happens only when
 * the log still ends where the master saw it end, and meanwhile no sync-batch is appended to
 * that partition (they are refused with SYNC_OFFSET_MISMATCH). The master that orders a cut is
 * this slave's master from now on: every other sync connection (an earlier run of the master,
 * whose queued frames could land after the cut) is closed first.
 */
import {syncMismatchText, type SyncBatchCommand} from '../../protocol/commands/sync-batch.js'
import {isMetaError, MetaError, Status} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {cutTailAt} from './fork-point.js'

/** Partitions being cut, per broker (`topic-partition`): appends to them are refused meanwhile. */
const cutting = new WeakMap<BrokerContext, Set<string>>()

/** Is (topic, partition) being cut on this broker now? */
export function isBeingCut(ctx: BrokerContext, topic: string, partition: number): boolean {
  return cutting.get(ctx)?.has(`${topic}-${partition}`) === true
}

/**
 * Serve a sync-cut order (`frame.cutEnd` set). `closeOtherPeers` closes every other sync
 * connection of this broker (sync-slave.ts) and returns how many.
 */
export function handleSyncCut(ctx: BrokerContext, conn: Connection, frame: SyncBatchCommand, closeOtherPeers: () => number): void {
  const {topic, partition, opaque, offset} = frame
  const expectedEnd = frame.cutEnd ?? 0
  if (offset < 0 || offset > expectedEnd) {
    conn.sendError(
      'INVALID_ARGUMENT',
      opaque,
      `sync-cut of ${topic}-${partition}: offset ${offset} and end ${expectedEnd}: expected 0 <= offset <= end`,
      Status.BAD_REQUEST,
    )
    return
  }
  const key = `${topic}-${partition}`
  let set = cutting.get(ctx)
  if (set === undefined) cutting.set(ctx, (set = new Set()))
  if (set.has(key)) {
    conn.sendError('SYNC_OFFSET_MISMATCH', opaque, `sync-cut of ${topic}-${partition}: a cut of it is already under way`)
    return
  }
  const log = ctx.logs.get(topic, partition)
  const end = log?.appendOffset ?? 0
  if (end !== expectedEnd) {
    conn.sendError('SYNC_OFFSET_MISMATCH', opaque, syncMismatchText(topic, partition, end, expectedEnd))
    return
  }
  if (log === undefined || offset === end) {
    conn.sendResult(Status.OK, opaque, `${partition} ${end} 0 0`)
    return
  }
  const closed = closeOtherPeers()
  if (closed > 0) ctx.log.info("closed older sync connections: the master that orders a cut is this slave's master now", {closed})
  set.add(key)
  conn.beginRequest()
  cutTailAt(ctx.store, topic, partition, offset, ctx.log)
    .then(
      (cut) => conn.sendResult(Status.OK, opaque, `${partition} ${cut.from} ${cut.messages} ${cut.bytes}`),
      (error: Error) => {
        const reason = isMetaError(error) ? error : new MetaError('STORAGE_ERROR', error.message)
        ctx.log.error('sync slave: cannot cut the tail its master ordered cut', {topic, partition, offset, error: reason.message})
        conn.sendError(reason.code, opaque, `sync-cut of ${topic}-${partition} at ${offset}: ${reason.message}`)
      },
    )
    .finally(() => {
      // The store opened the partition again (or kept the old log): take it from the store.
      ctx.logs.forget(topic, partition)
      set.delete(key)
      conn.endRequest()
    })
}
