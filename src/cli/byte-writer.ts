import type {RecordCursor} from '../client/fetched-batch.js'
import {writeUint32Digits, writeUint32Padded} from '../protocol/output-buffer.js'

const TEN_POW_8 = 100_000_000
/**
 * Constants and data up to this many bytes are copied byte by byte ({@link ByteWriter.literal},
 * {@link ByteWriter.data}): cheaper than a native call (and, for a range of a body, its view) at that size.
 */
const LOOP_MAX_BYTES = 64

/**
 * A growable output buffer for rendering a batch of messages. Each render gets a fresh one,
 * so a stdout write still pending never sees its bytes change.
 */
export class ByteWriter {
  private buf: Buffer
  private length = 0

  constructor(initialBytes = 4096) {
    this.buf = Buffer.allocUnsafe(Math.max(64, initialBytes))
  }

  bytes(b: Uint8Array): void {
    this.ensure(b.length)
    this.buf.set(b, this.length)
    this.length += b.length
  }

  /** A constant, usually short (a format's literal text). */
  literal(b: Uint8Array): void {
    if (b.length > LOOP_MAX_BYTES) return this.bytes(b)
    this.ensure(b.length)
    const buf = this.buf
    let at = this.length
    for (let i = 0; i < b.length; i++) buf[at++] = b[i]
    this.length = at
  }

  /** The current record's data, copied from where it lies. */
  data(r: RecordCursor): void {
    const body = r.body
    const start = r.dataStart
    const end = r.dataEnd
    this.ensure(end - start)
    if (end - start > LOOP_MAX_BYTES) {
      this.buf.set(body.subarray(start, end), this.length)
      this.length += end - start
      return
    }
    const buf = this.buf
    let at = this.length
    for (let i = start; i < end; i++) buf[at++] = body[i]
    this.length = at
  }

  /**
   * The current record's data as the inside of a JSON string when every byte is printable
   * ASCII other than `"` and `\\` (nothing to escape, valid UTF-8): true; else nothing is
   * written, false.
   */
  jsonSafeAsciiData(r: RecordCursor): boolean {
    const start = this.length
    this.data(r)
    const buf = this.buf
    for (let i = start, end = this.length; i < end; i++) {
      const c = buf[i]
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) {
        this.length = start
        return false
      }
    }
    return true
  }

  /** A non-negative integer in decimal (another number: its String()). */
  uint(n: number): void {
    if (n >>> 0 === n) {
      this.ensure(10)
      this.length = writeUint32Digits(this.buf, this.length, n)
    } else if (n > 0 && n <= Number.MAX_SAFE_INTEGER && Math.floor(n) === n) {
      // high·10^8 + low: high < 2^32 for every safe integer.
      const high = Math.floor(n / TEN_POW_8)
      this.ensure(18)
      this.length = writeUint32Padded(this.buf, writeUint32Digits(this.buf, this.length, high), n - high * TEN_POW_8, 8)
    } else {
      this.ascii(String(n))
    }
  }

  /** The current record's id in decimal. */
  messageId(r: RecordCursor): void {
    this.ensure(20)
    this.length = r.writeId(this.buf, this.length)
  }

  /** ASCII text (numbers, base64, topic names): one byte per character. */
  ascii(text: string): void {
    this.ensure(text.length)
    this.length += this.buf.write(text, this.length, 'latin1')
  }

  utf8(text: string): void {
    this.ensure(Buffer.byteLength(text))
    this.length += this.buf.write(text, this.length, 'utf8')
  }

  /** The bytes written (a view; the writer is not reused). */
  result(): Buffer {
    return this.buf.subarray(0, this.length)
  }

  private ensure(extra: number): void {
    const needed = this.length + extra
    if (needed <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(needed, this.buf.length * 2))
    this.buf.copy(next, 0, 0, this.length)
    this.buf = next
  }
}
