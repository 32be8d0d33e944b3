/**
 * A growable byte buffer that encoders write frames into. The connection drains it once per
 * event-loop turn, so many small responses (put acks) leave in one socket write.
 *
 * Hot-path encoders (put, put acks) write header lines piecewise — cached bytes for the
 * constant parts, {@link writeInt} for numbers — because building a template string and
 * converting it with `Buffer#write` costs several hundred ns per frame, more than the rest
 * of the frame's work.
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
    const n = text.length
    this.ensure(n)
    if (n <= SHORT_TEXT_CHARS) {
      const buf = this.buf
      let pos = this.length
      for (let i = 0; i < n; i++) buf[pos++] = text.charCodeAt(i)
      this.length = pos
    } else {
      this.length += this.buf.write(text, this.length, 'latin1')
    }
  }

  /** Append UTF-8 text. */
  writeUtf8(text: string): void {
    this.ensure(Buffer.byteLength(text))
    this.length += this.buf.write(text, this.length, 'utf8')
  }

  writeBytes(bytes: Uint8Array): void {
    const n = bytes.byteLength
    this.ensure(n)
    if (n <= SHORT_BYTES) {
      const buf = this.buf
      let pos = this.length
      for (let i = 0; i < n; i++) buf[pos++] = bytes[i]
      this.length = pos
    } else {
      this.buf.set(bytes, this.length)
      this.length += n
    }
  }

  /** Append one byte (a separator: space, CR, LF). */
  writeByte(byte: number): void {
    this.ensure(1)
    this.buf[this.length++] = byte
  }

  /** Append a big-endian int32 (record headers). */
  writeInt32BE(value: number): void {
    this.ensure(4)
    this.length = this.buf.writeInt32BE(value | 0, this.length)
  }

  /** Append "\r\n". */
  writeCrlf(): void {
    this.ensure(2)
    this.buf[this.length++] = 0x0d
    this.buf[this.length++] = 0x0a
  }

  /**
   * Append the decimal text of an integer, exactly as `String(n)` writes it, for any safe
   * integer (|n| <= 2^53 - 1). Other numbers are written with String(n).
   */
  writeInt(n: number): void {
    if (n >= 0 && n <= 0x7fffffff && (n | 0) === n) {
      // The common case (lengths, partitions, opaques, most offsets): int32 arithmetic.
      this.ensure(10)
      const buf = this.buf
      const end = this.length + smallDigits(n)
      let i = end
      do {
        const q = (n / 10) | 0
        buf[--i] = 48 + (n - q * 10)
        n = q
      } while (n > 0)
      this.length = end
      return
    }
    if (!Number.isSafeInteger(n) || Object.is(n, -0)) {
      this.writeAscii(String(n))
      return
    }
    this.ensure(MAX_INT_CHARS)
    const buf = this.buf
    let pos = this.length
    if (n < 0) {
      buf[pos++] = 0x2d
      n = -n
    }
    const end = pos + decimalDigits(n)
    let i = end
    do {
      const q = Math.floor(n / 10)
      buf[--i] = 48 + (n - q * 10)
      n = q
    } while (n > 0)
    this.length = end
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

/** Below this many characters a JavaScript loop beats the native latin1 write call. */
const SHORT_TEXT_CHARS = 24
/** Below this many bytes a JavaScript loop beats TypedArray#set. */
const SHORT_BYTES = 16
/** "-9007199254740991" */
const MAX_INT_CHARS = 17

/** The length of String(n) for an integer n (writeInt writes exactly that many bytes). */
export function intTextLength(n: number): number {
  if (n >= 0 && n <= 0x7fffffff && (n | 0) === n) return smallDigits(n)
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return String(n).length
  return n < 0 ? 1 + decimalDigits(-n) : decimalDigits(n)
}

/** Digits of a non-negative int32. */
function smallDigits(n: number): number {
  if (n < 100000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10000 ? 4 : 5
  return n < 1000000 ? 6 : n < 10000000 ? 7 : n < 100000000 ? 8 : n < 1000000000 ? 9 : 10
}

/** Digits of a non-negative safe integer. */
function decimalDigits(n: number): number {
  let digits = 1
  let limit = 10
  while (n >= limit && digits < 16) {
    digits += 1
    limit *= 10
  }
  return digits
}
