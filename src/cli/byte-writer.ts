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
