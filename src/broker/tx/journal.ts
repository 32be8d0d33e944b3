/**
 * The transaction journal ("redo log"; the format is meta's own,
 * docs/architecture.md#transactions): `<dataLogPath>/transactions/redo.<n>` files of records, and
 * `checkpoint.<n>` files naming where replay starts.
 *
 * Record: `int32 L | int32 CRC32(payload) | payload (L bytes)`, payload = `uint8 type |
 * uint16 headLen | head (JSON, UTF-8) | body`. A record whose length runs past the file or
 * whose CRC does not match is not whole. When no whole record follows it in its file, it is a
 * torn tail: replay stops there and the file is truncated. When one does, it is damage:
 * replay steps over the span to the next whole record and logs an error naming the file and
 * the span, so damage costs only the records in it (recovery.ts never completes a commit whose
 * records do not match the length and CRC its commit record holds).
 *
 * Writes go to the file at once (writeSync: a `kill -9` cannot lose them, they are in the
 * page cache); {@link TxJournal.sync} fdatasyncs, coalescing concurrent requests into one
 * fdatasync at a time (group commit). A new file is started when the current one reaches
 * `maxFileBytes`; the old one is fdatasynced first.
 *
 * Checkpoint: JSON `{"version":2,"file":F,"offset":O,"heuristic":[[key,state,owner?],…]}`
 * written to a new `checkpoint.<n>` (write, fdatasync, rename): replay starts at (F, O), the
 * first record of the oldest transaction still open; redo files before F are deleted, and only
 * the newest `maxCheckpoints` checkpoint files are kept.
 *
 * Versions: 2 records who owns a transaction (docs/security.md#transactions): `o` (a user name,
 * or `#<connection id>` for an anonymous connection) in the head of a transaction's first MSG
 * record, of its PREPARE record, and of COMMIT and ROLLBACK records with a heuristic outcome,
 * and as a heuristic outcome's third element in a checkpoint. Version 1 (no `version` in the
 * checkpoint, no `o` anywhere) is read as it is: its transactions have no owner, so with
 * access control only a holder of `tx` or `admin` may finish them. Records are appended in
 * version 2 from the first write on; a version 1 reader ignores the new fields.
 */
import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import assert from 'node:assert'
import {join} from 'node:path'
import {crc32} from 'node:zlib'
import {MetaError} from '../../protocol/errors.js'
import type {Logger} from '../../log.js'

export const RecordType = {
  /** Messages put into a transaction: head {k, t, p, n, o?} (o: on its first), body n stored records. */
  MSG: 1,
  /** XA prepare: head {k, o?}. */
  PREPARE: 2,
  /** Commit decided: head {k, parts, h?, o?}; written (and synced) before the append. */
  COMMIT: 3,
  /** The commit's append completed: head {k}. */
  DONE: 4,
  /** Rolled back: head {k, h?, o?}. */
  ROLLBACK: 5,
  /** A heuristic outcome forgotten: head {k}. */
  FORGET: 6,
} as const
export type RecordType = (typeof RecordType)[keyof typeof RecordType]

export interface JournalRecord {
  type: RecordType
  head: Record<string, unknown>
  body: Buffer
  /** Where it is: the file number and the record's offset in it. */
  file: number
  offset: number
}

export interface JournalPosition {
  file: number
  offset: number
}

/** The journal's format version (see above); checkpoints without one are version 1. */
const JOURNAL_VERSION = 2

/** A heuristic outcome kept until FORGET: [key, state], and its owner from version 2 on. */
type HeuristicEntry = [string, number] | [string, number, string]

export interface CheckpointData extends JournalPosition {
  /** Absent: version 1. */
  version?: number
  heuristic: HeuristicEntry[]
}

interface JournalOptions {
  dir: string
  /** Start a new redo file once the current one holds this many bytes. */
  maxFileBytes: number
  maxCheckpoints: number
  log: Logger
  /** Called after a new redo file was started (the manager writes a checkpoint, reclaiming files). */
  onRoll?: () => void
}

const HEADER_BYTES = 8
/** The first byte of a record's JSON head. */
const OPEN_BRACE = 0x7b
const REDO = /^redo\.(\d+)$/
const CHECKPOINT = /^checkpoint\.(\d+)$/
export const DEFAULT_JOURNAL_FILE_BYTES = 64 * 1024 * 1024

export class TxJournal {
  private fd: number
  private fileNumber: number
  private size: number
  private dirty = false
  private syncing: Promise<void> | undefined
  private next: {promise: Promise<void>; resolve: () => void; reject: (e: Error) => void} | undefined
  /** Descriptors of rolled files, closed once the sync running now has finished. */
  private retired: number[] = []
  private checkpointNumber: number
  private closed = false

  private constructor(
    private readonly options: JournalOptions,
    file: number,
    fd: number,
    size: number,
    checkpointNumber: number,
  ) {
    this.fileNumber = file
    this.fd = fd
    this.size = size
    this.checkpointNumber = checkpointNumber
  }

  /**
   * Open the journal in `dir` (created if missing) and return it with every record from the
   * latest checkpoint on, in order, and the checkpoint's heuristic outcomes. A torn tail is
   * truncated.
   */
  static open(options: JournalOptions): {journal: TxJournal; records: JournalRecord[]; checkpoint: CheckpointData | undefined} {
    const {dir, log} = options
    try {
      mkdirSync(dir, {recursive: true})
    } catch (error) {
      throw new MetaError('STORAGE_ERROR', `cannot create the transaction journal directory "${dir}": ${(error as Error).message}`, {cause: error})
    }
    const names = readdirSync(dir)
    const files = numbered(names, REDO)
    const checkpoints = numbered(names, CHECKPOINT)
    let checkpoint: CheckpointData | undefined
    for (const n of [...checkpoints].reverse()) {
      try {
        const data = JSON.parse(readFileSync(join(dir, `checkpoint.${n}`), 'utf8')) as CheckpointData
        if (Number.isInteger(data.file) && Number.isInteger(data.offset) && Array.isArray(data.heuristic)) {
          if ((data.version ?? 1) > JOURNAL_VERSION) {
            throw new MetaError(
              'STORAGE_ERROR',
              `transaction checkpoint ${join(dir, `checkpoint.${n}`)} is of journal version ${data.version}; this meta reads versions 1..${JOURNAL_VERSION}: run a newer meta`,
            )
          }
          if ((data.version ?? 1) < JOURNAL_VERSION)
            log.info('reading a transaction journal of version 1 (no transaction owners); it is written in version 2 from now on', {
              checkpoint: `checkpoint.${n}`,
            })
          checkpoint = data
          break
        }
      } catch (error) {
        if (error instanceof MetaError) throw error
        log.warn('ignoring an unreadable transaction checkpoint', {file: `checkpoint.${n}`, error: (error as Error).message})
      }
    }
    const records: JournalRecord[] = []
    for (const n of files) {
      if (checkpoint !== undefined && n < checkpoint.file) continue
      const start = checkpoint !== undefined && n === checkpoint.file ? checkpoint.offset : 0
      const path = join(dir, `redo.${n}`)
      const data = readFileSync(path)
      const {end, damaged} = readRecords(data, start, n, records)
      for (const span of damaged) {
        log.error('transaction journal damaged: skipped bytes holding no whole record; a transaction with a record there may have lost it', {
          file: path,
          at: span.at,
          bytes: span.bytes,
        })
      }
      if (end < data.length) {
        const newest = n === files[files.length - 1]
        // Only the newest file can end in a torn write: the older ones were fdatasynced whole when the next began.
        if (newest) log.warn('truncating a torn transaction journal tail', {file: path, at: end, size: data.length})
        else log.error('transaction journal damaged: the end of an older redo file holds no whole record; dropped', {file: path, at: end, size: data.length})
        const fd = openSync(path, 'r+')
        try {
          ftruncateSync(fd, end)
          fdatasyncSync(fd)
        } finally {
          closeSync(fd)
        }
      }
    }
    // Appending continues in the newest file (or a new one).
    const last = files.length > 0 ? files[files.length - 1] : 1
    const path = join(dir, `redo.${last}`)
    const fd = openSync(path, existsSync(path) ? 'r+' : 'w+')
    const size = fstatSync(fd).size
    const journal = new TxJournal(options, last, fd, size, checkpoints.length > 0 ? checkpoints[checkpoints.length - 1] : 0)
    return {journal, records, checkpoint}
  }

  /** The file records are appended to now. */
  get currentFile(): number {
    return this.fileNumber
  }

  /** Where the next record goes. */
  get position(): JournalPosition {
    return {file: this.fileNumber, offset: this.size}
  }

  /**
   * Append one record (in the page cache when this returns) and return where it went. Rolls to
   * a new file first when the current one is full (`onRoll` then runs, e.g. a checkpoint).
   */
  write(type: RecordType, head: Record<string, unknown>, body?: Buffer): JournalPosition {
    if (this.closed) throw new MetaError('STORAGE_ERROR', 'the transaction journal is closed')
    if (this.size >= this.options.maxFileBytes) {
      this.roll()
      this.options.onRoll?.()
    }
    const headBytes = Buffer.from(JSON.stringify(head), 'utf8')
    const bodyBytes = body?.length ?? 0
    const record = Buffer.allocUnsafe(HEADER_BYTES + 3 + headBytes.length)
    record.writeInt32BE(3 + headBytes.length + bodyBytes, 0)
    record.writeUInt8(type, 8)
    record.writeUInt16BE(headBytes.length, 9)
    headBytes.copy(record, 11)
    let crc = crc32(record.subarray(HEADER_BYTES))
    if (body !== undefined && body.length > 0) crc = crc32(body, crc)
    record.writeInt32BE(crc | 0, 4)
    const at = {file: this.fileNumber, offset: this.size}
    try {
      writeAll(this.fd, record, this.size)
      if (body !== undefined && body.length > 0) writeAll(this.fd, body, this.size + record.length)
    } catch (error) {
      // Cut back whatever part was written, so the journal stays whole.
      try {
        ftruncateSync(this.fd, this.size)
      } catch {
        // The next open truncates the torn tail.
      }
      throw new MetaError('STORAGE_ERROR', `cannot write the transaction journal: ${(error as Error).message}`, {cause: error})
    }
    this.size += record.length + bodyBytes
    this.dirty = true
    return at
  }

  /** Resolve once an fdatasync that began after this call has completed. */
  sync(): Promise<void> {
    if (this.syncing === undefined) {
      this.syncing = this.runSync()
      return this.syncing
    }
    if (this.next === undefined) {
      let resolve!: () => void
      let reject!: (e: Error) => void
      const promise = new Promise<void>((res, rej) => {
        resolve = res
        reject = rej
      })
      this.next = {promise, resolve, reject}
    }
    return this.next.promise
  }

  /** fdatasync if anything was written since the last one (flushTxLogAtCommit=2 timer). */
  syncIfDirty(): Promise<void> {
    return this.dirty ? this.sync() : Promise.resolve()
  }

  /**
   * Write a checkpoint: replay starts at `from` from now on. Deletes the redo files before it
   * and the checkpoint files beyond maxCheckpoints.
   */
  checkpoint(from: JournalPosition, heuristic: HeuristicEntry[]): void {
    if (this.closed) return
    const {dir, maxCheckpoints, log} = this.options
    this.checkpointNumber += 1
    const name = `checkpoint.${this.checkpointNumber}`
    const data: CheckpointData = {version: JOURNAL_VERSION, file: from.file, offset: from.offset, heuristic}
    // The redo files it refers to must be on disk before it is.
    fdatasyncSync(this.fd)
    const tmp = join(dir, `${name}.tmp`)
    writeFileSync(tmp, JSON.stringify(data))
    const fd = openSync(tmp, 'r')
    try {
      fdatasyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(tmp, join(dir, name))
    syncDir(dir)
    const names = readdirSync(dir)
    for (const n of numbered(names, REDO)) {
      if (n < from.file && n !== this.fileNumber) rmSync(join(dir, `redo.${n}`), {force: true})
    }
    const checkpoints = numbered(names, CHECKPOINT)
    for (const n of checkpoints.slice(0, Math.max(0, checkpoints.length - maxCheckpoints))) {
      rmSync(join(dir, `checkpoint.${n}`), {force: true})
    }
    log.debug('transaction checkpoint', {checkpoint: name, file: from.file, offset: from.offset})
  }

  /** The redo files on disk (numbers, oldest first). */
  files(): number[] {
    return numbered(readdirSync(this.options.dir), REDO)
  }

  async close(): Promise<void> {
    if (this.closed) return
    await this.syncing?.catch(() => undefined)
    await this.next?.promise.catch(() => undefined)
    this.closed = true
    try {
      if (this.dirty) fdatasyncSync(this.fd)
    } finally {
      closeSync(this.fd)
      for (const fd of this.retired) closeSync(fd)
      this.retired = []
    }
  }

  private roll(): void {
    fdatasyncSync(this.fd)
    if (this.syncing === undefined) closeSync(this.fd)
    else this.retired.push(this.fd)
    this.fileNumber += 1
    this.fd = openSync(join(this.options.dir, `redo.${this.fileNumber}`), 'w+')
    this.size = 0
    syncDir(this.options.dir)
  }

  private async runSync(): Promise<void> {
    try {
      this.dirty = false
      const fd = this.fd
      await new Promise<void>((resolve, reject) => fdatasync(fd, (err) => (err ? reject(err) : resolve())))
    } catch (error) {
      throw new MetaError('STORAGE_ERROR', `cannot fdatasync the transaction journal: ${(error as Error).message}`, {cause: error})
    } finally {
      for (const fd of this.retired) closeSync(fd)
      this.retired = []
      this.syncing = undefined
      const waiting = this.next
      this.next = undefined
      if (waiting !== undefined) {
        this.syncing = this.runSync()
        this.syncing.then(waiting.resolve, waiting.reject)
      }
    }
  }
}

/** Bytes of `data` from `at` that hold no whole record (damage skipped over by replay). */
interface DamagedSpan {
  at: number
  bytes: number
}

/**
 * Parse records of `data` from `start` into `out`. A record that is not whole (length past
 * the end, CRC mismatch, bad head) is stepped over when a whole record follows it (damage:
 * the span is returned); otherwise replay ends there. Returns where the whole records end.
 */
function readRecords(data: Buffer, start: number, file: number, out: JournalRecord[]): {end: number; damaged: DamagedSpan[]} {
  const damaged: DamagedSpan[] = []
  let pos = start
  while (pos + HEADER_BYTES + 3 <= data.length) {
    const record = recordAt(data, pos, file)
    if (record !== undefined) {
      out.push(record)
      pos += HEADER_BYTES + data.readInt32BE(pos)
      continue
    }
    const next = nextRecordAfter(data, pos, file)
    if (next === undefined) break
    damaged.push({at: pos, bytes: next - pos})
    pos = next
  }
  assert(pos <= data.length, 'replay ends inside the file')
  return {end: pos, damaged}
}

/** The whole record at `pos`, or undefined when there is none. */
function recordAt(data: Buffer, pos: number, file: number): JournalRecord | undefined {
  const length = data.readInt32BE(pos)
  if (length < 3 || pos + HEADER_BYTES + length > data.length) return undefined
  const payload = data.subarray(pos + HEADER_BYTES, pos + HEADER_BYTES + length)
  if ((crc32(payload) | 0) !== data.readInt32BE(pos + 4)) return undefined
  const type = payload.readUInt8(0) as RecordType
  const headLength = payload.readUInt16BE(1)
  if (3 + headLength > length) return undefined
  let head: Record<string, unknown>
  try {
    head = JSON.parse(payload.toString('utf8', 3, 3 + headLength)) as Record<string, unknown>
  } catch {
    return undefined
  }
  return {type, head, body: Buffer.from(payload.subarray(3 + headLength)), file, offset: pos}
}

/**
 * Where the next whole record after damage at `pos` starts, or undefined (a torn tail). Only
 * positions that look like a record's start (a known type, a JSON head) pay for the CRC.
 */
function nextRecordAfter(data: Buffer, pos: number, file: number): number | undefined {
  for (let at = pos + 1; at + HEADER_BYTES + 4 <= data.length; at++) {
    const type = data[at + HEADER_BYTES]
    if (type < RecordType.MSG || type > RecordType.FORGET || data[at + HEADER_BYTES + 3] !== OPEN_BRACE) continue
    if (recordAt(data, at, file) !== undefined) return at
  }
  return undefined
}

function numbered(names: string[], pattern: RegExp): number[] {
  const out: number[] = []
  for (const name of names) {
    const match = pattern.exec(name)
    if (match !== null) out.push(Number(match[1]))
  }
  return out.sort((a, b) => a - b)
}

function writeAll(fd: number, buf: Buffer, position: number): void {
  let done = 0
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done, position + done)
}

function syncDir(dir: string): void {
  let fd: number | undefined
  try {
    fd = openSync(dir, 'r')
    fdatasyncSync(fd)
  } catch {
    // Not every platform syncs directories; the files themselves are synced.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}
