/**
 * The file-descriptor budget: every segment, index and directory the store touches is a
 * {@link CachedFile}, opened lazily and closed again, least recently used first, once more
 * than `maxOpen` are open.
 *
 * An operation pins the file for its duration, so an fd in use by an in-flight read, write
 * or fdatasync is never closed under it. Asynchronous operations (reads, fdatasync) use
 * {@link FdCache.acquireAsync}, which waits while every open descriptor is pinned, so they
 * never push the count over the budget. The end-of-turn write is synchronous and uses
 * {@link FdCache.acquire}; it may open one descriptor over the budget for the length of a
 * write call.
 */
import assert from 'node:assert'
import type {Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import type {FileOps, OpenMode} from './file-ops.js'
import {LruList, type LruEntry} from './lru-list.js'

/** A file the store may keep open. The cache owns `fd`; everyone else pins it. */
export class CachedFile implements LruEntry<CachedFile> {
  lruPrev: CachedFile | undefined = undefined
  lruNext: CachedFile | undefined = undefined
  inLru = false
  /** The open descriptor, or -1. */
  fd = -1
  /** In-flight operations using `fd`. */
  pins = 0
  /** Closed as soon as unpinned and never reopened (file removed, store closing). */
  retired = false

  constructor(
    readonly path: string,
    /** Directories are opened read-only (to fdatasync their entries). */
    readonly mode: 'r+' | 'r' = 'r+',
  ) {}
}

/** Errors that mean "no write permission": such a file is still readable. */
const READ_ONLY_ERRORS = new Set(['EACCES', 'EPERM', 'EROFS'])

interface Waiter {
  file: CachedFile
  resolve: (fd: number) => void
  reject: (err: unknown) => void
}

export class FdCache {
  /** Open files in least-recently-used-first order. */
  private readonly lru = new LruList<CachedFile>()
  /** Open files with pins > 0. */
  private pinnedFiles = 0
  private waiters: Waiter[] = []
  private drained: (() => void) | undefined
  private closed = false

  constructor(
    private readonly ops: FileOps,
    private readonly maxOpen: number,
    private readonly log: Logger,
  ) {}

  /** Files currently open. */
  get openCount(): number {
    return this.lru.size
  }

  /**
   * Pin `file` open for one synchronous operation and return its fd; pair every call with
   * {@link release}. Throws the node:fs error when the file cannot be opened.
   */
  acquire(file: CachedFile): number {
    if (file.fd < 0) {
      this.open(file, file.mode)
    } else {
      this.lru.touch(file)
    }
    this.pin(file)
    return file.fd
  }

  /** Like {@link acquire}, but waits while the budget is exhausted by pinned files. */
  acquireAsync(file: CachedFile): Promise<number> {
    if (this.closed) return Promise.reject(new MetaError('STORAGE_ERROR', 'message store is closed'))
    if (file.fd >= 0 || this.hasRoom()) {
      try {
        return Promise.resolve(this.acquire(file))
      } catch (error) {
        return Promise.reject(error)
      }
    }
    return new Promise((resolve, reject) => this.waiters.push({file, resolve, reject}))
  }

  /**
   * Create `file` empty (truncating it, or failing with EEXIST when `exclusive`), leave it
   * open and pin it like {@link acquire}.
   */
  create(file: CachedFile, exclusive = false): number {
    assert(file.fd < 0, `${file.path} is already open`)
    this.open(file, exclusive ? 'wx+' : 'w+')
    this.pin(file)
    return file.fd
  }

  release(file: CachedFile): void {
    assert(file.pins > 0, `${file.path} released more often than acquired`)
    file.pins -= 1
    if (file.pins > 0) return
    this.pinnedFiles -= 1
    if (file.retired) this.close(file)
    else if (this.lru.size > this.maxOpen) this.trim(0)
    this.serveWaiters()
  }

  /** Close `file` now, or when its last pin is released; it is never reopened. */
  retire(file: CachedFile): void {
    file.retired = true
    if (file.fd >= 0 && file.pins === 0) this.close(file)
  }

  /** Close every file, waiting for in-flight operations to release theirs. */
  closeAll(): Promise<void> {
    this.closed = true
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) waiter.reject(new MetaError('STORAGE_ERROR', 'message store is closed'))
    for (const file of [...this.lru.oldestFirst()]) this.retire(file)
    if (this.lru.size === 0) return Promise.resolve()
    return new Promise((resolve) => {
      this.drained = resolve
    })
  }

  private hasRoom(): boolean {
    return !this.closed && (this.lru.size < this.maxOpen || this.pinnedFiles < this.lru.size)
  }

  private pin(file: CachedFile): void {
    if (file.pins === 0) this.pinnedFiles += 1
    file.pins += 1
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0 && (this.waiters[0].file.fd >= 0 || this.hasRoom())) {
      const waiter = this.waiters.shift() as Waiter
      try {
        waiter.resolve(this.acquire(waiter.file))
      } catch (error) {
        waiter.reject(error)
      }
    }
  }

  private open(file: CachedFile, mode: OpenMode): void {
    // A read may race with the removal of its segment (a rolled-back batch).
    if (file.retired) throw new MetaError('STORAGE_ERROR', `file "${file.path}" was removed`)
    this.trim(1)
    try {
      file.fd = this.ops.openSync(file.path, mode)
    } catch (error) {
      // A segment we may not write is still readable; writes to it fail with EBADF later.
      if (mode !== 'r+' || !READ_ONLY_ERRORS.has((error as NodeJS.ErrnoException).code ?? '')) throw error
      file.fd = this.ops.openSync(file.path, 'r')
    }
    this.lru.touch(file)
  }

  /** Close unpinned files, oldest first, until `room` more fit in the budget. */
  private trim(room: number): void {
    if (this.lru.size + room <= this.maxOpen) return
    for (const file of this.lru.oldestFirst()) {
      if (file.pins === 0) this.close(file)
      if (this.lru.size + room <= this.maxOpen) return
    }
  }

  private close(file: CachedFile): void {
    this.lru.remove(file)
    const fd = file.fd
    file.fd = -1
    try {
      this.ops.closeSync(fd)
    } catch (error) {
      // close(2) failing leaves nothing to retry: the descriptor is gone either way.
      this.log.warn('cannot close file', {path: file.path, error: (error as Error).message})
    }
    if (this.lru.size === 0 && this.drained !== undefined) {
      const drained = this.drained
      this.drained = undefined
      drained()
    }
  }
}
