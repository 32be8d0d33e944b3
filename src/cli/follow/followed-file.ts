/**
 * One followed path, as `tail -F` follows it: lines as they are written, across rotations.
 *
 * A path is read through one open file (a generation: one inode) at a time:
 *
 *   open (registry offset | start | end) ──read to EOF──▶ idle ──stat the path──┐
 *        ▲                                                                      │
 *        │ renamed/removed and recreated: the old file read to its end first,   │
 *        └─ idle ROTATE_IDLE_MS (a writer may still finish into it), its partial ◀┘
 *           last line sent, then the new file from its start. Truncated in place
 *           (size below what was read, or bytes already read no longer there:
 *           truncated and written again within one interval, identity.ts): the
 *           partial line sent, then from offset 0.
 *
 * Every pass starts with an fstat: a file that grew is first checked to still hold what was
 * read (its first bytes and the last ones before the read position), so the bytes read next
 * continue the lines already sent and never start in the middle of a new one.
 *
 * A file renamed while `meta send` was stopped (its registry entry names a path that now holds
 * another inode, or none) is found by its inode in the entry's directory and adopted (adopt()):
 * read from its saved position to its end, as a rotation seen live, before the file now at the
 * path.
 *
 * A partial last line (no delimiter yet) waits for its delimiter. Lines go to the handler in
 * file order; each carries its end offset, and the registry gets the offset after the last
 * line settled (see LineTracker). A generation rotated away is closed, and its registry entry
 * dropped, once every line of it is settled.
 */
import type {FileHandle} from 'node:fs/promises'
import {open, stat} from 'node:fs/promises'
import type {InputHandler, Source} from '../send-input.js'
import {RecordSplitter} from '../splitter.js'
import {fingerprintOf, KnownContent, matchesFingerprint} from './identity.js'
import {LineTracker} from './line-tracker.js'
import type {Registry, RegistryEntry} from './registry.js'

/** Bytes asked of each read(2). */
const READ_CHUNK_BYTES = 256 * 1024
/** Most bytes read from one file per pass, so that one busy file does not starve the others. */
const PASS_BYTES_MAX = 4 * 1024 * 1024
/** How far back from the end a file first seen is searched for the start of its last line. */
const LAST_LINE_SEARCH_BYTES = 64 * 1024

export interface FollowContext {
  registry: Registry
  handler: InputHandler
  delimiter: Buffer
  maxRecordBytes: number
  fromBeginning: boolean
  /** After a rename, the old file is read until it was idle this long (ms). */
  rotateIdleMs: number
  /** Inodes read to their end in this run (dev:ino → offset), for a rotated name a glob matches. */
  finished: Map<string, number>
  /** Inodes (dev:ino) a followed path has open: another path naming one waits until it is let go. */
  held: Set<string>
  /** Resolve when the paused input may go on (or must stop). */
  whenResumed(splitter: RecordSplitter): Promise<void>
  report(line: string): void
}

interface Generation {
  fd: FileHandle | undefined
  dev: string
  ino: string
  /** Next byte to read. */
  readPos: number
  /** Where the next line starts. */
  lineStart: number
  splitter: RecordSplitter
  tracker: LineTracker
  source: Source
  /** The partial last line is being sent (no delimiter after it). */
  ending: boolean
  /** No more reads: rotated away or truncated. */
  ended: boolean
  /** Its registry entry (set once the generation is registered). */
  entry: RegistryEntry | undefined
  /** A later generation of the same inode (truncated in place) owns the registry entry. */
  superseded: boolean
  /** Since when the path names another file (or none) and this one grew no more. */
  rotatedSinceMs: number | undefined
  /** What the file held where it was read (compared when it grows). */
  known: KnownContent
  /** The file's modification time at the last pass (a change makes the pass compare the content). */
  mtimeMs: number
}

export class FollowedFile {
  private current: Generation | undefined
  private readonly retiring = new Set<Generation>()
  private missingReported = false

  /**
   * @param initial seen when following began: a file the registry does not know starts at its end (unless fromBeginning)
   * @param drainOnly no pattern names the path: only a file adopted under it is read, never what the path holds
   */
  constructor(
    readonly path: string,
    private readonly context: FollowContext,
    private initial: boolean,
    private readonly drainOnly = false,
  ) {}

  /** Nothing open and nothing waiting for acknowledgements: may be dropped when no pattern names it. */
  get idle(): boolean {
    return this.current === undefined && this.retiring.size === 0
  }

  /** Read what was written since the last pass; true when there was something. */
  async poll(): Promise<boolean> {
    const initial = this.initial
    this.initial = false
    if (this.current === undefined && (this.drainOnly || !(await this.openCurrent(initial)))) return false
    const gen = this.current!
    if (this.context.handler.stopped()) return false
    const {size, mtimeMs} = await gen.fd!.stat()
    // Grown, or written to without growing (truncated and written again to the same size): still what was read?
    const check = size > gen.readPos || mtimeMs !== gen.mtimeMs
    gen.mtimeMs = mtimeMs
    if (size < gen.readPos || (check && !(await gen.known.unchanged(gen.fd!, gen.readPos)))) {
      // Truncated in place (and maybe written again): what was read is all there is of the old content.
      this.context.report(`% "${this.path}" was truncated: reading it from its start`)
      await this.endGeneration(gen)
      const next = this.newGeneration(gen.fd!, gen.dev, gen.ino, 0)
      gen.fd = undefined
      gen.superseded = true
      this.current = next
      next.entry = this.context.registry.set({path: this.path, dev: gen.dev, ino: gen.ino, offset: 0})
      this.context.registry.setFingerprint(next.entry, undefined)
      this.settleRetired(gen)
      return true
    }
    if (size > gen.readPos && (await this.readAvailable(gen))) {
      gen.rotatedSinceMs = undefined
      return true
    }
    if (this.context.handler.stopped()) return false
    const now = await statPath(this.path)
    if (now !== undefined && now.dev === gen.dev && now.ino === gen.ino) return false
    // Renamed or removed: give a writer still writing to the old file time to finish.
    gen.rotatedSinceMs ??= Date.now()
    if (Date.now() - gen.rotatedSinceMs < this.context.rotateIdleMs) return false
    await this.endGeneration(gen)
    this.current = undefined
    this.context.finished.set(`${gen.dev}:${gen.ino}`, gen.readPos)
    this.settleRetired(gen)
    return true
  }

  /**
   * Read `entry`'s file, renamed to `renamedTo` while `meta send` was stopped, from its saved
   * position to its end before the file at the path (as a rotation seen live). False when it is
   * not the file the entry names (another inode there now, or other first bytes).
   */
  async adopt(renamedTo: string, entry: RegistryEntry): Promise<boolean> {
    let fd: FileHandle
    try {
      fd = await open(renamedTo, 'r')
    } catch {
      return false
    }
    const info = await fd.stat({bigint: true})
    if (
      String(info.dev) !== entry.dev ||
      String(info.ino) !== entry.ino ||
      (entry.fingerprint !== undefined && !(await matchesFingerprint(fd, entry.fingerprint)))
    ) {
      await fd.close()
      return false
    }
    const start = entry.offset <= Number(info.size) ? entry.offset : 0
    const gen = this.newGeneration(fd, entry.dev, entry.ino, start)
    gen.known = await KnownContent.before(fd, start)
    gen.entry = this.context.registry.set({...entry, offset: start})
    gen.rotatedSinceMs = Date.now()
    this.context.held.add(`${entry.dev}:${entry.ino}`)
    this.current = gen
    this.context.report(`% "${entry.path}" was renamed to "${renamedTo}" while meta send was stopped: reading it to its end first`)
    return true
  }

  /** Close what is open (registry positions are kept as they are). */
  async close(): Promise<void> {
    for (const gen of [this.current, ...this.retiring]) await gen?.fd?.close()
    this.current = undefined
    this.retiring.clear()
  }

  /** Open the file now at the path; false when there is none (yet). */
  private async openCurrent(initial: boolean): Promise<boolean> {
    let fd: FileHandle
    try {
      fd = await open(this.path, 'r')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // Said once, as tail -F does: a typo in a path must not look like a quiet file.
      if (!this.missingReported) {
        this.context.report(
          code === 'ENOENT'
            ? `% "${this.path}" does not exist (yet): following it once it appears`
            : `% cannot read "${this.path}" (${code ?? (error as Error).message}): following it once it can be read`,
        )
      }
      this.missingReported = true
      return false
    }
    const info = await fd.stat({bigint: true})
    if (!info.isFile()) {
      await fd.close()
      if (!this.missingReported) {
        const glob = `${this.path.replace(/\/$/, '')}/*.log`
        this.context.report(
          info.isDirectory()
            ? `% "${this.path}" is a directory: not followed (a glob such as '${glob}' follows the files in it)`
            : `% "${this.path}" is not a regular file: not followed`,
        )
      }
      this.missingReported = true
      return false
    }
    this.missingReported = false
    const dev = String(info.dev)
    const ino = String(info.ino)
    if (this.context.held.has(`${dev}:${ino}`)) {
      // Renamed to a name a pattern matches while its old path still reads it: wait for that one to finish.
      await fd.close()
      return false
    }
    const size = Number(info.size)
    const {registry, finished} = this.context
    const known: RegistryEntry | undefined = registry.get(this.path, dev, ino) ?? registry.findInode(dev, ino)
    const done = finished.get(`${dev}:${ino}`)
    let start: number
    if (known !== undefined) start = await this.knownStart(fd, known, size)
    else if (done !== undefined)
      start = Math.min(done, size) // renamed into a pattern after it was read
    else if (!initial || registry.knowsPath(this.path) || this.context.fromBeginning) start = 0
    else start = await lastLineStart(fd, size, this.context.delimiter)
    if (known !== undefined && known.path !== this.path) registry.delete(known.path, dev, ino)
    const gen = this.newGeneration(fd, dev, ino, start)
    gen.known = await KnownContent.before(fd, start)
    this.context.held.add(`${dev}:${ino}`)
    const fingerprint = gen.known.head.length === 0 ? undefined : fingerprintOf(gen.known.head)
    const entry = {path: this.path, dev, ino, offset: start, ...(fingerprint === undefined ? {} : {fingerprint})}
    gen.entry = known === undefined ? await registry.add(entry) : registry.set(entry)
    registry.setFingerprint(gen.entry, fingerprint)
    this.current = gen
    return true
  }

  /** Where a file the registry knows goes on: its saved offset, unless it changed while `meta send` was stopped (then its start). */
  private async knownStart(fd: FileHandle, known: RegistryEntry, size: number): Promise<number> {
    if (known.fingerprint !== undefined && !(await matchesFingerprint(fd, known.fingerprint))) {
      this.context.report(`% "${this.path}" holds other content than when meta send stopped (replaced or rewritten): reading it from its start`)
      return 0
    }
    if (known.offset > size) {
      this.context.report(`% "${this.path}" was truncated while meta send was stopped: reading it from its start`)
      return 0
    }
    return known.offset
  }

  private newGeneration(fd: FileHandle, dev: string, ino: string, start: number): Generation {
    const {delimiter, maxRecordBytes, handler, registry} = this.context
    const path = this.path
    const gen: Generation = {
      fd,
      dev,
      ino,
      readPos: start,
      lineStart: start,
      tracker: new LineTracker(start),
      ending: false,
      ended: false,
      entry: undefined,
      superseded: false,
      rotatedSinceMs: undefined,
      known: new KnownContent(),
      mtimeMs: 0,
      source: {
        name: path,
        label: (index) => `${path} (line ${index} followed)`,
        done: (index) => {
          if (!gen.tracker.done(index)) return
          if (!gen.superseded && gen.entry !== undefined) registry.move(gen.entry, gen.tracker.offset)
          if (gen.ended) this.settleRetired(gen)
        },
      },
      splitter: new RecordSplitter({
        delimiter,
        maxRecordBytes,
        onRecord: (record, size, index) => {
          const end = gen.lineStart + size + (gen.ending ? 0 : delimiter.length)
          gen.lineStart = end
          gen.tracker.add(index, end)
          return handler.record(record, size, gen.source, index, false)
        },
      }),
    }
    return gen
  }

  /** Read to the end of the file (at most PASS_BYTES_MAX); true when anything was read. */
  private async readAvailable(gen: Generation): Promise<boolean> {
    let total = 0
    let buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES)
    while (total < PASS_BYTES_MAX && !this.context.handler.stopped()) {
      const {bytesRead} = await gen.fd!.read(buffer, 0, READ_CHUNK_BYTES, gen.readPos)
      if (bytesRead === 0) break
      let chunk: Buffer
      if (bytesRead < READ_CHUNK_BYTES / 2) {
        // A small read: copied, so that records in flight do not pin a mostly empty buffer.
        chunk = Buffer.from(buffer.subarray(0, bytesRead))
      } else {
        chunk = buffer.subarray(0, bytesRead)
        buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES)
      }
      if (gen.known.read(gen.readPos, chunk) && gen.entry !== undefined && !gen.superseded) {
        this.context.registry.setFingerprint(gen.entry, fingerprintOf(gen.known.head))
      }
      gen.readPos += bytesRead
      total += bytesRead
      if (!gen.splitter.push(chunk)) await this.context.whenResumed(gen.splitter)
    }
    return total > 0
  }

  /** No more reads from this generation: its partial last line is sent as a line. */
  private async endGeneration(gen: Generation): Promise<void> {
    gen.ended = true
    gen.ending = true
    if (!gen.splitter.end()) await this.context.whenResumed(gen.splitter)
    this.retiring.add(gen)
  }

  /** A generation read to its end, once every line of it is settled: closed, its entry dropped. */
  private settleRetired(gen: Generation): void {
    if (!this.retiring.has(gen) || gen.tracker.pending > 0) return
    this.retiring.delete(gen)
    void gen.fd?.close()
    gen.fd = undefined
    if (gen.superseded) return
    this.context.registry.delete(this.path, gen.dev, gen.ino)
    this.context.held.delete(`${gen.dev}:${gen.ino}`)
  }
}

async function statPath(path: string): Promise<{dev: string; ino: string} | undefined> {
  try {
    const info = await stat(path, {bigint: true})
    return {dev: String(info.dev), ino: String(info.ino)}
  } catch {
    return undefined // gone (renamed away, removed) or unreadable: the old file is read to its end
  }
}

/** Where the last line of a file first seen starts, so that a line being written is sent whole. */
async function lastLineStart(fd: FileHandle, size: number, delimiter: Buffer): Promise<number> {
  const length = Math.min(size, LAST_LINE_SEARCH_BYTES)
  if (length === 0) return size
  const buffer = Buffer.alloc(length)
  const {bytesRead} = await fd.read(buffer, 0, length, size - length)
  const at = buffer.subarray(0, bytesRead).lastIndexOf(delimiter)
  if (at >= 0) return size - length + at + delimiter.length
  return length === size ? 0 : size
}
