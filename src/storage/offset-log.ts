/**
 * The committed-offset log: consumer groups' offsets kept by a standalone broker, durable
 * across restarts and kill -9.
 *
 * File `<dataPath>/__meta_offsets/offsets.log`, a sequence of records:
 *
 *   offset  size  field
 *   0       4     length   uint32 BE, bytes of the JSON payload
 *   4       4     crc      uint32 BE, crc32 of the payload (unmasked)
 *   8       len   payload  JSON {"g": group, "o": [[topic, partition, offset, msgId, committedAtMs], …]}
 *                          or {"g": group, "d": true} (the group's offsets were deleted)
 *                          or {"g": "", "t": topic, "d": true} (every group's offsets in a deleted topic)
 *
 * Later records win. Every commit is one record, appended and fdatasynced before it is
 * acknowledged; commits that arrive while an fdatasync is in flight share the next one.
 * Recovery reads records until the first short or CRC-failing one and truncates there (a torn
 * tail is a commit that was never acknowledged). When the file grows past
 * COMPACT_MIN_BYTES and four times the size of a snapshot of the live entries, it is rewritten
 * as that snapshot into a temp file, fsynced and renamed over the old one (atomic).
 */
import {crc32} from 'node:zlib'
import {closeSync, fdatasync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, writeSync} from 'node:fs'
import {join} from 'node:path'
import {MetaError} from '../protocol/errors.js'
import {silentLogger, type Logger} from '../log.js'

/** Directory under the data path (no '-', so it is never taken for a partition directory). */
export const OFFSETS_DIR = '__meta_offsets'
export const OFFSETS_FILE = 'offsets.log'
const TEMP_SUFFIX = '.tmp'
const RECORD_HEADER_BYTES = 8
const COMPACT_MIN_BYTES = 1024 * 1024

export interface StoredOffset {
  topic: string
  partition: number
  offset: number
  msgId: string
  committedAtMs: number
}

type Entry = [topic: string, partition: number, offset: number, msgId: string, committedAtMs: number]

interface Pending {
  bytes: Buffer
  done: (err: MetaError | null) => void
}

export class OffsetLog {
  private readonly groups = new Map<string, Map<string, StoredOffset>>()
  private readonly dir: string
  private readonly path: string
  private fd: number
  private size = 0
  private queue: Pending[] = []
  private syncing = false
  private closed = false
  /** Resolves once close() has answered every commit and closed the file. */
  private closedFile: Promise<void> | undefined
  /** Set while close() waits for an fdatasync in flight. */
  private finishClose: (() => void) | undefined

  private constructor(
    dataPath: string,
    private readonly log: Logger,
  ) {
    this.dir = join(dataPath, OFFSETS_DIR)
    this.path = join(this.dir, OFFSETS_FILE)
    mkdirSync(this.dir, {recursive: true})
    this.recover()
    this.fd = openSync(this.path, 'a')
  }

  static open(dataPath: string, logger: Logger = silentLogger): OffsetLog {
    return new OffsetLog(dataPath, logger)
  }

  /** Every group with committed offsets. */
  groupNames(): string[] {
    return [...this.groups.keys()].sort()
  }

  /** A group's offsets, optionally only for some topics, sorted by topic and partition. */
  get(group: string, topics?: readonly string[]): StoredOffset[] {
    const entries = [...(this.groups.get(group)?.values() ?? [])]
    return entries
      .filter((e) => topics === undefined || topics.includes(e.topic))
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  }

  /** Record offsets; `done` runs once they are fdatasynced (or failed). */
  commit(group: string, offsets: readonly Omit<StoredOffset, 'committedAtMs'>[], done: (err: MetaError | null) => void): void {
    if (this.closed) return done(new MetaError('STORAGE_ERROR', 'offset log is closed'))
    const now = Date.now()
    const entries: Entry[] = offsets.map((o) => [o.topic, o.partition, o.offset, o.msgId, now])
    // Visible to readers only once durable, so a failed write never shows a phantom offset.
    this.enqueue({g: group, o: entries}, (err) => {
      if (err === null) this.apply(group, {o: entries})
      done(err)
    })
  }

  /** Forget every offset of a group. */
  deleteGroup(group: string, done: (err: MetaError | null) => void): void {
    this.enqueue({g: group, d: true}, (err) => {
      if (err === null) this.groups.delete(group)
      done(err)
    })
  }

  /** Forget every group's offsets in `topic` (a deleted topic); `done` runs once durable. */
  deleteTopic(topic: string, done: (err: MetaError | null) => void): void {
    if (this.closed) return done(new MetaError('STORAGE_ERROR', 'offset log is closed'))
    this.enqueue({g: '', t: topic, d: true}, (err) => {
      if (err === null) this.dropTopic(topic)
      done(err)
    })
  }

  /**
   * Write what is queued, fsync, close the file, and answer every commit given before (after
   * the fdatasync in flight, if any, has answered its own). Commits after close fail at once.
   * Synchronous when no fdatasync is in flight.
   */
  close(): Promise<void> {
    if (this.closedFile !== undefined) return this.closedFile
    this.closed = true
    if (!this.syncing) {
      this.closeFile()
      this.closedFile = Promise.resolve()
    } else {
      this.closedFile = new Promise((resolve) => {
        this.finishClose = () => {
          this.closeFile()
          resolve()
        }
      })
    }
    return this.closedFile
  }

  private closeFile(): void {
    const batch = this.writeQueued()
    let err: MetaError | null = null
    try {
      fsyncSync(this.fd)
    } catch (error) {
      err = new MetaError('STORAGE_ERROR', `cannot sync ${this.path}: ${(error as Error).message}`)
    } finally {
      closeSync(this.fd)
    }
    for (const p of batch) p.done(err)
  }

  private enqueue(payload: object, done: (err: MetaError | null) => void): void {
    this.queue.push({bytes: encodeRecord(payload), done})
    if (!this.syncing) this.writeAndSync()
  }

  /** Write everything queued, fdatasync once, then acknowledge those commits. */
  private writeAndSync(): void {
    const batch = this.writeQueued()
    if (batch.length === 0) return
    this.syncing = true
    fdatasync(this.fd, (error) => {
      this.syncing = false
      const err = error ? new MetaError('STORAGE_ERROR', `cannot sync ${this.path}: ${error.message}`) : null
      for (const p of batch) p.done(err)
      if (this.finishClose !== undefined) this.finishClose()
      else if (this.queue.length > 0) this.writeAndSync()
      else this.maybeCompact()
    })
  }

  private writeQueued(): Pending[] {
    const batch = this.queue
    this.queue = []
    if (batch.length === 0) return batch
    const bytes = Buffer.concat(batch.map((p) => p.bytes))
    try {
      for (let written = 0; written < bytes.length;) written += writeSync(this.fd, bytes, written)
      this.size += bytes.length
    } catch (error) {
      // Leave no partial record: cut the file back to where this batch began.
      try {
        ftruncateSync(this.fd, this.size)
      } catch (truncateError) {
        this.log.error('cannot truncate offset log after a failed write', {error: String(truncateError)})
      }
      const code = (error as NodeJS.ErrnoException).code === 'ENOSPC' ? 'DISK_FULL' : 'STORAGE_ERROR'
      const err = new MetaError(code, `cannot write ${this.path}: ${(error as Error).message}`)
      for (const p of batch) p.done(err)
      return []
    }
    return batch
  }

  private recover(): void {
    let bytes: Buffer
    try {
      bytes = readFileSync(this.path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    let pos = 0
    while (bytes.length - pos >= RECORD_HEADER_BYTES) {
      const length = bytes.readUInt32BE(pos)
      const end = pos + RECORD_HEADER_BYTES + length
      if (end > bytes.length) break
      const payload = bytes.subarray(pos + RECORD_HEADER_BYTES, end)
      if (crc32(payload) !== bytes.readUInt32BE(pos + 4)) break
      let record: {g: string; o?: Entry[]; d?: boolean; t?: string}
      try {
        record = JSON.parse(payload.toString('utf8')) as typeof record
      } catch {
        break // a CRC-valid record that is not JSON was never written by us: treat as the tail
      }
      if (record.d && record.t !== undefined) this.dropTopic(record.t)
      else if (record.d) this.groups.delete(record.g)
      else this.apply(record.g, record)
      pos = end
    }
    if (pos < bytes.length) {
      this.log.warn('truncated torn tail of the offset log', {path: this.path, droppedBytes: bytes.length - pos})
      const fd = openSync(this.path, 'r+')
      try {
        ftruncateSync(fd, pos)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    }
    this.size = pos
  }

  private dropTopic(topic: string): void {
    for (const [group, offsets] of this.groups) {
      for (const [key, entry] of offsets) if (entry.topic === topic) offsets.delete(key)
      if (offsets.size === 0) this.groups.delete(group)
    }
  }

  private apply(group: string, record: {o?: Entry[]}): void {
    let offsets = this.groups.get(group)
    if (offsets === undefined) {
      offsets = new Map()
      this.groups.set(group, offsets)
    }
    for (const [topic, partition, offset, msgId, committedAtMs] of record.o ?? []) {
      offsets.set(`${topic}\0${partition}`, {topic, partition, offset, msgId, committedAtMs})
    }
  }

  private maybeCompact(): void {
    if (this.size < COMPACT_MIN_BYTES || this.closed) return
    const snapshot = Buffer.concat(
      this.groupNames().map((group) =>
        encodeRecord({g: group, o: this.get(group).map((e): Entry => [e.topic, e.partition, e.offset, e.msgId, e.committedAtMs])}),
      ),
    )
    if (this.size < snapshot.length * 4) return
    const temp = this.path + TEMP_SUFFIX
    try {
      const fd = openSync(temp, 'w')
      try {
        for (let written = 0; written < snapshot.length;) written += writeSync(fd, snapshot, written)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(temp, this.path)
      const dirFd = openSync(this.dir, 'r')
      try {
        fsyncSync(dirFd)
      } finally {
        closeSync(dirFd)
      }
    } catch (error) {
      this.log.warn('offset log compaction failed; keeping the old file', {error: (error as Error).message})
      return
    }
    closeSync(this.fd)
    this.fd = openSync(this.path, 'a')
    this.log.debug('compacted offset log', {from: this.size, to: snapshot.length})
    this.size = snapshot.length
  }
}

function encodeRecord(payload: object): Buffer {
  const json = Buffer.from(JSON.stringify(payload), 'utf8')
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + json.length)
  record.writeUInt32BE(json.length, 0)
  record.writeUInt32BE(crc32(json), 4)
  json.copy(record, RECORD_HEADER_BYTES)
  return record
}
