/**
 * The registry of `meta send --follow`: for each followed file, the byte offset just after the
 * last line that needs no sending again (acknowledged by the broker, or kept in the spool),
 * keyed by path, device and inode, with a fingerprint of the file's first bytes (identity.ts),
 * so a restarted `meta send` continues there, and only in the same content.
 *
 *   { "version": 2, "files": [ { "path": "/var/log/app/a.log", "dev": "2049", "ino": "131",
 *                                "offset": 10240,
 *                                "fingerprint": {"bytes": 1024, "sha256": "9f86d0…"} } ] }
 *
 * A registry of version 1 (no fingerprints) is read as it is and written as version 2 at the
 * next save: its files get their fingerprint then. dev and ino are decimal strings (an inode
 * number may not fit a double). The file is written
 * at most every REGISTRY_SAVE_MS after a change, and at exit, as a versioned state file
 * (durable/state-file.ts: temp file, fdatasync, rename, directory fsync; a crash leaves the old
 * registry or the new one; a registry of a newer version is refused, naming it). A PID lock
 * file (`<registry>.lock`, durable/pid-lock.ts) keeps two processes, or two follows in one
 * process, from following with one registry.
 */
import {mkdirSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {stateDir} from '../../client/spool/index.js'
import {acquirePidLock, type PidLock} from '../../durable/pid-lock.js'
import {readStateFile, StateFileError, writeStateFile, type StateFormat} from '../../durable/state-file.js'
import {MetaError} from '../../protocol/errors.js'
import type {Fingerprint} from './identity.js'

/** The registry is rewritten at most this often while lines are being acknowledged (ms). */
const REGISTRY_SAVE_MS = 250

/** Version 2 adds fingerprints (optional in an entry), so a version 1 registry reads as it is. */
const REGISTRY_FORMAT: StateFormat<RegistryEntry[]> = {
  version: 2,
  migrations: {1: (document) => document},
  shape: '"files": […]',
  parse: parseEntries,
}

export interface RegistryEntry {
  path: string
  dev: string
  ino: string
  /** Byte offset after the last line that needs no sending again. */
  offset: number
  /** The file's first bytes as last read; absent until read (and in registries of version 1). */
  fingerprint?: Fingerprint
}

/** `<state>/registry/<topic>.json` (the state directory: $META_STATE_DIR, else $XDG_STATE_HOME/meta, else ~/.local/state/meta). */
export function defaultRegistryPath(topic: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDir(env), 'registry', `${topic}.json`)
}

export class Registry {
  private readonly byKey = new Map<string, RegistryEntry>()
  private timer: NodeJS.Timeout | undefined
  /** The last write (writes are chained). */
  private saving: Promise<void> = Promise.resolve()
  private dirty = false
  private failure: MetaError | undefined
  private held: PidLock | undefined

  private constructor(readonly path: string) {}

  /** Read the registry at `path` (none yet: empty) and take its lock. Throws INVALID_ARGUMENT, DATA_DIR_LOCKED. */
  static open(path: string): Registry {
    const registry = new Registry(path)
    registry.lock()
    try {
      registry.load()
    } catch (error) {
      registry.unlock()
      throw error
    }
    return registry
  }

  /** The entry of this path and inode. */
  get(path: string, dev: string, ino: string): RegistryEntry | undefined {
    return this.byKey.get(key(path, dev, ino))
  }

  /** An entry of this inode under another path (the file was renamed), if any. */
  findInode(dev: string, ino: string): RegistryEntry | undefined {
    for (const entry of this.byKey.values()) if (entry.dev === dev && entry.ino === ino) return entry
    return undefined
  }

  /** Every entry (a copy of the list). */
  entries(): RegistryEntry[] {
    return [...this.byKey.values()]
  }

  /** Whether some inode was followed at this path (a file there now is its successor). */
  knowsPath(path: string): boolean {
    for (const entry of this.byKey.values()) if (entry.path === path) return true
    return false
  }

  /** Record a position (saved within REGISTRY_SAVE_MS); returns the live entry for move(). */
  set(entry: RegistryEntry): RegistryEntry {
    const k = key(entry.path, entry.dev, entry.ino)
    const old = this.byKey.get(k)
    if (old !== undefined) {
      this.move(old, entry.offset)
      return old
    }
    const stored = {...entry}
    this.byKey.set(k, stored)
    this.changed()
    return stored
  }

  /** Record the fingerprint of an entry set() returned (undefined: the file is read from its start again). */
  setFingerprint(entry: RegistryEntry, fingerprint: Fingerprint | undefined): void {
    if (entry.fingerprint?.sha256 === fingerprint?.sha256 && entry.fingerprint?.bytes === fingerprint?.bytes) return
    if (fingerprint === undefined) delete entry.fingerprint
    else entry.fingerprint = fingerprint
    this.changed()
  }

  /** Move an entry set() returned (once per acknowledgement: no key to build, nothing allocated). */
  move(entry: RegistryEntry, offset: number): void {
    if (entry.offset === offset) return
    entry.offset = offset
    this.changed()
  }

  /**
   * Record the start of a file not known before and save at once: a kill -9 before the next
   * batched save must not make the next run take it for a file never seen (read from its end).
   */
  async add(entry: RegistryEntry): Promise<RegistryEntry> {
    const stored = this.set(entry)
    await this.save()
    return stored
  }

  /** Forget an inode: a file rotated away and read to its end, or one renamed (its entry moves). */
  delete(path: string, dev: string, ino: string): void {
    if (this.byKey.delete(key(path, dev, ino))) this.changed()
  }

  /** A save that failed (STORAGE_ERROR), reported by close(). */
  get error(): MetaError | undefined {
    return this.failure
  }

  /** Save now if anything changed, release the lock. Throws STORAGE_ERROR when a save failed. */
  async close(): Promise<void> {
    try {
      await this.save()
    } finally {
      this.unlock()
    }
    if (this.failure !== undefined) throw this.failure
  }

  private changed(): void {
    this.dirty = true
    if (this.timer !== undefined) return
    this.timer = setTimeout(() => void this.save(), REGISTRY_SAVE_MS)
  }

  /** Write what changed; one write at a time (they share the temp file). */
  private save(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.saving = this.saving.then(async () => {
      if (!this.dirty) return
      this.dirty = false
      const files = [...this.byKey.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
      try {
        await writeStateFile(this.path, REGISTRY_FORMAT, {files})
      } catch (error) {
        this.failure ??= new MetaError('STORAGE_ERROR', `cannot save the registry "${this.path}": ${(error as Error).message}`, {cause: error})
      }
    })
    return this.saving
  }

  private load(): void {
    let read
    try {
      read = readStateFile(this.path, REGISTRY_FORMAT)
    } catch (error) {
      if (!(error instanceof StateFileError)) throw error
      if (error.problem === 'unreadable') throw MetaError.invalidArgument(`cannot read the registry "${this.path}": ${error.why}`)
      if (error.problem === 'newer') throw MetaError.invalidArgument(`the registry "${this.path}": ${error.why}, or pass another --registry`)
      throw MetaError.invalidArgument(`"${this.path}" is not a registry of followed files (${error.why}): fix or remove it, or pass --registry`)
    }
    for (const e of read?.value ?? []) this.byKey.set(key(e.path, e.dev, e.ino), e)
  }

  private lock(): void {
    mkdirSync(dirname(this.path), {recursive: true})
    let result
    try {
      result = acquirePidLock(`${this.path}.lock`, {command: 'meta send --follow'})
    } catch (error) {
      throw MetaError.invalidArgument(`cannot lock the registry "${this.path}": ${(error as Error).message}`)
    }
    if (result.holder !== undefined) {
      throw new MetaError(
        'DATA_DIR_LOCKED',
        `the registry "${this.path}" is in use by process ${result.holder.pid}: expected one meta send --follow per registry (pass another --registry)`,
      )
    }
    this.held = result.lock
  }

  private unlock(): void {
    const held = this.held
    this.held = undefined
    held?.release()
  }
}

/** The entries of a registry document (version 2), checked. */
function parseEntries(document: Record<string, unknown>): RegistryEntry[] {
  if (!Array.isArray(document.files)) throw new Error('expected {"version": 2, "files": […]}')
  const entries: RegistryEntry[] = []
  for (const e of document.files as Array<Partial<RegistryEntry>>) {
    if (typeof e?.path !== 'string' || typeof e.dev !== 'string' || typeof e.ino !== 'string' || !Number.isSafeInteger(e.offset) || e.offset! < 0) {
      throw new Error('expected entries {"path", "dev", "ino", "offset"}')
    }
    const fp = e.fingerprint
    if (fp !== undefined && (!Number.isSafeInteger(fp?.bytes) || fp.bytes < 0 || typeof fp.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(fp.sha256))) {
      throw new Error(`"${e.path}": expected "fingerprint": {"bytes": <count>, "sha256": "<64 hex digits>"}`)
    }
    entries.push({path: e.path, dev: e.dev, ino: e.ino, offset: e.offset!, ...(fp === undefined ? {} : {fingerprint: {bytes: fp.bytes, sha256: fp.sha256}})})
  }
  return entries
}

function key(path: string, dev: string, ino: string): string {
  return `${path}\u0000${dev}\u0000${ino}`
}
