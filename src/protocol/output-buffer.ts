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
  /** A DataView of `buf`, for encoders that store several bytes at once ({@link roomView}). */
  private view: DataView
  private length = 0

  constructor(initialBytes = INITIAL_BYTES) {
    this.buf = Buffer.allocUnsafe(initialBytes)
    this.view = viewOf(this.buf)
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

  /**
   * Room for `bytes` more bytes: returns the buffer to write into from {@link byteLength};
   * call {@link advance} with the new end. For hot encoders that write a whole line at once.
   */
  room(bytes: number): Buffer {
    this.ensure(bytes)
    return this.buf
  }

  /**
   * {@link room} as a DataView of the same bytes: a 16- or 32-bit store costs about what a
   * byte store does in optimized code, so a hot encoder writes two or four bytes per store.
   */
  roomView(bytes: number): DataView {
    this.ensure(bytes)
    return this.view
  }

  /** The bytes up to `end` (≤ byteLength + the room asked for) are written. */
  advance(end: number): void {
    this.length = end
  }

  /** Append bytes[start..end) (small ranges: a loop). */
  writeRange(bytes: Uint8Array, start: number, end: number): void {
    this.ensure(end - start)
    const buf = this.buf
    let pos = this.length
    for (let i = start; i < end; i++) buf[pos++] = bytes[i]
    this.length = pos
  }

  /** Append one byte (a separator: space, CR, LF). */
  writeByte(byte: number): void {
    this.ensure(1)
    this.buf[this.length++] = byte
  }

  /** Append a big-endian int32 (record headers). */
  writeInt32BE(value: number): void {
    this.ensure(4)
    putInt32BE(this.buf, this.length, value)
    this.length += 4
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
    if (n >>> 0 === n) {
      // The common case (lengths, partitions, offsets, positive opaques): uint32 arithmetic.
      this.ensure(10)
      this.length = writeUint32Digits(this.buf, this.length, n)
      return
    }
    if (n < 0 && n >= -0xffffffff && -n >>> 0 === -n) {
      // Negative opaques (clients count up from -2^31).
      this.ensure(11)
      this.buf[this.length] = 0x2d
      this.length = writeUint32Digits(this.buf, this.length + 1, -n)
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

  /**
   * Take the bytes written so far as one Buffer and reset. A little is copied out (into Node's
   * buffer pool); from {@link HAND_OVER_BYTES} on, the buffer itself is handed over and a new
   * one of the same capacity (uninitialised) takes its place: a window of puts or a burst of
   * acks is hundreds of KiB, and copying it cost more than the allocation it saves.
   */
  take(): Buffer {
    const n = this.length
    this.length = 0
    if (n < HAND_OVER_BYTES) {
      const out = Buffer.from(this.buf.subarray(0, n))
      if (this.buf.length > MAX_KEPT_BYTES) {
        this.buf = Buffer.allocUnsafe(INITIAL_BYTES) // do not pin a burst's buffer
        this.view = viewOf(this.buf)
      }
      return out
    }
    const out = this.buf.subarray(0, n)
    this.buf = Buffer.allocUnsafe(this.buf.length > MAX_KEPT_BYTES ? INITIAL_BYTES : this.buf.length)
    this.view = viewOf(this.buf)
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
    this.view = viewOf(next)
  }
}

function viewOf(buf: Buffer): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.length)
}

/** A new buffer's capacity, and what a burst's grown buffer shrinks back to. */
const INITIAL_BYTES = 16 * 1024
/** A buffer grown beyond this by a burst is not kept for the next frames. */
const MAX_KEPT_BYTES = 1024 * 1024
/** From this many bytes, take() hands its buffer over instead of copying out of it. */
const HAND_OVER_BYTES = 64 * 1024

/** Below this many characters a JavaScript loop beats the native latin1 write call. */
const SHORT_TEXT_CHARS = 24
/** Below this many bytes a JavaScript loop beats TypedArray#set. */
const SHORT_BYTES = 16
/** "-9007199254740991" */
const MAX_INT_CHARS = 17

/** The length of String(n) for an integer n (writeInt writes exactly that many bytes). */
export function intTextLength(n: number): number {
  if (n >>> 0 === n) return uint32Digits(n)
  if (!Number.isSafeInteger(n) || Object.is(n, -0)) return String(n).length
  return n < 0 ? 1 + decimalDigits(-n) : decimalDigits(n)
}

/**
 * Write `value` as a big-endian int32 at buf[pos] (the caller checked the bounds). By hand:
 * Buffer#writeInt32BE costs a prototype lookup (V8's generic LoadIC stub on these call
 * sites) and argument checks per call, more than the write.
 */
export function putInt32BE(buf: Uint8Array, pos: number, value: number): void {
  buf[pos] = value >>> 24
  buf[pos + 1] = value >>> 16
  buf[pos + 2] = value >>> 8
  buf[pos + 3] = value
}

/** The big-endian int32 at buf[pos] (the caller checked the bounds), by hand as above. */
export function int32At(buf: Uint8Array, pos: number): number {
  return (buf[pos] << 24) | (buf[pos + 1] << 16) | (buf[pos + 2] << 8) | buf[pos + 3]
}

/** "00" … "99" as ASCII pairs: two digits per division. */
const DIGIT_PAIRS = (() => {
  const t = new Uint8Array(200)
  for (let i = 0; i < 100; i++) {
    t[2 * i] = 48 + Math.floor(i / 10)
    t[2 * i + 1] = 48 + (i % 10)
  }
  return t
})()

/** Write the decimal digits of a uint32 at buf[pos]; returns the end. The caller ensured 10 bytes. */
export function writeUint32Digits(buf: Uint8Array, pos: number, m: number): number {
  const end = pos + uint32Digits(m)
  writeDigitsBackwards(buf, end, m, end - pos)
  return end
}

/** The same, zero-padded to `width` digits (m < 10^width). */
export function writeUint32Padded(buf: Uint8Array, pos: number, m: number, width: number): number {
  writeDigitsBackwards(buf, pos + width, m, width)
  return pos + width
}

function writeDigitsBackwards(buf: Uint8Array, end: number, m: number, width: number): void {
  const t = DIGIT_PAIRS
  let i = end
  const start = end - width
  if (m > 0x7fffffff && i - start >= 2) {
    // One step in floating point; below 2^31 afterwards.
    const q = Math.floor(m / 100)
    const r = (m - q * 100) * 2
    buf[--i] = t[r + 1]
    buf[--i] = t[r]
    m = q
  }
  // int32 arithmetic from here: V8 turns the division by a constant into a multiplication.
  while (i - start >= 2) {
    const q = (m / 100) | 0
    const r = (m - q * 100) << 1
    buf[--i] = t[r + 1]
    buf[--i] = t[r]
    m = q
  }
  if (i > start) buf[--i] = 48 + (m % 10)
}

/** "00" … "99" as little-endian 16-bit words of their two ASCII digits: one store per pair. */
const DIGIT_PAIR_WORDS = (() => {
  const t = new Uint16Array(100)
  for (let i = 0; i < 100; i++) t[i] = (48 + Math.floor(i / 10)) | ((48 + (i % 10)) << 8)
  return t
})()

/** writeUint32Digits into a DataView (two digits per store). */
export function setUint32Digits(view: DataView, pos: number, m: number): number {
  const end = pos + uint32Digits(m)
  setDigitsBackwards(view, end, m, end - pos)
  return end
}

/** writeUint32Padded into a DataView (two digits per store). */
export function setUint32Padded(view: DataView, pos: number, m: number, width: number): number {
  setDigitsBackwards(view, pos + width, m, width)
  return pos + width
}

function setDigitsBackwards(view: DataView, end: number, m: number, width: number): void {
  const t = DIGIT_PAIR_WORDS
  let i = end
  const start = end - width
  if (m > 0x7fffffff && i - start >= 2) {
    const q = Math.floor(m / 100)
    i -= 2
    view.setUint16(i, t[m - q * 100], true)
    m = q
  }
  while (i - start >= 2) {
    const q = (m / 100) | 0
    i -= 2
    view.setUint16(i, t[m - q * 100], true)
    m = q
  }
  if (i > start) view.setUint8(i - 1, 48 + (m % 10))
}

/** Digits of a uint32. */
export function uint32Digits(n: number): number {
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

/** Differences up to this are applied to the digits of {@link DecimalText} in place. */
const MAX_STEP = 1_000_000
const MAX_DECIMAL_CHARS = 21

/**
 * The decimal text of an integer that mostly moves in small steps (a connection's opaques,
 * message ids, a partition's offsets), kept as digits and updated by adding or subtracting
 * the step digit by digit (usually one or two digits) instead of formatting it again: the put
 * acknowledgement's numbers then cost a digit or two of work each instead of a division per
 * digit pair. Any other change formats it afresh. Text is always exactly String(n) (or the
 * id's BigInt#toString).
 */
export class DecimalText {
  /** Digits of |value|, left-aligned, `length` of them (without the sign); room to read words past them. */
  private readonly digits = new Uint8Array(MAX_DECIMAL_CHARS + 3)
  private readonly digitWords = new DataView(this.digits.buffer)
  private length = 0
  private negative = false
  /** The number, when it is a safe integer (set); NaN for an id. */
  private value = Number.NaN
  /** The id halves (setIdHalves), or NaN. */
  private high = Number.NaN
  private low = 0

  /** Set to a safe integer n. */
  set(n: number): void {
    const last = this.value
    if (n === last) return
    const step = n - last
    if (step > -MAX_STEP && step < MAX_STEP && ((last >= 0 && n > 0) || (last < 0 && n < 0)))
      this.move(last < 0 ? -step : step) // the magnitude moves
    else this.format(n)
    this.value = n
    this.high = Number.NaN
  }

  /** Set to the message id with these int64 halves (MessageIdGenerator#nextHalves). */
  setIdHalves(high: number, low: number, write: (buf: Uint8Array, pos: number, high: number, low: number) => number): void {
    if (high === this.high && high >= 0) {
      const step = low - this.low
      if (step === 0) return
      if (step > 0 && step < MAX_STEP) {
        this.move(step)
        this.low = low
        return
      }
    }
    this.negative = false
    this.length = write(this.digits, 0, high, low)
    if (this.digits[0] === 0x2d) {
      this.negative = true
      this.digits.copyWithin(0, 1, this.length)
      this.length -= 1
    }
    this.high = high
    this.low = low
    this.value = Number.NaN
  }

  /** Characters of the text, sign included. */
  get byteLength(): number {
    return this.negative ? this.length + 1 : this.length
  }

  /**
   * Write the text at `pos` of a DataView, four digits per store; returns the end. It may
   * store up to 3 bytes past the end (the caller's room covers them, and it writes on from there).
   */
  setTo(view: DataView, pos: number): number {
    if (this.negative) view.setUint8(pos++, 0x2d)
    const words = this.digitWords
    const n = this.length
    for (let i = 0; i < n; i += 4) view.setUint32(pos + i, words.getUint32(i, true), true)
    return pos + n
  }

  private format(n: number): void {
    const text = String(n)
    this.negative = n < 0
    const from = this.negative ? 1 : 0
    for (let i = from; i < text.length; i++) this.digits[i - from] = text.charCodeAt(i)
    this.length = text.length - from
  }

  /** |value| += step (−MAX_STEP < step < MAX_STEP; the result stays above 0). */
  private move(step: number): void {
    const d = this.digits
    const sign = step < 0 ? -1 : 1
    let rest = step * sign
    let i = this.length - 1
    let carry = 0
    while (rest > 0 || carry !== 0) {
      const r = rest % 10
      rest = (rest - r) / 10
      if (i < 0) {
        // A new leading digit: shift right by one (999 + 1).
        d.copyWithin(1, 0, this.length)
        this.length += 1
        i = 0
        d[0] = 48
      }
      let digit = d[i] - 48 + sign * r + carry
      carry = digit >= 10 ? 1 : digit < 0 ? -1 : 0
      digit -= carry * 10
      d[i] = 48 + digit
      i -= 1
    }
    // Leading zeros (1000 - 1): drop them, keeping at least one digit.
    let lead = 0
    while (lead < this.length - 1 && d[lead] === 48) lead += 1
    if (lead > 0) {
      d.copyWithin(0, lead, this.length)
      this.length -= lead
    }
  }
}
