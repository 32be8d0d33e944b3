/**
 * The messages of one get, kept as the fetched body: the fetcher checks every record (length,
 * CRC, attribute block) and notes where the whole ones are; messages are made from them only
 * when user code asks for `messages`, and a renderer (meta tail) reads the records straight
 * from the body through a {@link RecordCursor}, with no object per message.
 *
 * Two layouts of body, as the broker answers a get (docs/protocol.md):
 *
 *   plain     record record record …             offset of a record = baseOffset + its position
 *   filtered  next(8) offset(8) record offset(8) record …   each record preceded by its offset (int64 BE)
 */
import assert from 'node:assert'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES, walkRecords, type DecodeOptions} from '../protocol/message-set.js'
import {messageIdTimestampAt, writeMessageIdDecimal} from '../protocol/message-id.js'
import {int32At} from '../protocol/output-buffer.js'
import {ConsumedMessage, dataStart} from './consumed-message.js'
import type {Message} from './types.js'

/** A batch of consecutive messages of one partition, from one get. */
export interface MessageBatch {
  topic: string
  brokerId: number
  partition: number
  messages: Message[]
  /** Offset right after the last message: where this partition continues. */
  nextOffset: number
  /** Which assignment of the partition fetched it (a batch from a revoked one is dropped). */
  epoch: number
}

/** Bytes of the offset before each record of a filtered get's answer. */
const OFFSET_PREFIX_BYTES = 8
const TWO_POW_32 = 4294967296

/** Where the records of a batch are in its body (positions of record headers). */
export interface RecordSpan {
  /** Log offset of body[0] for a plain body; undefined for a filtered one (offsets precede the records). */
  baseOffset: number | undefined
  /** Position of the first record's header. */
  first: number
  /** Position of the last record's header. */
  last: number
  /** Records from first to last. */
  count: number
}

/** What checkRecords found in a plain body. */
export interface RecordCheck {
  /** Where the whole records to deliver are; undefined when there are none. */
  span: RecordSpan | undefined
  /** Bytes of whole records read; the next fetch starts after them. */
  bytesConsumed: number
  /** Set when a record is bad (length, checksum, attribute block); span holds those before it. */
  error?: MetaError
}

/**
 * Check the records of a plain body (protocol/message-set.ts walkRecords: length, CRC and
 * attribute block of every one) and say where the whole, good ones are, without an object per
 * record. Records at offsets below `skipBelow` are checked but left out of the span.
 */
export function checkRecords(body: Buffer, options: DecodeOptions & {baseOffset: number}, skipBelow = -1): RecordCheck {
  const {baseOffset} = options
  const skipFrom = skipBelow - baseOffset
  let span: RecordSpan | undefined
  const {bytesConsumed, error} = walkRecords(body, options, (pos) => {
    if (span !== undefined) {
      span.last = pos
      span.count += 1
    } else if (pos >= skipFrom) {
      span = {baseOffset, first: pos, last: pos, count: 1}
    }
  })
  return error === undefined ? {span, bytesConsumed} : {span, bytesConsumed, error}
}

/** Where a released batch's body goes (the connection: protocol/buffer-pool.ts). */
interface BodyRecycler {
  recycle(body: Uint8Array): void
}

export class FetchedBatch implements MessageBatch {
  private messagesValue: Message[] | undefined
  /** lastIdText() of a released batch (read before its body went back). */
  private lastId: string | undefined
  private released = false

  constructor(
    readonly topic: string,
    readonly brokerId: number,
    readonly partition: number,
    readonly epoch: number,
    readonly nextOffset: number,
    /** The get's body; records in it were checked by the fetcher. */
    readonly body: Buffer,
    private readonly span: RecordSpan,
    private readonly recycler?: BodyRecycler,
  ) {}

  /**
   * Nothing reads this batch any more: no message of it, no cursor, no view of its body is
   * kept (its records were written out or copied). Its body's memory then takes a later get's
   * answer instead of fresh memory (protocol/buffer-pool.ts). Optional (a batch never released is
   * collected as usual); after it, messages and records() throw.
   */
  release(): void {
    if (this.released) return
    this.lastId = this.lastIdText()
    this.released = true
    this.messagesValue = undefined
    this.recycler?.recycle(this.body)
  }

  /** Messages in the batch. */
  get count(): number {
    return this.span.count
  }

  /** The messages as objects, made on first read (each reads its fields from the body when asked). */
  get messages(): Message[] {
    if (this.messagesValue === undefined) {
      this.checkHeld()
      const messages: Message[] = []
      const records = this.cursor()
      while (records.next()) {
        messages.push(new ConsumedMessage(this.topic, this.partition, this.brokerId, records.offset, records.nextOffset, this.body, records.pos))
      }
      this.messagesValue = messages
    }
    return this.messagesValue
  }

  /** The id of the last message, in decimal (what a commit records as its msgId). */
  lastIdText(): string {
    return this.lastId ?? this.body.readBigInt64BE(this.span.last + 8).toString()
  }

  /** A cursor over the first `limit` records (default all). */
  records(limit = this.span.count): RecordCursor {
    return this.cursor(limit)
  }

  private cursor(limit = this.span.count): BatchRecords {
    this.checkHeld()
    return new BatchRecords(this.topic, this.partition, this.body, this.span, Math.min(limit, this.span.count))
  }

  private checkHeld(): void {
    if (this.released) throw new MetaError('INTERNAL', `batch of ${this.topic}-${this.partition} read after release()`)
  }
}

/**
 * One record at a time, read where it lies: `next()` moves to the next record, whose fields
 * are then read from the cursor. What renderers need of a message, without an object per message.
 */
export interface RecordCursor {
  /** Records the cursor visits in all (at least one). */
  readonly count: number
  /** An upper bound of the data bytes of all of them (to size an output buffer). */
  readonly dataBytesMax: number
  /** Move to the next record; false after the last. */
  next(): boolean
  /** The current record's topic and partition; before next(), the first record's. */
  readonly topic: string
  readonly partition: number
  /** The current record's offset, and the offset after it. */
  readonly offset: number
  readonly nextOffset: number
  /** Its data (the payload after any attribute block) is body[dataStart, dataEnd). */
  readonly body: Uint8Array
  readonly dataStart: number
  readonly dataEnd: number
  attribute(): string | undefined
  /** Write its id in decimal at target[at] (room for 20 characters is the caller's); returns the end. */
  writeId(target: Uint8Array, at: number): number
  timestampMs(): number
}

/** The records of a FetchedBatch, read from its body. */
class BatchRecords implements RecordCursor {
  offset = 0
  nextOffset = 0
  dataStart = 0
  dataEnd = 0
  /** Position of the current record's header in the body. */
  pos = -1
  private seen = 0
  private readonly prefixBytes: number

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly body: Buffer,
    private readonly span: RecordSpan,
    readonly count: number,
  ) {
    this.prefixBytes = span.baseOffset === undefined ? OFFSET_PREFIX_BYTES : 0
  }

  get dataBytesMax(): number {
    return this.span.last + RECORD_HEADER_BYTES + int32At(this.body, this.span.last) - this.span.first
  }

  next(): boolean {
    if (this.seen === this.count) return false
    const body = this.body
    const pos = this.seen === 0 ? this.span.first : this.dataEnd + this.prefixBytes
    this.seen += 1
    const end = pos + RECORD_HEADER_BYTES + int32At(body, pos)
    const base = this.span.baseOffset
    // A filtered body's offsets are int64s below 2^53: high word · 2^32 + low word.
    const offset = base !== undefined ? base + pos : int32At(body, pos - 8) * TWO_POW_32 + (int32At(body, pos - 4) >>> 0)
    this.pos = pos
    this.offset = offset
    this.nextOffset = offset + end - pos
    this.dataStart = dataStart(body, pos)
    this.dataEnd = end
    return true
  }

  attribute(): string | undefined {
    const start = this.pos + RECORD_HEADER_BYTES
    return start === this.dataStart ? undefined : this.body.toString('utf8', start + 4, this.dataStart)
  }

  writeId(target: Uint8Array, at: number): number {
    return writeMessageIdDecimal(target, at, int32At(this.body, this.pos + 8), int32At(this.body, this.pos + 12))
  }

  timestampMs(): number {
    return messageIdTimestampAt(this.body, this.pos + 8)
  }
}

/** Message objects seen through a RecordCursor (meta tail -u, tests): the same output as from a batch. */
export class MessageRecords implements RecordCursor {
  readonly count: number
  readonly dataBytesMax: number
  private index = -1
  private current: Message | undefined

  constructor(private readonly list: readonly Message[]) {
    assert(list.length > 0, 'a cursor over no messages')
    this.count = list.length
    this.dataBytesMax = list.reduce((sum, m) => sum + m.data.length, 0)
  }

  next(): boolean {
    if (this.index + 1 >= this.count) return false
    this.current = this.list[++this.index]
    return true
  }

  /** Before next(), the first message (so that its topic sizes an output buffer). */
  private get message(): Message {
    return this.current ?? this.list[0]
  }

  get topic(): string {
    return this.message.topic
  }

  get partition(): number {
    return this.message.partition
  }

  get offset(): number {
    return this.message.offset
  }

  get nextOffset(): number {
    return this.message.nextOffset
  }

  get body(): Uint8Array {
    return this.message.data
  }

  get dataStart(): number {
    return 0
  }

  get dataEnd(): number {
    return this.message.data.length
  }

  attribute(): string | undefined {
    return this.message.attribute
  }

  writeId(target: Uint8Array, at: number): number {
    const text = this.message.id.toString()
    for (let i = 0; i < text.length; i++) target[at++] = text.charCodeAt(i)
    return at
  }

  timestampMs(): number {
    return this.message.timestampMs
  }
}
