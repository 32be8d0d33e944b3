/**
 * The incremental frame decoder: bytes in (any chunking), whole frames out.
 *
 * Every frame starts with a header line of space-separated tokens ending in \r\n; the header says
 * how many body bytes follow (docs/protocol.md#framing). The decoder finds the line, hands the
 * tokens to the parser registered for token 0, then collects exactly that many body bytes. Limits
 * are enforced before anything is buffered: a header line longer than `maxHeaderBytes`, or a
 * declared body longer than `maxSkippedBodyBytes` (default `maxBodyBytes`), throws FRAME_TOO_LARGE;
 * a malformed header throws DECODE_ERROR. Both are fatal for the stream (the broker closes the
 * connection). A body longer than `maxBodyBytes` but within `maxSkippedBodyBytes` is streamed past
 * without being buffered, and its frame is returned with an empty body and {@link
 * oversizeBodyBytes} set, so the receiver can answer it.
 *
 * NUL bytes between frames are skipped (some MetaQ clients pad a put after its body); a NUL
 * inside a header line is still an error.
 *
 * Header lines are decoded as UTF-8, so a name token with non-ASCII characters is the string
 * the client meant (names are validated elsewhere, names.ts).
 *
 * Bodies that arrive whole in one chunk are views into that chunk (no copy); a body split
 * across chunks is assembled into a buffer of exactly its length (no quadratic concat), unless
 * {@link FrameDecoder.refuseBody} refuses it: then it is streamed past like an oversize body and
 * its frame comes out at once with an empty body and {@link refusedBodyBytes} set (a put the
 * sender may not make costs no memory however large and however slowly it arrives).
 */
import {Buffer} from 'node:buffer'
import {MetaError} from './errors.js'

export type HeaderParser<F> = (tokens: string[]) => {frame: F; bodyLength: number}

/**
 * A byte-level parser for one command's most common header form, tried before the token
 * parser: it reads `buf[start, eol)` (the header line without \r\n; `buf[eol]` is the \r) in
 * place and returns the frame, with its body length in {@link byteParse}, or undefined for
 * anything it does not handle, which then goes through the token parser unchanged (errors
 * included). Registered by command name; the first byte selects it.
 */
export type ByteParser<F> = (buf: Buffer, start: number, eol: number) => F | undefined

/**
 * The body length of the frame a {@link ByteParser} returned last (module state: no result
 * object per frame; a field, not an exported `let`, as {@link decimalScan}).
 */
export const byteParse = {bodyLength: 0}

export interface DecoderLimits {
  /** Longest accepted header line, \r\n excluded (default 4096). */
  maxHeaderBytes?: number
  /** Longest accepted body (default 16 MiB). */
  maxBodyBytes?: number
  /**
   * Longest body that is skipped (streamed past, never buffered) rather than refused: its
   * frame comes out with an empty body and {@link oversizeBodyBytes} set. Default
   * `maxBodyBytes` (nothing is skipped).
   */
  maxSkippedBodyBytes?: number
}

export const MAX_HEADER_BYTES_DEFAULT = 4096
const CR = 0x0d
const LF = 0x0a
const NUL = 0x00
const EMPTY = Buffer.alloc(0)

/** The properties the decoder sets on a frame whose body it skipped. */
interface Oversize {
  oversizeBodyBytes?: number
  refusedBodyBytes?: number
}

/**
 * The declared body length of a frame whose body was too large and was skipped (its `body`
 * is empty), or undefined for a frame that arrived whole.
 */
export function oversizeBodyBytes(frame: object): number | undefined {
  return (frame as Oversize).oversizeBodyBytes
}

/**
 * The declared body length of a frame whose body {@link FrameDecoder.refuseBody} refused (its
 * `body` is empty), or undefined.
 */
export function refusedBodyBytes(frame: object): number | undefined {
  return (frame as Oversize).refusedBodyBytes
}

const allocateBody = (bytes: number): Buffer => Buffer.allocUnsafe(bytes)

export class FrameDecoder<F extends object> {
  private buf: Buffer = EMPTY
  private pos = 0
  /**
   * `buf`'s memory, read once per chunk: a body view is `Buffer.from(bufArray, …)`, because
   * `Buffer#subarray` reads `buffer` and `byteOffset` through V8's generic LoadIC on every call
   * (its feedback is shared by every caller in the process), a cost paid on every put.
   */
  private bufArray: ArrayBuffer = EMPTY.buffer as ArrayBuffer
  private bufOffset = 0
  /** A frame whose header is parsed and whose body is still arriving. */
  private pending: F | undefined
  private pendingBody: Buffer = EMPTY
  private pendingFilled = 0
  /** Bytes of a skipped body still to come. */
  private skipping = 0
  private readonly maxHeaderBytes: number
  private readonly maxBodyBytes: number
  private readonly maxSkippedBodyBytes: number
  /** Byte parsers by the first byte of their command name. */
  private readonly byteParsers: Array<ByteParser<F> | undefined> = []
  /** Memory for a body that arrives in several reads (a client's come from protocol/buffer-pool.ts). */
  allocateBody: (bytes: number) => Buffer = allocateBody
  /**
   * Asked about a frame whose body has not arrived whole: true skips the body (the frame comes
   * out at once, {@link refusedBodyBytes} set). A frame whose body is already here is not asked.
   */
  refuseBody: ((frame: F) => boolean) | undefined = undefined

  constructor(
    private readonly parsers: ReadonlyMap<string, HeaderParser<F>>,
    limits: DecoderLimits = {},
    byteParsers: ReadonlyMap<string, ByteParser<F>> = new Map(),
  ) {
    this.maxHeaderBytes = limits.maxHeaderBytes ?? MAX_HEADER_BYTES_DEFAULT
    this.maxBodyBytes = limits.maxBodyBytes ?? 16 * 1024 * 1024
    this.maxSkippedBodyBytes = Math.max(this.maxBodyBytes, limits.maxSkippedBodyBytes ?? 0)
    for (const [name, parser] of byteParsers) this.byteParsers[name.charCodeAt(0)] = parser
  }

  /** Bytes received but not yet returned as frames. */
  get bufferedBytes(): number {
    return this.buf.length - this.pos + this.pendingFilled
  }

  /**
   * True while a frame has started but not completed (a disconnect now loses it whole), or
   * whole frames wait to be taken with next().
   */
  get inFrame(): boolean {
    return this.pending !== undefined || this.skipping > 0 || this.pos < this.buf.length
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return
    if (this.pending !== undefined) {
      const take = Math.min(chunk.length, this.pendingBody.length - this.pendingFilled)
      chunk.copy(this.pendingBody, this.pendingFilled, 0, take)
      this.pendingFilled += take
      if (take === chunk.length) return
      chunk = chunk.subarray(take)
    } else if (this.skipping > 0) {
      const skip = Math.min(chunk.length, this.skipping)
      this.skipping -= skip
      if (skip === chunk.length) return
      chunk = chunk.subarray(skip)
    }
    if (this.pos < this.buf.length) {
      this.buf = Buffer.concat([this.buf.subarray(this.pos), chunk])
    } else {
      this.buf = chunk
    }
    this.pos = 0
    this.bufArray = this.buf.buffer as ArrayBuffer
    this.bufOffset = this.buf.byteOffset
  }

  /**
   * The unfilled part of a body that is still arriving (a view of it), or undefined when none
   * is: a socket can read the rest of a large body straight into it (net.connect's `onread`),
   * then report the bytes with {@link bodyFilled} instead of copying them in with push().
   */
  bodyRoom(): Buffer | undefined {
    return this.pending !== undefined && this.pendingFilled < this.pendingBody.length ? this.pendingBody.subarray(this.pendingFilled) : undefined
  }

  /** `bytes` were read into the view {@link bodyRoom} returned. */
  bodyFilled(bytes: number): void {
    if (this.pending === undefined || bytes > this.pendingBody.length - this.pendingFilled) {
      throw new MetaError('INTERNAL', `${bytes} bytes reported read into a body with ${this.pendingBody.length - this.pendingFilled} bytes of room`)
    }
    this.pendingFilled += bytes
  }

  /** The next whole frame, or undefined when more bytes are needed. Throws on bad input. */
  next(): F | undefined {
    if (this.pending !== undefined) {
      if (this.pendingFilled < this.pendingBody.length) return undefined
      const frame = this.pending
      ;(frame as {body?: Buffer}).body = this.pendingBody
      this.pending = undefined
      this.pendingBody = EMPTY
      this.pendingFilled = 0
      return frame
    }
    if (this.skipping > 0) return undefined
    const buf = this.buf
    let start = this.pos
    while (start < buf.length && buf[start] === NUL) start++
    if (start >= buf.length) {
      this.buf = EMPTY
      this.pos = 0
      return undefined
    }
    this.pos = start
    const eol = findCrlf(buf, start, this.maxHeaderBytes)
    if (eol < 0) {
      if (buf.length - start > this.maxHeaderBytes + 1) throw this.headerTooLong()
      return undefined
    }
    if (eol - start > this.maxHeaderBytes) throw this.headerTooLong()
    let frame = this.byteParsers[buf[start]]?.(buf, start, eol)
    let bodyLength = byteParse.bodyLength
    if (frame === undefined) ({frame, bodyLength} = this.parseTokens(buf, start, eol))
    const bodyStart = eol + 2
    if (bodyLength > this.maxBodyBytes) {
      if (bodyLength > this.maxSkippedBodyBytes) {
        const name = buf.toString('latin1', start, eol).split(' ')[0]
        throw new MetaError('FRAME_TOO_LARGE', `"${name}" body of ${bodyLength} bytes exceeds the limit of ${this.maxBodyBytes} bytes`, {
          details: {bodyLength, maxBodyBytes: this.maxBodyBytes},
        })
      }
      return this.skipBody(frame, bodyStart, bodyLength)
    }
    if (bodyLength === 0) {
      this.advance(bodyStart)
      return frame
    }
    const available = buf.length - bodyStart
    if (available >= bodyLength) {
      ;(frame as {body?: Buffer}).body = Buffer.from(this.bufArray, this.bufOffset + bodyStart, bodyLength)
      this.advance(bodyStart + bodyLength)
      return frame
    }
    if (this.refuseBody?.(frame) === true) {
      const skipped = this.skipBody(frame, bodyStart, bodyLength)
      ;(skipped as Oversize).oversizeBodyBytes = undefined
      ;(skipped as Oversize).refusedBodyBytes = bodyLength
      return skipped
    }
    this.pending = frame
    this.pendingBody = this.allocateBody(bodyLength)
    buf.copy(this.pendingBody, 0, bodyStart)
    this.pendingFilled = available
    this.buf = EMPTY
    this.pos = 0
    return undefined
  }

  /** Return an oversize frame at once, and pass over its body as it arrives. */
  private skipBody(frame: F, bodyStart: number, bodyLength: number): F {
    const available = Math.min(this.buf.length - bodyStart, bodyLength)
    ;(frame as {body?: Buffer}).body = EMPTY
    ;(frame as Oversize).oversizeBodyBytes = bodyLength
    this.skipping = bodyLength - available
    this.advance(bodyStart + available)
    return frame
  }

  private parseTokens(buf: Buffer, start: number, eol: number): {frame: F; bodyLength: number} {
    const tokens = buf.toString('utf8', start, eol).split(' ')
    const parser = this.parsers.get(tokens[0])
    if (parser === undefined) {
      throw new MetaError('DECODE_ERROR', `unknown command ${JSON.stringify(truncate(tokens[0]))}`)
    }
    return parser(tokens)
  }

  private advance(to: number): void {
    if (to >= this.buf.length) {
      this.buf = EMPTY
      this.pos = 0
    } else {
      this.pos = to
    }
  }

  private headerTooLong(): MetaError {
    return new MetaError('FRAME_TOO_LARGE', `header line longer than ${this.maxHeaderBytes} bytes`, {
      details: {maxHeaderBytes: this.maxHeaderBytes},
    })
  }
}

/**
 * Reads the tokens of a header line in place, for byte parsers. Numbers follow
 * tokens.ts#parseIntToken for what they accept, minus its rarer forms (a '+' sign, 16
 * digits), for which they answer NaN so that the caller falls back to the token parser.
 */
export class HeaderCursor {
  private buf: Buffer = EMPTY
  private end = 0
  /** Position of the next unread byte. */
  pos = 0

  /** Read `buf[start, end)`. Returns this cursor. */
  reset(buf: Buffer, start: number, end: number): this {
    this.buf = buf
    this.pos = start
    this.end = end
    return this
  }

  /** True when every byte of the line has been read. */
  get atEnd(): boolean {
    return this.pos >= this.end
  }

  /** Consume `literal` (e.g. "put ") if the line continues with it. */
  expect(literal: readonly number[]): boolean {
    const buf = this.buf
    const pos = this.pos
    if (pos + literal.length > this.end) return false
    for (let i = 0; i < literal.length; i++) if (buf[pos + i] !== literal[i]) return false
    this.pos = pos + literal.length
    return true
  }

  /** Consume one space followed by a non-empty token. */
  space(): boolean {
    const pos = this.pos
    if (pos + 1 >= this.end || this.buf[pos] !== 0x20 || this.buf[pos + 1] === 0x20) return false
    this.pos = pos + 1
    return true
  }

  /** Consume a non-empty token up to the next space or the end; returns its end (or -1). */
  word(): number {
    const buf = this.buf
    const end = this.end
    const start = this.pos
    let pos = start
    while (pos < end && buf[pos] !== 0x20) pos++
    if (pos === start) return -1
    this.pos = pos
    return pos
  }

  /**
   * Consume a decimal integer token in canonical form: no '+', no leading zero, no "-0"
   * (tokens.ts#canonicalIntField). NaN when it is not one.
   */
  canonicalInt(): number {
    const buf = this.buf
    const pos = this.pos
    const digit = buf[pos] === 0x2d ? pos + 1 : pos
    // A leading "0" is canonical only as the whole token "0".
    if (digit < this.end && buf[digit] === 0x30 && (digit > pos || (digit + 1 < this.end && buf[digit + 1] !== 0x20))) return Number.NaN
    return this.int()
  }

  /** Consume a decimal integer token: optional '-', 1 to 15 digits. NaN when it is not one. */
  int(): number {
    const buf = this.buf
    const end = this.end
    const value = decimalAt(buf, this.pos, end)
    const pos = decimalScan.end
    if (Number.isNaN(value) || (pos < end && buf[pos] !== 0x20)) return Number.NaN
    this.pos = pos
    return value
  }
}

/**
 * Where the last {@link decimalAt} stopped (module state: no result object per number). A
 * field, not an exported `let`: the bundle makes a chunk's exports fixed values once it has
 * run (scripts/build-cli.mjs, plainExports).
 */
export const decimalScan = {end: 0}

/**
 * The decimal integer at buf[pos, end) for byte parsers: an optional '-', then 1 to 15 digits
 * (what tokens.ts#parseIntToken accepts, minus a '+' sign and 16 digits); NaN when there is no
 * digit or more than 15. Sets {@link decimalScan}.end to the first byte after the digits.
 */
export function decimalAt(buf: Uint8Array, pos: number, end: number): number {
  const negative = pos < end && buf[pos] === 0x2d
  if (negative) pos++
  const digitsStart = pos
  let value = 0
  while (pos < end) {
    const digit = buf[pos] - 48
    if (digit < 0 || digit > 9) break
    value = value * 10 + digit
    pos++
  }
  decimalScan.end = pos
  const digits = pos - digitsStart
  if (digits === 0 || digits > 15) return Number.NaN
  return negative ? -value : value
}

/** The bytes of an ASCII literal, for {@link HeaderCursor.expect}. */
export function asciiBytes(text: string): number[] {
  return Array.from(text, (c) => c.charCodeAt(0))
}

/** Index of the \r of the first \r\n at or after `from`, searching at most limit+2 bytes. */
function findCrlf(buf: Buffer, from: number, limit: number): number {
  const end = Math.min(buf.length, from + limit + 2)
  let i = buf.indexOf(LF, from)
  while (i >= 0 && i < end) {
    if (i > from && buf[i - 1] === CR) return i - 1
    i = buf.indexOf(LF, i + 1)
  }
  return -1
}

function truncate(text: string): string {
  return text.length > 32 ? `${text.slice(0, 32)}…` : text
}
