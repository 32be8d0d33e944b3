/**
 * put (spec §1.5): validate, assign an id, append, acknowledge.
 *
 * Durability (docs/invariants.md): the `result 200` for a put is written only from the
 * storage callback, i.e. after the record's bytes are in the segment file (threshold mode:
 * unflushThreshold > 0) or after an fdatasync that covers them (group commit:
 * unflushThreshold <= 0). A failed write answers 500 and leaves no partial record.
 */
import {checksum} from '../../protocol/crc.js'
import {NO_CHECKSUM, type PutCommand} from '../../protocol/commands/put.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {validateTopicName} from '../../protocol/names.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

export function handlePut(ctx: BrokerContext, conn: Connection, frame: PutCommand): void {
  ctx.counters.cmdPut += 1
  if (frame.txKey !== null) {
    failPut(ctx, conn, frame, frame.partition, 'transactions are not supported by this broker')
    return
  }
  if (ctx.topics.isClosed(frame.topic, frame.partition)) {
    ctx.counters.putFailed += 1
    conn.sendResult(Status.FORBIDDEN, frame.opaque, `Partition[${ctx.config.system.brokerId}-${frame.partition}] has been closed`)
    return
  }
  const topic = ctx.topics.resolve(frame.topic)
  if (topic === undefined) {
    failPut(ctx, conn, frame, frame.partition, topicRefusal(frame.topic))
    return
  }
  const partition = frame.partition === -1 ? ctx.topics.randomPartition(topic) : frame.partition
  if (partition < 0 || partition >= topic.numPartitions) {
    failPut(ctx, conn, frame, partition, `wrong partition ${partition}: topic "${frame.topic}" has partitions 0..${topic.numPartitions - 1}`)
    return
  }
  const crc = checksum(frame.body)
  if (frame.checksum !== NO_CHECKSUM && frame.checksum !== crc) {
    failPut(ctx, conn, frame, partition, `Checksum failure,expected ${crc} but was ${frame.checksum}`)
    return
  }
  let log = ctx.store.get(frame.topic, partition)
  if (log === undefined) {
    try {
      log = ctx.store.getOrCreate(frame.topic, partition)
    } catch (error) {
      failPut(ctx, conn, frame, partition, (error as Error).message)
      return
    }
    ctx.onNewPartition(frame.topic, partition)
  }
  if (topic.stat) {
    ctx.realtime.record(frame.topic, 'put')
    ctx.realtime.record(frame.topic, 'message_size', frame.body.length)
  }
  const id = ctx.ids.next()
  const opaque = frame.opaque
  conn.beginRequest()
  const offset = log.append(id, frame.flag, frame.body, crc, (err) => {
    conn.endRequest()
    ctx.putOutcome(err !== null)
    if (err === null) {
      conn.sendPutResult(opaque, id, partition, offset)
    } else {
      failPut(ctx, conn, frame, partition, err.message)
    }
  })
}

function topicRefusal(topic: string): string {
  try {
    validateTopicName(topic)
  } catch (error) {
    return (error as Error).message
  }
  return `The server do not accept topic ${topic}`
}

/** MetaQ's put failure body, so clients that parse it keep working. */
function failPut(ctx: BrokerContext, conn: Connection, frame: PutCommand, partition: number, reason: string): void {
  ctx.counters.putFailed += 1
  if (ctx.topics.resolve(frame.topic)?.stat) ctx.realtime.record(frame.topic, 'put_failed')
  ctx.log.debug('put failed', {topic: frame.topic, partition, reason})
  const body = `Put message to [broker '${ctx.url}'] [partition '${frame.topic}-${partition}'] failed.Detail:${reason}`
  conn.sendResult(new MetaError('INTERNAL').wireStatus, frame.opaque, body)
}
