/**
 * Request dispatch: each decoded request frame to its handler (handlers/*, replication/*,
 * tx/*), with the role's refusals first (a sync slave refuses puts, a sync pair refuses
 * transactions), after the access check (auth/check.ts) when the broker has access control.
 * Handlers answer on the connection, now or later.
 */
import {oversizeBodyBytes} from '../protocol/decoder.js'
import type {RequestFrame} from '../protocol/frames.js'
import type {Connection} from './connection.js'
import {isSyncSlave, putRefusal, type BrokerContext} from './context.js'
import {handleAccessReload, handleAuthFinish, handleAuthStart, permitted} from './auth/index.js'
import {admitGroup, admitPut} from './auth/limits.js'
import {handleConfigReload, handlePartitionsState} from './handlers/admin.js'
import {handleGet} from './handlers/get.js'
import {
  handleGroupClaim,
  handleGroupDelete,
  handleGroupDescribe,
  handleGroupHeartbeat,
  handleGroupJoin,
  handleGroupLeave,
  handleGroupList,
  handleOffsetCommit,
  handleOffsetFetch,
} from './handlers/groups.js'
import {handlePartitions, handleVersion} from './handlers/misc.js'
import {handleOffset} from './handlers/offset.js'
import {handleOversize, handlePut, handlePutBatch, recordsHeld} from './handlers/put.js'
import {handleCount, handleSeek} from './handlers/seek.js'
import {handleStats} from './handlers/stats.js'
import {handleTopicAdmin} from './handlers/topic-admin.js'
import {handleTransaction, handleTransactionalPut, handleTransactionalPutBatch, handleTxCommit, handleTxDecide, handleTxList} from './handlers/transaction.js'
import {handleReplicate, handleSlaveStatus} from './replication/handlers.js'
import {handleSync, handleSyncBatch, refuseSyncSlavePut, refuseSyncTransaction, SYNC_TRANSACTIONS_REFUSED} from './replication/sync-slave.js'

type PutRequest = Extract<RequestFrame, {type: 'put'}>
type PutBatchRequest = Extract<RequestFrame, {type: 'put-batch'}>

export function dispatch(ctx: BrokerContext, conn: Connection, frame: RequestFrame): void {
  const oversize = oversizeBodyBytes(frame)
  if (oversize !== undefined) return handleOversize(ctx, conn, frame, oversize)
  if (ctx.access !== undefined && !permitted(ctx.access, conn, frame)) return
  switch (frame.type) {
    case 'put':
      return dispatchPut(ctx, conn, frame)
    case 'get':
      return handleGet(ctx, conn, frame)
    case 'offset':
      return handleOffset(ctx, conn, frame)
    case 'stats':
      return handleStats(ctx, conn, frame)
    case 'version':
      return handleVersion(conn, frame)
    case 'quit':
      return conn.end()
    case 'transaction':
      if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
      return handleTransaction(ctx, conn, frame)
    case 'sync':
      return handleSync(ctx, conn, frame)
    case 'sync-batch':
      return handleSyncBatch(ctx, conn, frame)
    case 'partitions':
      return handlePartitions(ctx, conn, frame)
    case 'group-join':
      if (conn.quota !== undefined && !admitGroup(ctx, conn, conn.quota, frame.group, frame.opaque)) return
      return handleGroupJoin(ctx, conn, frame)
    case 'group-heartbeat':
      return handleGroupHeartbeat(ctx, conn, frame)
    case 'group-leave':
      return handleGroupLeave(ctx, conn, frame)
    case 'group-claim':
      return handleGroupClaim(ctx, conn, frame)
    case 'offset-commit':
      return handleOffsetCommit(ctx, conn, frame)
    case 'offset-fetch':
      return handleOffsetFetch(ctx, conn, frame)
    case 'group-list':
      return handleGroupList(ctx, conn, frame)
    case 'group-describe':
      return handleGroupDescribe(ctx, conn, frame)
    case 'group-delete':
      return handleGroupDelete(ctx, conn, frame)
    case 'seek':
      return handleSeek(ctx, conn, frame)
    case 'count':
      return handleCount(ctx, conn, frame)
    case 'put-batch':
      return dispatchPutBatch(ctx, conn, frame)
    case 'config-reload':
      if (ctx.access !== undefined) return handleAccessReload(ctx, conn, frame, ctx.access)
      return handleConfigReload(ctx, conn, frame)
    case 'tx-list':
      return handleTxList(ctx, conn, frame)
    case 'tx-decide':
      if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
      return handleTxDecide(ctx, conn, frame)
    case 'tx-commit':
      if (ctx.sync !== undefined || isSyncSlave(ctx)) return refuseSyncTransaction(conn, frame)
      return handleTxCommit(ctx, conn, frame)
    case 'partitions-close':
    case 'partitions-open':
      return handlePartitionsState(ctx, conn, frame)
    case 'replicate':
      return handleReplicate(ctx, conn, frame)
    case 'slave-status':
      return handleSlaveStatus(ctx, conn, frame)
    case 'topic-admin':
      return handleTopicAdmin(ctx, conn, frame)
    case 'auth-start':
      return handleAuthStart(ctx, conn, frame)
    case 'auth-finish':
      return handleAuthFinish(ctx, conn, frame)
    default:
      return assertNever(frame)
  }
}

/** A put: refused on a sync slave; a transactional one goes to its transaction (refused on a sync master). */
function dispatchPut(ctx: BrokerContext, conn: Connection, frame: PutRequest): void {
  // A logged-in user's quotas (auth/limits.ts); an anonymous connection has none to check.
  if (conn.quota !== undefined && !admitPut(ctx, conn, conn.quota, frame.topic, frame.partition, frame.opaque, frame.body.length)) {
    ctx.counters.putFailed += 1
    return
  }
  if (isSyncSlave(ctx)) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition)
  // An asynchronous slave refuses every put, transactional ones included (handlePut says so).
  if (frame.txKey === null || ctx.replica !== undefined || putRefusal(ctx) !== undefined) return handlePut(ctx, conn, frame)
  if (ctx.sync !== undefined) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, 1, SYNC_TRANSACTIONS_REFUSED)
  return handleTransactionalPut(ctx, conn, frame)
}

/** A put-batch, routed as a put. */
function dispatchPutBatch(ctx: BrokerContext, conn: Connection, frame: PutBatchRequest): void {
  if (conn.quota !== undefined && !admitPut(ctx, conn, conn.quota, frame.topic, frame.partition, frame.opaque, frame.body.length)) {
    ctx.counters.putFailed += recordsHeld(frame.body, frame.count)
    return
  }
  if (isSyncSlave(ctx)) return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, recordsHeld(frame.body, frame.count))
  if (frame.txKey === null || ctx.replica !== undefined || putRefusal(ctx) !== undefined) return handlePutBatch(ctx, conn, frame)
  if (ctx.sync !== undefined)
    return refuseSyncSlavePut(ctx, conn, frame.topic, frame.opaque, frame.partition, recordsHeld(frame.body, frame.count), SYNC_TRANSACTIONS_REFUSED)
  return handleTransactionalPutBatch(ctx, conn, frame)
}

function assertNever(frame: never): never {
  throw new Error(`no handler for ${JSON.stringify(frame)}`)
}
