/**
 * A disk spool for one topic: an append-only log of messages not yet acknowledged by a broker,
 * read back in the order written and advanced as acknowledgements come in (format.ts has the
 * layout).
 *
 * - append() buffers a record; flush() writes the buffer with one write(2) (the caller flushes
 *   before it takes more input, so a record counts as taken once the kernel has it: a killed
 *   process loses nothing it had flushed; a power loss can, since nothing is fsynced).
 * - A write that fails (a full disk, an I/O error) loses nothing: the records stay in memory,
 *   `stalled` says why, `full` is true (the writer stops taking input), and the next flush()
 *   writes them at the same offsets. Once everything written is acknowledged, a stalled spool
 *   deletes its segments before it tries again, so it can make the room it needs itself.
 * - Records are handed out (read) only once written, so the acknowledged position never
 *   passes what the files hold.
 * - Bounded: `full` is true while the unacknowledged bytes reach maxBytes; the writer stops
 *   taking input until 'room' (never drops).
 * - ack(position, end) may come in any order; the saved position only moves over a run of
 *   acknowledged records (at-least-once: what was acknowledged past a gap when the process dies
 *   is sent again). The position (position-file.ts) is overwritten in place after each turn of
 *   acknowledgements: no temp file, so it moves on a full disk too; a write that fails is
 *   tried again on the next acknowledgement and on close.
 * - open() checks every record after the position: an incomplete last record (a torn tail) is
 *   cut; damaged ranges (recover.ts) are copied to the quarantine directory and stepped over,
 *   and reported in `opened`.
 * - A spool records its destination (destination.ts) and is opened only for that one (or with
 *   `retarget`); one written before spools recorded one is adopted.
 */
import {EventEmitter} from 'node:events'
import {closeSync, constants, ftruncateSync, mkdirSync, openSync, rmdirSync, unlinkSync, writeFileSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../../protocol/errors.js'
import {describeDestination, encodeDestination, sameDestination, type SpoolDestination} from './destination.js'
import {
  DESTINATION_FILE,
  encodeRecord,
  LEGACY_POSITION_TEMP_FILE,
  parseRecord,
  POSITION_FILE,
  segmentName,
  type SpoolEntry,
  type SpoolRecord,
} from './format.js'
import {lock, unlock} from './lock.js'
import {PositionFile} from './position-file.js'
import {segmentStarts, type DamagedRange} from './recover.js'
import {recordedDestination, recoverFiles, type Segment} from './reopen.js'
import {readAt} from './scan.js'

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

export interface SpoolOptions {
  /** Bound on unacknowledged bytes (records with headers); default DEFAULT_SPOOL_MAX_BYTES. */
  maxBytes?: number
  /**
   * Where the records go: recorded in a new spool; a spool recorded for another destination is
   * refused (DATA_DIR_LOCKED), one recorded for none is adopted. Undefined: none is checked or
   * recorded.
   */
  destination?: SpoolDestination
  /** Take a spool recorded for another destination, and record `destination` in it. */
  retarget?: boolean
}

/** What open() found and did. */
export interface SpoolOpened {
  /** Damaged ranges after the position: copied to the quarantine directory, stepped over. */
  damaged: DamagedRange[]
  /** Bytes of an incomplete last record cut off (a writer stopped mid-write). */
  tornBytes: number
  /** The position file could not be read: the records still in the segments are sent again. */
  positionDamaged: boolean
  /** It held records and recorded no destination: it is `destination`'s now. */
  adopted: boolean
  /** The destination recorded before `retarget` replaced it. */
  retargetedFrom?: SpoolDestination
}

/** Why writes stopped, since when. */
interface SpoolStall {
  error: NodeJS.ErrnoException
  sinceMs: number
}

/** A write cut short: its bytes go to the same offsets on the next attempt. */
interface PendingWrite {
  data: Buffer
  written: number
  records: number
}

export class Spool extends EventEmitter {
  readonly dir: string
  readonly maxBytes: number
  private readonly segmentBytes: number
  private segments: Segment[] = []
  private writeBuffer: Buffer[] = []
  private writeBufferBytes = 0
  private bufferedRecords = 0
  private pendingWrite: PendingWrite | undefined
  private stall: SpoolStall | undefined
  /** Position after the last appended record (buffered ones included). */
  private appendEnd = 0
  /** Position after the last record written to a file. */
  private writtenEnd = 0
  private ackedPosition = 0
  private savedPosition = -1
  /** Acknowledged records past a gap: position → end. */
  private readonly ackedAhead = new Map<number, number>()
  /** Damaged ranges (quarantined) not yet passed: position → end, in order. */
  private holes: Array<{position: number; end: number}> = []
  private pendingCount = 0
  private positionFile: PositionFile | undefined
  private saveScheduled = false
  private closed = false
  readonly opened: SpoolOpened

  private constructor(dir: string, options: SpoolOptions, maxBytes: number) {
    super()
    this.dir = dir
    this.maxBytes = maxBytes
    this.segmentBytes = Math.min(SEGMENT_BYTES_MAX, Math.max(SPOOL_MAX_BYTES_FLOOR, Math.floor(maxBytes / 8)))
    try {
      // The spool holds messages not yet sent: its owner's only (docs/security.md#files-on-disk).
      mkdirSync(dir, {recursive: true, mode: 0o700})
      lock(dir)
    } catch (error) {
      throw asStorageError(dir, error)
    }
    try {
      const wanted = options.destination
      const recorded = recordedDestination(dir, options.retarget === true)
      if (wanted !== undefined && recorded !== undefined && !sameDestination(wanted, recorded) && options.retarget !== true && segmentStarts(dir).length > 0) {
        throw new MetaError('DATA_DIR_LOCKED', `spool ${dir} holds messages for ${describeDestination(recorded)}, not ${describeDestination(wanted)}`, {
          details: {destination: recorded},
        })
      }
      this.positionFile = PositionFile.open(join(dir, POSITION_FILE))
      const found = this.recover()
      const adopted = wanted !== undefined && recorded === undefined && this.pendingCount > 0
      const replaced = wanted !== undefined && recorded !== undefined && !sameDestination(wanted, recorded)
      if (wanted !== undefined && (recorded === undefined || replaced)) writeFileSync(join(dir, DESTINATION_FILE), encodeDestination(wanted), {mode: 0o600})
      // A new or legacy position file gets its fixed-width record now, while nothing waits on it.
      if (this.positionFile.initial.state !== 'ok' || this.savedPosition !== this.ackedPosition) this.writePosition()
      this.opened = {...found, adopted, ...(replaced && this.pendingCount > 0 ? {retargetedFrom: recorded} : {})}
    } catch (error) {
      this.closeFiles()
      unlock(dir)
      throw asStorageError(dir, error)
    }
  }

  /** Open (creating it) the spool in `dir`; throws DATA_DIR_LOCKED when another live process has it or it is another destination's. */
  static open(dir: string, options: SpoolOptions = {}): Spool {
    const maxBytes = options.maxBytes ?? DEFAULT_SPOOL_MAX_BYTES
    if (!Number.isInteger(maxBytes) || maxBytes < SPOOL_MAX_BYTES_FLOOR || maxBytes > SPOOL_MAX_BYTES_CEILING) {
      throw MetaError.invalidArgument(`invalid spool size ${maxBytes} bytes: expected ${SPOOL_MAX_BYTES_FLOOR}..${SPOOL_MAX_BYTES_CEILING}`)
    }
    return new Spool(dir, options, maxBytes)
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

  /** Position after the last record written to a file: read() hands out records before it. */
  get written(): number {
    return this.writtenEnd
  }

  /** Why writes stopped (a full disk, an I/O error), while they are stopped. */
  get stalled(): SpoolStall | undefined {
    return this.stall
  }

  /** Records appended and not written to a file yet, and their bytes. */
  get held(): {records: number; bytes: number} {
    return {records: this.bufferedRecords + (this.pendingWrite?.records ?? 0), bytes: this.appendEnd - this.writtenEnd}
  }

  /** True while the writer must wait for 'room' (the bound is reached, or writes are stalled). */
  get full(): boolean {
    return this.pendingBytes >= this.maxBytes || this.stall !== undefined
  }

  /** Add a record at the end; returns its position. Buffered until flush() (or a full buffer). */
  append(entry: SpoolEntry): number {
    this.assertOpen()
    const record = encodeRecord(entry)
    const position = this.appendEnd
    this.writeBuffer.push(record)
    this.writeBufferBytes += record.length
    this.bufferedRecords += 1
    this.appendEnd += record.length
    this.pendingCount += 1
    if (this.writeBufferBytes >= WRITE_BUFFER_BYTES && this.stall === undefined) this.flush()
    return position
  }

  /**
   * Write what append() buffered (one write(2); a new segment first when the current one is
   * full). False when the write failed: `stalled` says why, nothing is lost, call again later.
   */
  flush(): boolean {
    if (this.closed) return this.pendingWrite === undefined && this.writeBufferBytes === 0
    try {
      if (this.stall !== undefined) this.makeRoom()
      for (;;) {
        if (this.pendingWrite === undefined) {
          if (this.writeBufferBytes === 0) break
          const data = this.writeBuffer.length === 1 ? this.writeBuffer[0]! : Buffer.concat(this.writeBuffer, this.writeBufferBytes)
          this.pendingWrite = {data, written: 0, records: this.bufferedRecords}
          this.writeBuffer = []
          this.writeBufferBytes = 0
          this.bufferedRecords = 0
        }
        const write = this.pendingWrite
        let segment = this.segments.at(-1)
        if (segment === undefined || segment.start + segment.size !== this.writtenEnd || segment.size >= this.segmentBytes)
          segment = this.addSegment(this.writtenEnd)
        while (write.written < write.data.length) {
          write.written += writeSync(segment.fd, write.data, write.written, write.data.length - write.written, segment.size + write.written)
        }
        segment.size += write.data.length
        this.writtenEnd += write.data.length
        this.pendingWrite = undefined
      }
    } catch (error) {
      this.stall ??= {error: error as NodeJS.ErrnoException, sinceMs: Date.now()}
      return false
    }
    if (this.stall !== undefined) {
      this.stall = undefined
      this.emit('writable')
      if (!this.full) this.emit('room')
    }
    return true
  }

  /**
   * Records from `position` (a record boundary) on, at most about maxBytes of them (at least one
   * when there is one), written ones only, damaged ranges stepped over; an empty array at the end.
   */
  read(position: number, maxBytes = READ_CHUNK_BYTES): SpoolRecord[] {
    this.assertOpen()
    this.flush()
    const out: SpoolRecord[] = []
    let at = Math.max(position, this.segments[0]?.start ?? 0)
    let taken = 0
    while (out.length === 0 || taken < maxBytes) {
      at = this.pastHoles(at)
      if (at >= this.writtenEnd) break
      const index = this.segmentIndexOf(at)
      const segment = this.segments[index]!
      const nextHole = this.holes.find((h) => h.position > at)?.position ?? Number.POSITIVE_INFINITY
      const until = Math.min(this.segments[index + 1]?.start ?? this.writtenEnd, segment.start + segment.size, this.writtenEnd, nextHole)
      let chunk = readAt(segment.fd, at - segment.start, Math.min(READ_CHUNK_BYTES, until - at))
      let offset = 0
      while (offset < chunk.length) {
        const outcome = parseRecord(chunk, offset)
        if (outcome.kind === 'damaged') throw new MetaError('STORAGE_CORRUPT', `spool ${this.dir}: ${outcome.reason} at position ${at + offset}`)
        if (outcome.kind === 'short') {
          if (offset > 0) break
          if (at + outcome.bytes > until) throw new MetaError('STORAGE_CORRUPT', `spool ${this.dir}: record at position ${at} runs past its segment`)
          chunk = readAt(segment.fd, at - segment.start, outcome.bytes)
          continue
        }
        const entry = outcome.entry
        out.push({partition: entry.partition, attribute: entry.attribute, payload: entry.payload, position: at + offset, end: at + offset + outcome.bytes})
        offset += outcome.bytes
        taken += outcome.bytes
        if (taken >= maxBytes) break
      }
      if (offset === 0) break
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
    this.advance()
    this.scheduleSave()
    if (wasFull && !this.full) this.emit('room')
  }

  /**
   * Write the position now (in place) and delete the segments wholly before it. Throws the
   * system error when the write fails: the position stays where it was saved, and the next
   * acknowledgement or close() tries again.
   */
  savePosition(): void {
    if (this.closed || this.savedPosition === this.ackedPosition) return
    this.writePosition()
    while (this.segments.length > 1 && this.segments[1]!.start <= this.ackedPosition) {
      const old = this.segments.shift()!
      closeSync(old.fd)
      unlinkSync(join(this.dir, segmentName(old.start)))
    }
  }

  /**
   * Flush, save the position, release the lock. An empty spool is removed with its directory
   * (not its quarantine). Records that could not be written are lost with the process: the
   * caller learns how many from `held` first. Throws STORAGE_ERROR when the position cannot be
   * saved (the lock is released all the same).
   */
  close(): void {
    if (this.closed) return
    this.flush()
    const empty = this.pendingCount === 0
    let saveError: unknown
    if (!empty) {
      try {
        this.savePosition()
      } catch (error) {
        saveError = error
      }
    }
    // A write cut short leaves a partial record: cut it, so the file ends with whole records.
    const last = this.segments.at(-1)
    if (last !== undefined && this.pendingWrite !== undefined) {
      try {
        ftruncateSync(last.fd, last.size)
      } catch {} // the next open cuts it as a torn tail
    }
    this.closed = true
    this.closeFiles()
    // Everything acknowledged: deleting the files needs no position (nor free space).
    if (empty) {
      const names = [...this.segments.map((s) => segmentName(s.start)), POSITION_FILE, LEGACY_POSITION_TEMP_FILE, DESTINATION_FILE]
      for (const name of names) {
        try {
          unlinkSync(join(this.dir, name))
        } catch {} // never written, or already gone
      }
    }
    unlock(this.dir)
    if (empty) {
      try {
        rmdirSync(this.dir)
      } catch {} // something else lives there (a quarantine): leave it
    }
    if (saveError !== undefined) {
      throw new MetaError(
        'STORAGE_ERROR',
        `cannot save the position of the spool ${this.dir}: ${describeSystemError(saveError as NodeJS.ErrnoException)}; messages acknowledged since it was last saved will be sent again`,
        {cause: saveError},
      )
    }
  }

  /** Drop the records that were never written (the caller gives up on them); returns their positions. */
  discardHeld(): number[] {
    const firstUnwritten = this.writtenEnd
    const buffers = [...(this.pendingWrite === undefined ? [] : [this.pendingWrite.data]), ...this.writeBuffer]
    const positions: number[] = []
    let at = firstUnwritten
    for (const buf of buffers) {
      for (let offset = 0; offset < buf.length;) {
        const bytes = 8 + buf.readUInt32BE(offset)
        positions.push(at)
        at += bytes
        offset += bytes
      }
    }
    this.pendingCount -= positions.length
    this.appendEnd = this.writtenEnd
    this.pendingWrite = undefined
    this.writeBuffer = []
    this.writeBufferBytes = 0
    this.bufferedRecords = 0
    const last = this.segments.at(-1)
    if (last !== undefined) {
      try {
        ftruncateSync(last.fd, last.size)
      } catch {}
    }
    this.stall = undefined
    return positions
  }

  private scheduleSave(): void {
    if (this.saveScheduled) return
    this.saveScheduled = true
    // After this turn's acknowledgements, all at once: one write(2) per socket read of answers.
    setImmediate(() => {
      this.saveScheduled = false
      try {
        this.savePosition()
      } catch {
        // Tried again on the next acknowledgement and on close(); meanwhile a crash sends again what was acknowledged since the last save.
      }
    })
  }

  private writePosition(): void {
    this.positionFile!.write(this.ackedPosition)
    this.savedPosition = this.ackedPosition
  }

  /** Move the position over acknowledged runs and damaged ranges. */
  private advance(): void {
    for (;;) {
      const next = this.ackedAhead.get(this.ackedPosition)
      if (next !== undefined) {
        this.ackedAhead.delete(this.ackedPosition)
        this.ackedPosition = next
        continue
      }
      const hole = this.holes[0]
      if (hole !== undefined && hole.position <= this.ackedPosition) {
        this.holes.shift()
        this.ackedPosition = Math.max(this.ackedPosition, hole.end)
        continue
      }
      return
    }
  }

  /** `at`, or the end of the damaged ranges it falls in. */
  private pastHoles(at: number): number {
    for (const hole of this.holes) if (hole.position <= at && at < hole.end) at = hole.end
    return at
  }

  /**
   * A stalled spool whose written records are all acknowledged deletes its segments (their
   * space is what the write may need) and writes on in a new one.
   */
  private makeRoom(): void {
    if (this.ackedPosition < this.writtenEnd || this.segments.length === 0) return
    this.writePosition()
    for (const segment of this.segments) {
      closeSync(segment.fd)
      unlinkSync(join(this.dir, segmentName(segment.start)))
    }
    this.segments = []
    if (this.pendingWrite !== undefined) this.pendingWrite.written = 0
  }

  private addSegment(start: number): Segment {
    // Not 'a': pwrite on an O_APPEND file appends on Linux, whatever the offset (a write cut
    // short is written again at the same offset).
    const fd = openSync(join(this.dir, segmentName(start)), constants.O_RDWR | constants.O_CREAT, 0o600)
    const segment = {start, fd, size: 0}
    this.segments.push(segment)
    return segment
  }

  private segmentIndexOf(position: number): number {
    for (let i = this.segments.length - 1; i >= 0; i--) if (this.segments[i]!.start <= position) return i
    return 0
  }

  /** Load the position, check every record after it, quarantine damage, cut a torn tail (reopen.ts). */
  private recover(): Omit<SpoolOpened, 'adopted' | 'retargetedFrom'> {
    const files = recoverFiles(this.dir, this.segments)
    this.holes = files.holes
    this.pendingCount = files.records
    this.ackedPosition = files.position
    this.appendEnd = this.writtenEnd = files.end
    this.advance()
    this.savedPosition = this.ackedPosition !== files.position || files.positionDamaged ? -1 : files.position
    return {damaged: files.damaged, tornBytes: files.tornBytes, positionDamaged: files.positionDamaged}
  }

  private closeFiles(): void {
    for (const segment of this.segments) {
      try {
        closeSync(segment.fd)
      } catch {}
    }
    this.positionFile?.close()
  }

  private assertOpen(): void {
    if (this.closed) throw new MetaError('INTERNAL', `spool ${this.dir} is closed`)
  }
}

/** A system error opening a spool, in words (a MetaError passes as it is). */
function asStorageError(dir: string, error: unknown): MetaError {
  if (error instanceof MetaError) return error
  return new MetaError('STORAGE_ERROR', `cannot open the spool ${dir}: ${describeSystemError(error as NodeJS.ErrnoException)}`, {cause: error})
}

/** `no space left on device (ENOSPC)`. */
export function describeSystemError(error: NodeJS.ErrnoException): string {
  // `ENOSPC: no space left on device, write` → `no space left on device`.
  const text = error.message.replace(/^[A-Z]+: /, '').replace(/, \w+( .*)?$/, '')
  return error.code === undefined ? text : `${text} (${error.code})`
}
