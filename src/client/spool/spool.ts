/**
 * A disk spool for one topic: an append-only log of messages not yet acknowledged by a broker,
 * read back in the order written and advanced as acknowledgements come in (format.ts has the
 * layout).
 *
 * - append() buffers a record; flush() writes the buffer with one write(2) (the caller flushes
 *   before it takes more input, so a record counts as taken once the kernel has it: a killed
 *   process loses nothing it had flushed; a power loss can, since nothing is fsynced).
 * - Bounded: `full` is true while the unacknowledged bytes reach maxBytes; the writer stops
 *   taking input until 'room' (never drops).
 * - ack(position, end) may come in any order; the saved position only moves over a run of
 *   acknowledged records (at-least-once: what was acknowledged past a gap when the process dies
 *   is sent again). The position file is rewritten at most every POSITION_SAVE_MS and on close.
 * - open() drops a torn or damaged tail (checksum per record), so a spool survives kill -9.
 */
import {EventEmitter} from 'node:events'
import {closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmdirSync, unlinkSync, writeFileSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {
  encodeRecord,
  LOCK_FILE,
  parseRecord,
  parseSegmentName,
  POSITION_FILE,
  POSITION_TEMP_FILE,
  segmentName,
  type SpoolEntry,
  type SpoolRecord,
} from './format.js'

/** Default bound of a spool: 1 GiB of unacknowledged records. */
export const DEFAULT_SPOOL_MAX_BYTES = 1024 * 1024 * 1024
/** Smallest and largest bound accepted (1 MiB .. 1 TiB). */
export const SPOOL_MAX_BYTES_FLOOR = 1024 * 1024
export const SPOOL_MAX_BYTES_CEILING = 1024 * 1024 * 1024 * 1024
/** A segment is closed and a new one started past this size (a spool of maxBytes has ~8). */
const SEGMENT_BYTES_MAX = 64 * 1024 * 1024
/** append() writes its buffer at once past this many bytes. */
const WRITE_BUFFER_BYTES = 256 * 1024
/** How much read() takes from a segment per system call. */
const READ_CHUNK_BYTES = 1024 * 1024
/** The position file is rewritten at most this often (ms). */
const POSITION_SAVE_MS = 100

export interface SpoolOptions {
  /** Bound on unacknowledged bytes (records with headers); default DEFAULT_SPOOL_MAX_BYTES. */
  maxBytes?: number
}

interface Segment {
  start: number
  fd: number
}

export class Spool extends EventEmitter {
  readonly dir: string
  readonly maxBytes: number
  private readonly segmentBytes: number
  private segments: Segment[] = []
  private writeBuffer: Buffer[] = []
  private writeBufferBytes = 0
  /** Position after the last appended record (buffered ones included). */
  private appendEnd = 0
  /** Position after the last record written to a file. */
  private writtenEnd = 0
  private ackedPosition = 0
  private savedPosition = 0
  /** Acknowledged records past a gap: position → end. */
  private readonly ackedAhead = new Map<number, number>()
  private pendingCount = 0
  private saveTimer: NodeJS.Timeout | undefined
  private closed = false
  /** Bytes dropped from a torn tail when opened (0 = none). */
  readonly droppedBytes: number

  private constructor(dir: string, maxBytes: number) {
    super()
    this.dir = dir
    this.maxBytes = maxBytes
    this.segmentBytes = Math.min(SEGMENT_BYTES_MAX, Math.max(SPOOL_MAX_BYTES_FLOOR, Math.floor(maxBytes / 8)))
    // The spool holds messages not yet sent: its owner's only (docs/security.md, "Files on disk").
    mkdirSync(dir, {recursive: true, mode: 0o700})
    lock(dir)
    try {
      this.droppedBytes = this.recover()
    } catch (error) {
      this.closeFiles()
      unlock(dir)
      throw error
    }
  }

  /** Open (creating it) the spool in `dir`; throws DATA_DIR_LOCKED when another live process has it. */
  static open(dir: string, options: SpoolOptions = {}): Spool {
    const maxBytes = options.maxBytes ?? DEFAULT_SPOOL_MAX_BYTES
    if (!Number.isInteger(maxBytes) || maxBytes < SPOOL_MAX_BYTES_FLOOR || maxBytes > SPOOL_MAX_BYTES_CEILING) {
      throw MetaError.invalidArgument(`invalid spool size ${maxBytes} bytes: expected ${SPOOL_MAX_BYTES_FLOOR}..${SPOOL_MAX_BYTES_CEILING}`)
    }
    return new Spool(dir, maxBytes)
  }

  /** Records appended and not yet acknowledged. */
  get pending(): number {
    return this.pendingCount
  }

  /** Bytes of records appended and not yet acknowledged. */
  get pendingBytes(): number {
    return this.appendEnd - this.ackedPosition
  }

  /** Every record before this position is acknowledged. */
  get position(): number {
    return this.ackedPosition
  }

  /** Position after the last record appended. */
  get end(): number {
    return this.appendEnd
  }

  /** True while the writer must wait for 'room'. */
  get full(): boolean {
    return this.pendingBytes >= this.maxBytes
  }

  /** Add a record at the end; returns its position. Buffered until flush() (or a full buffer). */
  append(entry: SpoolEntry): number {
    this.assertOpen()
    const record = encodeRecord(entry)
    const position = this.appendEnd
    this.writeBuffer.push(record)
    this.writeBufferBytes += record.length
    this.appendEnd += record.length
    this.pendingCount += 1
    if (this.writeBufferBytes >= WRITE_BUFFER_BYTES) this.flush()
    return position
  }

  /** Write what append() buffered (one write(2); a new segment first when the current one is full). */
  flush(): void {
    if (this.writeBufferBytes === 0) return
    const data = this.writeBuffer.length === 1 ? this.writeBuffer[0]! : Buffer.concat(this.writeBuffer, this.writeBufferBytes)
    this.writeBuffer = []
    this.writeBufferBytes = 0
    let segment = this.segments.at(-1)
    if (segment === undefined || (this.writtenEnd - segment.start >= this.segmentBytes)) segment = this.addSegment(this.writtenEnd)
    let written = 0
    while (written < data.length) written += writeSync(segment.fd, data, written, data.length - written, this.writtenEnd - segment.start + written)
    this.writtenEnd += data.length
  }

  /**
   * Records from `position` (a record boundary) on, at most about maxBytes of them (at least one
   * when there is one); an empty array at the end.
   */
  read(position: number, maxBytes = READ_CHUNK_BYTES): SpoolRecord[] {
    this.assertOpen()
    this.flush()
    const out: SpoolRecord[] = []
    let at = Math.max(position, this.segments[0]?.start ?? 0)
    let taken = 0
    while (at < this.writtenEnd && (out.length === 0 || taken < maxBytes)) {
      const index = this.segmentIndexOf(at)
      const segment = this.segments[index]!
      const segmentEnd = this.segments[index + 1]?.start ?? this.writtenEnd
      let chunk = readAt(segment.fd, at - segment.start, Math.min(READ_CHUNK_BYTES, segmentEnd - at))
      let offset = 0
      while (offset < chunk.length) {
        const outcome = parseRecord(chunk, offset)
        if (outcome.kind === 'damaged') throw new MetaError('STORAGE_CORRUPT', `spool ${this.dir}: ${outcome.reason} at position ${at + offset}`)
        if (outcome.kind === 'short') {
          if (offset > 0) break
          if (at + outcome.bytes > segmentEnd) throw new MetaError('STORAGE_CORRUPT', `spool ${this.dir}: record at position ${at} runs past its segment`)
          chunk = readAt(segment.fd, at - segment.start, outcome.bytes)
          continue
        }
        const entry = outcome.entry
        out.push({partition: entry.partition, attribute: entry.attribute, payload: entry.payload, position: at + offset, end: at + offset + outcome.bytes})
        offset += outcome.bytes
        taken += outcome.bytes
        if (taken >= maxBytes) break
      }
      at += offset
    }
    return out
  }

  /** Was the record at `position` acknowledged? */
  isAcked(position: number): boolean {
    return position < this.ackedPosition || this.ackedAhead.has(position)
  }

  /** The broker acknowledged the record [position, end). Emits 'room' when the spool stops being full. */
  ack(position: number, end: number): void {
    if (this.closed || this.isAcked(position)) return
    const wasFull = this.full
    this.pendingCount -= 1
    if (position !== this.ackedPosition) {
      this.ackedAhead.set(position, end)
      return
    }
    this.ackedPosition = end
    for (let next = this.ackedAhead.get(end); next !== undefined; next = this.ackedAhead.get(this.ackedPosition)) {
      this.ackedAhead.delete(this.ackedPosition)
      this.ackedPosition = next
    }
    this.scheduleSave()
    if (wasFull && !this.full) this.emit('room')
  }

  /** Write the position file now and delete the segments wholly before it. */
  savePosition(): void {
    if (this.saveTimer !== undefined) clearTimeout(this.saveTimer)
    this.saveTimer = undefined
    if (this.closed || this.savedPosition === this.ackedPosition) return
    writeFileSync(join(this.dir, POSITION_TEMP_FILE), `${this.ackedPosition}\n`, {mode: 0o600})
    renameSync(join(this.dir, POSITION_TEMP_FILE), join(this.dir, POSITION_FILE))
    this.savedPosition = this.ackedPosition
    while (this.segments.length > 1 && this.segments[1]!.start <= this.ackedPosition) {
      const old = this.segments.shift()!
      closeSync(old.fd)
      unlinkSync(join(this.dir, segmentName(old.start)))
    }
  }

  /** Flush, save the position, release the lock. An empty spool is removed with its directory. */
  close(): void {
    if (this.closed) return
    this.flush()
    this.savePosition()
    this.closed = true
    this.closeFiles()
    if (this.pendingCount === 0) {
      const names = [...this.segments.map((s) => segmentName(s.start)), POSITION_FILE, POSITION_TEMP_FILE]
      for (const name of names) {
        try {
          unlinkSync(join(this.dir, name))
        } catch {} // never written, or already gone
      }
    }
    unlock(this.dir)
    if (this.pendingCount === 0) {
      try {
        rmdirSync(this.dir)
      } catch {} // something else lives there: leave it
    }
  }

  private scheduleSave(): void {
    if (this.saveTimer !== undefined) return
    this.saveTimer = setTimeout(() => {
      try {
        this.savePosition()
      } catch {
        // The position stays where it was saved last: at worst acknowledged records are sent again (close() saves, or says why not).
      }
    }, POSITION_SAVE_MS)
    this.saveTimer.unref()
  }

  private addSegment(start: number): Segment {
    const segment = {start, fd: openSync(join(this.dir, segmentName(start)), 'a+', 0o600)}
    this.segments.push(segment)
    return segment
  }

  private segmentIndexOf(position: number): number {
    for (let i = this.segments.length - 1; i >= 0; i--) if (this.segments[i]!.start <= position) return i
    return 0
  }

  /** Load the position, check every record after it, drop a torn tail; returns the bytes dropped. */
  private recover(): number {
    const starts = readdirSync(this.dir)
      .map((name) => parseSegmentName(name))
      .filter((start): start is number => start !== undefined)
      .sort((a, b) => a - b)
    let position = readPosition(this.dir)
    if (starts.length === 0) {
      this.ackedPosition = this.savedPosition = this.appendEnd = this.writtenEnd = position
      return 0
    }
    position = Math.max(position, starts[0]!)
    for (const start of starts) this.segments.push({start, fd: openSync(join(this.dir, segmentName(start)), 'r+')})
    // Segments before the one holding the position are leftovers of a save cut short.
    while (this.segments.length > 1 && this.segments[1]!.start <= position) {
      const old = this.segments.shift()!
      closeSync(old.fd)
      unlinkSync(join(this.dir, segmentName(old.start)))
    }
    this.ackedPosition = this.savedPosition = position
    let dropped = 0
    let at = position
    for (let i = 0; i < this.segments.length; i++) {
      const segment = this.segments[i]!
      const size = fstatSync(segment.fd).size
      const validEnd = this.scanSegment(segment, Math.max(at, segment.start) - segment.start, size)
      at = segment.start + validEnd
      if (validEnd < size || this.segments[i + 1]?.start !== at) {
        // A torn tail: cut it and everything after it.
        dropped += size - validEnd
        ftruncateSync(segment.fd, validEnd)
        for (const later of this.segments.splice(i + 1)) {
          dropped += fstatSync(later.fd).size
          closeSync(later.fd)
          unlinkSync(join(this.dir, segmentName(later.start)))
        }
        break
      }
    }
    this.appendEnd = this.writtenEnd = at
    return dropped
  }

  /** Count the whole records of a segment from `from`; returns where they end. */
  private scanSegment(segment: Segment, from: number, size: number): number {
    let offset = from
    while (offset < size) {
      const chunk = readAt(segment.fd, offset, Math.min(READ_CHUNK_BYTES, size - offset))
      let at = 0
      for (;;) {
        const outcome = parseRecord(chunk, at)
        if (outcome.kind === 'damaged') return offset + at
        if (outcome.kind === 'short') {
          if (at > 0) break
          if (offset + outcome.bytes > size) return offset
          const whole = readAt(segment.fd, offset, outcome.bytes)
          if (parseRecord(whole, 0).kind !== 'record') return offset
          this.pendingCount += 1
          at = outcome.bytes
          break
        }
        this.pendingCount += 1
        at += outcome.bytes
        if (at >= chunk.length) break
      }
      offset += at
    }
    return offset
  }

  private closeFiles(): void {
    if (this.saveTimer !== undefined) clearTimeout(this.saveTimer)
    for (const segment of this.segments) closeSync(segment.fd)
  }

  private assertOpen(): void {
    if (this.closed) throw new MetaError('INTERNAL', `spool ${this.dir} is closed`)
  }
}

/** `bytes` from `offset` into a new buffer (records parsed from it keep views of it: it must never be reused). */
function readAt(fd: number, offset: number, bytes: number): Buffer {
  const buf = Buffer.allocUnsafe(bytes)
  let got = 0
  while (got < bytes) {
    const n = readSync(fd, buf, got, bytes - got, offset + got)
    if (n === 0) break
    got += n
  }
  return got === bytes ? buf : buf.subarray(0, got)
}

function readPosition(dir: string): number {
  try {
    const value = Number(readFileSync(join(dir, POSITION_FILE), 'utf8').trim())
    return Number.isSafeInteger(value) && value >= 0 ? value : 0
  } catch {
    return 0
  }
}

/** Take the spool's lock file; a lock left by a dead process is taken over. */
function lock(dir: string): void {
  const file = join(dir, LOCK_FILE)
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, {flag: 'wx', mode: 0o600})
      return
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const owner = lockOwner(dir)
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) {
      throw new MetaError('DATA_DIR_LOCKED', `spool ${dir} is in use by process ${owner}`, {cause: owner})
    }
    try {
      unlinkSync(file)
    } catch {}
  }
  throw new MetaError('DATA_DIR_LOCKED', `spool ${dir}: cannot take its lock file`)
}

function unlock(dir: string): void {
  try {
    if (lockOwner(dir) === process.pid) unlinkSync(join(dir, LOCK_FILE))
  } catch {}
}

/** The pid in a spool's lock file, if any. */
export function lockOwner(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, LOCK_FILE), 'utf8').trim())
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
