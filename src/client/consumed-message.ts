/**
 * A consumed message: a record of a fetched body (protocol/message-set.ts), read field by field
 * when user code asks. The fetcher checked the record (length, CRC, attribute block) before
 * handing over its batch; this object only points at it, so a message costs one small object
 * and no string, bigint or view until its attribute, id or data is read.
 */
import {FLAG_HAS_ATTRIBUTE, RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import {messageIdTimestampAt} from '../protocol/message-id.js'
import {int32At} from '../protocol/output-buffer.js'
import type {Message} from './types.js'

/** Marks an attribute not read yet (undefined is a value: the message has none). */
const UNREAD = Symbol('unread')

export class ConsumedMessage implements Message {
  private idValue: bigint | undefined
  private dataValue: Buffer | undefined
  private attributeValue: string | undefined | typeof UNREAD = UNREAD

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly brokerId: number,
    readonly offset: number,
    readonly nextOffset: number,
    /** The fetched body holding the record, and the position of the record's header in it. */
    private readonly set: Buffer,
    private readonly pos: number,
  ) {}

  get flag(): number {
    return int32At(this.set, this.pos + 16)
  }

  get attribute(): string | undefined {
    if (this.attributeValue === UNREAD) {
      const start = this.pos + RECORD_HEADER_BYTES
      this.attributeValue = (this.flag & FLAG_HAS_ATTRIBUTE) === 0 ? undefined : this.set.toString('utf8', start + 4, start + 4 + int32At(this.set, start))
    }
    return this.attributeValue
  }

  get data(): Buffer {
    return (this.dataValue ??= this.set.subarray(dataStart(this.set, this.pos), this.pos + this.nextOffset - this.offset))
  }

  get id(): bigint {
    return (this.idValue ??= this.set.readBigInt64BE(this.pos + 8))
  }

  get timestampMs(): number {
    return messageIdTimestampAt(this.set, this.pos + 8)
  }
}

/** Where the data of the record at `pos` starts: after its header and attribute block (if any). */
export function dataStart(set: Uint8Array, pos: number): number {
  const start = pos + RECORD_HEADER_BYTES
  return (int32At(set, pos + 16) & FLAG_HAS_ATTRIBUTE) === 0 ? start : start + 4 + int32At(set, start)
}
