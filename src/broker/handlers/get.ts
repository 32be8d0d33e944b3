/**
 * get (docs/protocol.md#get) and the long-poll extension (docs/protocol.md#long-poll-get).
 *
 * Answers: `value` with raw log bytes [offset, min(offset + min(maxSize, maxTransferSize), end of
 * segment)); 301 + first offset when below the log; 301 + end offset when past the end (meta moves
 * such a consumer back to the end instead of stalling it,
 * docs/protocol.md#where-meta-differs-from-metaq; Long.MAX_VALUE, "start from the tail", is the
 * common case); at exactly the end 404, or a parked wait when the request carries maxWaitMs; 400
 * for maxSize <= 0; 403 when closed; 404 when the partition does not exist (a long poll waits for
 * it if the topic is accepted); 500 when it is quarantined; 301 + the next record when the offset
 * lies in a damaged range (storage/damage.ts: reads end before one, so clients never get damaged
 * bytes it knows of).
 *
 * A filtered get answers 301 past a slice without matches; otherwise, with a filter the
 * consumer sent, every match of the slice with its offset, and with only the group's `expr:`
 * filter from server.ini (a MetaQ client), the run of matches the slice starts with
 * (filter/select.ts).
 *
 * Memory: a read holds min(maxSize, maxTransferSize) bytes against the connection's limit
 * until it is answered (connection.ts); a parked long poll holds only its overhead, and when
 * woken it runs again only once the connection is below its limit.
 */
import {permitted} from '../auth/check.js'
import type {GetCommand} from '../../protocol/commands/get.js'
import {readBuffers, type ReadResult} from '../../storage/index.js'
import {isMetaError, Status, type ErrorCode} from '../../protocol/errors.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {refuseQuarantined} from './quarantine.js'
import {isReplicaGet, sendReplicaValue} from '../replication/replica-reply.js'
import {filteredValue, getFilter, selectSlice} from '../filter/select.js'
import type {FilterPredicate} from '../filter/evaluate.js'
import {RECORD_HEADER_BYTES} from '../../protocol/message-set.js'

export function handleGet(ctx: BrokerContext, conn: Connection, frame: GetCommand): void {
  ctx.counters.cmdGet += 1
  if (ctx.topics.resolve(frame.topic)?.stat) ctx.realtime.record(frame.topic, 'get')
  serveGet(ctx, conn, frame)
}

/** Serve a get without counting it (`replicate` uses it: src/broker/replication/master.ts). */
export function serveGet(ctx: BrokerContext, conn: Connection, frame: GetCommand): void {
  const topic = ctx.topics.resolve(frame.topic)
  if (ctx.topics.isClosed(frame.topic, frame.partition)) {
    conn.sendError('PARTITION_CLOSED', frame.opaque, `Partition[${ctx.config.system.brokerId}-${frame.partition}] has been closed`)
    return
  }
  if (frame.maxSize <= 0) {
    conn.sendError('BAD_REQUEST', frame.opaque, `invalid maxSize ${frame.maxSize}: expected a positive integer`)
    return
  }
  const filter = getFilter(ctx.config, frame.topic, frame.group, frame.filter)
  if (filter instanceof Error) {
    conn.sendError(filter.code, frame.opaque, filter.message, Status.BAD_REQUEST)
    return
  }
  const log = ctx.logs.get(frame.topic, frame.partition)
  if (log === undefined) {
    if (refuseQuarantined(ctx, conn, frame.topic, frame.partition, frame.opaque)) return
    const canAppear = topic !== undefined && frame.partition >= 0 && frame.partition < topic.numPartitions
    if (frame.maxWaitMs > 0 && canAppear) {
      conn.beginRequest()
      ctx.polls.park(conn, frame)
      return
    }
    // 404 as in MetaQ (its clients read it as "no messages now"); the code tells meta's
    // client whether waiting can help.
    const code = topic === undefined ? 'TOPIC_NOT_ACCEPTED' : canAppear ? 'NOT_FOUND' : 'INVALID_PARTITION'
    miss(ctx, conn, frame, `The topic \`${frame.topic}\` in partition \`${frame.partition}\` is not exists`, code)
    return
  }
  const maxBytes = Math.min(frame.maxSize, ctx.config.system.maxTransferBytes)
  conn.beginRequest(maxBytes)
  log.read(frame.offset, maxBytes).then(
    (result) => {
      answerRead(ctx, conn, frame, result, filter)
      conn.endRequest(maxBytes)
    },
    (error: Error) => {
      ctx.log.limited('read-failed').warn('read failed', {topic: frame.topic, partition: frame.partition, offset: frame.offset, error: error.message})
      conn.sendError(isMetaError(error) ? error.code : 'STORAGE_ERROR', frame.opaque, error.message, Status.INTERNAL_SERVER_ERROR)
      conn.endRequest(maxBytes)
    },
  )
}

function answerRead(ctx: BrokerContext, conn: Connection, frame: GetCommand, result: ReadResult, filter?: FilterPredicate): void {
  switch (result.kind) {
    case 'data': {
      let data = result.data
      if (filter !== undefined && frame.filter !== undefined) {
        const maxPayloadBytes = ctx.config.system.maxTransferBytes - RECORD_HEADER_BYTES
        const reply = filteredValue(data, frame.offset, filter, maxPayloadBytes, Math.min(frame.maxSize, ctx.config.system.maxTransferBytes))
        readBuffers.give(data)
        result.release?.()
        if ('next' in reply) conn.sendResult(Status.MOVED, frame.opaque, String(reply.next))
        else conn.sendValue(frame.opaque, reply.body)
        return
      }
      if (filter !== undefined && !isReplicaGet(frame)) {
        const selected = selectSlice(data, filter, ctx.config.system.maxTransferBytes - RECORD_HEADER_BYTES)
        if (selected.kind === 'skip') {
          readBuffers.give(data)
          result.release?.()
          conn.sendResult(Status.MOVED, frame.opaque, String(frame.offset + selected.skip))
          return
        }
        if (selected.kind === 'run') data = data.subarray(0, selected.end)
      }
      if (isReplicaGet(frame)) {
        sendReplicaValue(ctx, conn, frame, data) // copies the data
        result.release?.()
      } else {
        // Once the socket wrote it: the read's buffer (src/storage/read-buffers.ts) is reused,
        // or the tail-cache view's lease is released (src/storage/tail-cache.ts).
        conn.sendValue(frame.opaque, data, () => {
          readBuffers.give(data)
          result.release?.()
        })
      }
      return
    }
    case 'below':
    case 'damaged':
      conn.sendResult(Status.MOVED, frame.opaque, String(result.offset))
      return
    case 'end':
      if (frame.offset > result.end) {
        conn.sendResult(Status.MOVED, frame.opaque, String(result.end))
      } else if (frame.maxWaitMs > 0 && !conn.closing) {
        conn.beginRequest()
        ctx.polls.park(conn, frame)
      } else {
        miss(ctx, conn, frame, `Could not find message at position ${frame.offset}`)
      }
  }
}

/**
 * A woken long poll runs its get again (it is answered or parked anew), once its connection
 * is below its limit: many polls woken at once must not all read at once.
 */
export function retryGet(ctx: BrokerContext, conn: Connection, frame: GetCommand): void {
  if (conn.closing) {
    conn.endRequest()
    return
  }
  conn.whenUnsaturated(() => {
    // Rights are checked again: a revoke (and reload) since the get was parked holds for it too,
    // so it never delivers a message put after the revoke (answered 403 instead).
    // Served before the parked wait ends, so the connection never looks idle in between.
    if (!conn.closing && (ctx.access === undefined || permitted(ctx.access, conn, frame))) serveGet(ctx, conn, frame)
    conn.endRequest()
  })
}

/** A long poll that waited its full time answers as an immediate miss would. */
export function expireGet(ctx: BrokerContext, conn: Connection, frame: GetCommand): void {
  miss(ctx, conn, frame, `Could not find message at position ${frame.offset}`)
  conn.endRequest()
}

function miss(ctx: BrokerContext, conn: Connection, frame: GetCommand, text: string, code: ErrorCode = 'NOT_FOUND'): void {
  ctx.counters.getMiss += 1
  if (ctx.topics.resolve(frame.topic)?.stat) ctx.realtime.record(frame.topic, 'get_miss')
  conn.sendError(code, frame.opaque, text, Status.NOT_FOUND)
}
