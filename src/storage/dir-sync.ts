/**
 * fdatasync of directories, so the entries of new segment files and partition directories
 * survive a power loss. Requests for a directory whose sync has not started yet join it:
 * creating 10,000 partitions under one root syncs the root a handful of times, not 10,000.
 */
import type {FdCache} from './fd-cache.js'
import {CachedFile} from './fd-cache.js'
import type {FileOps} from './file-ops.js'
import {ioError} from './io-error.js'
import type {Limiter} from './limiter.js'

export class DirSync {
  /** Syncs queued but not started, by path. */
  private readonly queued = new Map<string, Promise<void>>()

  constructor(
    private readonly ops: FileOps,
    private readonly fds: FdCache,
    private readonly limiter: Limiter,
  ) {}

  /** Resolve once an fdatasync of `path` that started after this call has completed. */
  sync(path: string): Promise<void> {
    let queued = this.queued.get(path)
    if (queued === undefined) {
      queued = this.limiter.run(() => {
        this.queued.delete(path)
        return this.syncNow(path)
      })
      this.queued.set(path, queued)
    }
    return queued
  }

  private async syncNow(path: string): Promise<void> {
    const file = new CachedFile(path, 'r')
    try {
      const fd = await this.fds.acquireAsync(file)
      try {
        await this.ops.fdatasync(fd)
      } finally {
        this.fds.release(file)
      }
    } catch (error) {
      throw ioError(error, 'fdatasync', path)
    } finally {
      this.fds.retire(file)
    }
  }
}
