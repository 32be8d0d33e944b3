/**
 * A growable byte buffer that encoders write frames into. The connection drains it once per
 * event-loop turn, so many small responses (put acks) leave in one socket write.
 */
export class OutputBuffer {
  private buf: Buffer
  private length = 0

  constructor(initialBytes = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(initialBytes)
  }

  get byteLength(): number {
    return this.length
  }

  /** Append ASCII/Latin-1 text (protocol header lines). */
  writeAscii(text: string): void {
    this.ensure(text.length)
    this.length += this.buf.write(text, this.length, 'latin1')
  }

  /** Append UTF-8 text. */
  writeUtf8(text: string): void {
    this.ensure(Buffer.byteLength(text))
    this.length += this.buf.write(text, this.length, 'utf8')
  }

  writeBytes(bytes: Uint8Array): void {
    this.ensure(bytes.byteLength)
    this.buf.set(bytes, this.length)
    this.length += bytes.byteLength
  }

  /** Take the bytes written so far as one Buffer (a copy) and reset. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.length))
    this.length = 0
    if (this.buf.length > 1024 * 1024) this.buf = Buffer.allocUnsafe(16 * 1024) // do not pin a burst's buffer
    return out
  }

  private ensure(extra: number): void {
    const needed = this.length + extra
    if (needed <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < needed) size *= 2
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.length)
    this.buf = next
  }
}
