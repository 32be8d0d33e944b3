/**
 * Splits a byte stream into records at a delimiter of one or more bytes (`meta send`'s
 * one-message-per-line input), without decoding text and without copying a record that lies
 * inside one chunk (it is a `subarray` of the chunk).
 *
 * - A delimiter may straddle chunks (`\r\n` split between two reads): the last
 *   `delimiter.length - 1` bytes of a pending record are checked together with the start of
 *   the next chunk.
 * - Memory stays bounded: a record longer than `maxRecordBytes` is not kept; its bytes are
 *   counted and dropped, and the handler receives `undefined` with the full size, so the
 *   caller can report "line 7: 3 GB" without holding 3 GB.
 * - Backpressure: when the handler returns false the splitter stops right after that record
 *   and keeps the rest; `resume()` continues. Chunks pushed meanwhile are queued.
 * - A trailing delimiter does not make an empty last record; a last record without one is
 *   emitted at `end()`.
 */

/**
 * Receives each record: the bytes (a view that stays valid), or undefined when the record was
 * longer than maxRecordBytes; `size` is its length in bytes, `index` counts from 1.
 * Return false to pause.
 */
type RecordHandler = (record: Buffer | undefined, size: number, index: number) => boolean

const EMPTY = Buffer.alloc(0)

interface SplitterOptions {
  delimiter: Buffer
  maxRecordBytes: number
  onRecord: RecordHandler
  /** Called once, after the last record, when end() was called and everything was emitted. */
  onDone?: () => void
}

export class RecordSplitter {
  private readonly delimiter: Buffer
  private readonly maxRecordBytes: number
  private readonly onRecord: RecordHandler
  private readonly onDone: (() => void) | undefined
  private readonly chunks: Buffer[] = []
  private pos = 0
  /** Pieces of the record that started in an earlier chunk. */
  private carry: Buffer[] = []
  /** Bytes of the pending record seen so far (kept or dropped). */
  private pendingBytes = 0
  /** The last delimiter.length − 1 bytes of the pending record (multi-byte delimiters only). */
  private tail: Buffer = EMPTY
  private boundaryPending = false
  /** The pending record grew too long: its bytes are counted, not kept. */
  private dropping = false
  private paused = false
  private ending = false
  private done = false
  private count = 0

  constructor(options: SplitterOptions) {
    this.delimiter = options.delimiter
    this.maxRecordBytes = options.maxRecordBytes
    this.onRecord = options.onRecord
    this.onDone = options.onDone
  }

  /** Records emitted so far. */
  get records(): number {
    return this.count
  }

  get isPaused(): boolean {
    return this.paused
  }

  /** Add a chunk and emit what it completes; false when the handler paused. */
  push(chunk: Buffer): boolean {
    if (chunk.length > 0) this.chunks.push(chunk)
    if (this.paused) return false
    return this.run()
  }

  /** Continue after a pause; false when the handler paused again. */
  resume(): boolean {
    if (!this.paused) return true
    this.paused = false
    return this.run()
  }

  /** No more input: emit the last record (once everything before it was emitted). */
  end(): boolean {
    this.ending = true
    if (this.paused) return false
    return this.run()
  }

  private run(): boolean {
    const d = this.delimiter.length
    while (this.chunks.length > 0) {
      const chunk = this.chunks[0]
      if (this.boundaryPending) {
        this.boundaryPending = false
        if (!this.matchAcrossBoundary(chunk)) return false
        continue
      }
      const index = chunk.indexOf(this.delimiter, this.pos)
      if (index === -1) {
        this.keep(chunk.subarray(this.pos))
        this.chunks.shift()
        this.pos = 0
        if (d > 1) this.boundaryPending = true
        continue
      }
      const piece = chunk.subarray(this.pos, index)
      this.pos = index + d
      if (this.pos >= chunk.length) {
        this.chunks.shift()
        this.pos = 0
      }
      if (!this.emitWith(piece)) return false
    }
    if (this.ending && !this.done) {
      if (this.pendingBytes > 0 && !this.emitWith(EMPTY)) return false
      this.done = true
      this.onDone?.()
    }
    return true
  }

  /**
   * The pending record's tail and the start of `chunk` may hold a delimiter. On a match, emit
   * the record (without the delimiter bytes already kept) and continue after it. Returns false
   * when the handler paused.
   */
  private matchAcrossBoundary(chunk: Buffer): boolean {
    const d = this.delimiter.length
    const tailLength = this.tail.length
    const window = Buffer.concat([this.tail, chunk.subarray(0, d - 1)])
    const k = window.indexOf(this.delimiter)
    if (k === -1 || k >= tailLength) return true
    const overlap = tailLength - k
    this.dropLast(overlap)
    this.pos = d - overlap
    if (this.pos >= chunk.length) {
      this.chunks.shift()
      this.pos = 0
    }
    return this.emitWith(EMPTY)
  }

  /** Emit the pending record followed by `piece`; false when the handler paused. */
  private emitWith(piece: Buffer): boolean {
    let record: Buffer | undefined
    let size: number
    if (this.pendingBytes === 0 && !this.dropping) {
      size = piece.length
      record = size > this.maxRecordBytes ? undefined : piece
    } else {
      size = this.pendingBytes + piece.length
      record = this.dropping || size > this.maxRecordBytes ? undefined : Buffer.concat([...this.carry, piece], size)
      this.carry = []
      this.pendingBytes = 0
      this.dropping = false
    }
    if (this.tail.length > 0) this.tail = EMPTY
    this.count += 1
    if (this.onRecord(record, size, this.count) === false) {
      this.paused = true
      return false
    }
    return true
  }

  /** Keep bytes of a record that continues in the next chunk (drop them once it is too long). */
  private keep(bytes: Buffer): void {
    if (bytes.length === 0) return
    const d = this.delimiter.length
    this.pendingBytes += bytes.length
    // The slack of d bytes keeps a record that dropLast() may shorten back under the limit.
    if (!this.dropping && this.pendingBytes > this.maxRecordBytes + d) {
      this.dropping = true
      this.carry = []
    }
    if (!this.dropping) this.carry.push(bytes)
    if (d > 1) {
      const joined = this.tail.length === 0 ? bytes : Buffer.concat([this.tail, bytes])
      this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - (d - 1))))
    }
  }

  /** Remove the last n bytes of the pending record (they were the start of a delimiter). */
  private dropLast(n: number): void {
    this.pendingBytes -= n
    let left = n
    while (left > 0 && this.carry.length > 0) {
      const last = this.carry[this.carry.length - 1]
      if (last.length <= left) {
        left -= last.length
        this.carry.pop()
      } else {
        this.carry[this.carry.length - 1] = last.subarray(0, last.length - left)
        left = 0
      }
    }
  }
}
