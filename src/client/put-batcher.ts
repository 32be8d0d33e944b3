/**
 * A producer's puts to a meta broker that serves `put-batch`: messages for the same
 * (connection, topic, partition) issued in one event-loop turn leave as one frame
 * (protocol/commands/put-batch.ts) instead of one put each, so the broker decodes, appends
 * and acknowledges them once. Each message still gets its own result: its offset follows
 * from the batch's first offset and the record sizes, its id from the reply's id runs.
 *
 * A batch closes at the end of the turn, or when it reaches MAX_BATCH_MESSAGES or its byte
 * limit (never more than the broker accepts in one frame). A failed batch fails each of its
 * messages with the same error, and the producer retries or reports them one by one.
 */
import {writePutBatchHeader, parsePutBatchReply} from '../protocol/commands/put-batch.js'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import type {ResponseFrame} from '../protocol/frames.js'
import type {BrokerConnection} from './connection.js'

/** What a batched message needs: its encoded payload, flag and checksum. */
interface BatchItem {
  body: Buffer
  flag: number
  crc: number
}

/** Where one message of an acknowledged batch was stored. */
export interface BatchOutcome {
  partition: number
  offset: number
  id: bigint
}

/**
 * Called once per message: with `outcome` when stored; with `err` for a request failure
 * (timeout, connection lost); with the broker's non-200 `frame` otherwise.
 */
type BatchSettle<T> = (item: T, err: MetaError | null, outcome: BatchOutcome | undefined, frame: ResponseFrame | undefined) => void

const MAX_BATCH_MESSAGES = 4096
const MAX_BATCH_BYTES = 256 * 1024

interface Batch<T> {
  topic: string
  partition: number
  /** Transaction key (transactional put-batch), or null. */
  txKey: string | null
  items: T[]
  bytes: number
}

export class PutBatcher<T extends BatchItem> {
  /** Open batches by connection, then topic, then partition. */
  private open = new Map<BrokerConnection, Map<string, Array<Batch<T> | undefined>>>()
  private flushScheduled = false

  constructor(
    private readonly timeoutMs: number,
    private readonly settle: BatchSettle<T>,
  ) {}

  /** Bytes a batch may hold on this connection (its records, headers included). */
  maxBatchBytes(conn: BrokerConnection): number {
    return Math.min(MAX_BATCH_BYTES, conn.capabilities.maxMessageBytes ?? MAX_BATCH_BYTES)
  }

  /**
   * Queue one message; it leaves at the end of this turn (or sooner when its batch fills).
   * With `txKey` it goes into that transaction (put-batch's transactional form).
   */
  add(conn: BrokerConnection, topic: string, partition: number, item: T, txKey: string | null = null): void {
    let byTopic = this.open.get(conn)
    if (byTopic === undefined) this.open.set(conn, (byTopic = new Map()))
    const slot = txKey === null ? topic : `${topic}\0${txKey}`
    let batches = byTopic.get(slot)
    if (batches === undefined) byTopic.set(slot, (batches = []))
    const size = RECORD_HEADER_BYTES + item.body.length
    let batch = batches[partition]
    if (batch !== undefined && (batch.items.length >= MAX_BATCH_MESSAGES || batch.bytes + size > this.maxBatchBytes(conn))) {
      this.send(conn, batch)
      batch = undefined
    }
    if (batch === undefined) batches[partition] = batch = {topic, partition, txKey, items: [], bytes: 0}
    batch.items.push(item)
    batch.bytes += size
    if (!this.flushScheduled) {
      this.flushScheduled = true
      process.nextTick(() => this.flush())
    }
  }

  private flush(): void {
    this.flushScheduled = false
    const open = this.open
    this.open = new Map()
    for (const [conn, byTopic] of open) {
      for (const batches of byTopic.values()) {
        for (const batch of batches) if (batch !== undefined && batch.items.length > 0) this.send(conn, batch)
      }
    }
  }

  private send(conn: BrokerConnection, batch: Batch<T>): void {
    const {topic, partition, items, bytes, txKey} = batch
    batch.items = []
    batch.bytes = 0
    conn.request(
      (out, opaque) => {
        writePutBatchHeader(out, topic, partition, items.length, bytes, opaque, txKey)
        for (const item of items) {
          out.writeInt32BE(item.body.length)
          out.writeInt32BE(item.crc)
          out.writeInt32BE(0) // id: assigned by the broker
          out.writeInt32BE(0)
          out.writeInt32BE(item.flag)
          out.writeBytes(item.body)
        }
      },
      (err, frame) => this.settleAll(items, err, frame),
      this.timeoutMs,
    )
  }

  private settleAll(items: T[], err: MetaError | null, frame: ResponseFrame | undefined): void {
    if (err === null && frame!.type === 'result' && frame!.code === 200) {
      const reply = parsePutBatchReply(frame!.body.toString('latin1'))
      if (reply === undefined || reply.runStarts[reply.runStarts.length - 1] >= items.length) {
        err = new MetaError('DECODE_ERROR', `malformed put-batch reply "${frame!.body.toString('latin1').slice(0, 80)}"`)
      } else {
        let offset = reply.offset
        let run = 0
        for (let i = 0; i < items.length; i++) {
          while (run + 1 < reply.runStarts.length && reply.runStarts[run + 1] <= i) run++
          const id = reply.runIds[run] + BigInt(i - reply.runStarts[run])
          this.settle(items[i], null, {partition: reply.partition, offset, id}, undefined)
          // A transactional batch answers offset -1: the offsets are known at commit.
          if (offset >= 0) offset += RECORD_HEADER_BYTES + items[i].body.length
        }
        return
      }
    }
    if (err === null && frame!.type !== 'result') err = new MetaError('DECODE_ERROR', `unexpected ${frame!.type} response to put-batch`)
    for (const item of items) this.settle(item, err, undefined, err === null ? frame : undefined)
  }
}
