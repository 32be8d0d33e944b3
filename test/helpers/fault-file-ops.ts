/**
 * The store's file operations (src/storage/file-ops.ts, its one seam for faults) with hooks:
 * the real node:fs operations, counted, and failing on demand — writes with ENOSPC or EIO
 * (optionally after writing part of the bytes: a torn write), fdatasyncs with an error or
 * held on a gate the test opens, opens with EMFILE — for every file or only the files whose
 * path matches `paths`. A broker takes it as `startTestBroker(t, {fileOps})`, a store as
 * `MessageStore.open({fileOps})`.
 *
 * Every operation is an own property (an arrow function), so the object works however it is
 * handed on (spread into another, or its methods taken one by one).
 */
import {fstatSync} from 'node:fs'
import {nodeFileOps, type FileOps, type OpenMode} from '../../src/storage/file-ops.js'

/** A deferred promise the test settles. */
export interface Gate {
  promise: Promise<void>
  open(): void
  fail(err: Error): void
}

export function gate(): Gate {
  let open!: () => void
  let fail!: (err: Error) => void
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return {promise, open, fail}
}

export interface FaultFileOpsOptions {
  /** Only files whose path matches get faults (default: every file). */
  paths?: RegExp
  /** {@link FaultFileOps.failWrites} from the start (a disk full before the store opens). */
  failWrites?: string
}

export class FaultFileOps implements FileOps {
  /** Opens per path (a file the descriptor budget closed and opens again counts again). */
  readonly opened = new Map<string, number>()
  /** fdatasync calls on files (directory syncs are not counted), and those that completed. */
  syncCalls = 0
  syncsCompleted = 0
  /** Writes that failed because of {@link failWrites}. */
  refusedWrites = 0
  /** Error code thrown by the next writes to matching files (e.g. 'ENOSPC'); undefined = none. */
  failWrites: string | undefined
  /** Bytes a failing write really writes before it throws (a torn write). */
  partialWriteBytes = 0
  /** Writes that still succeed after failWrites is set. */
  writesBeforeFailure = 0
  /** Error code thrown by fdatasync of matching files. */
  failSyncs: string | undefined
  /** When set, every fdatasync of a file waits for a gate pushed to `heldSyncs`. */
  holdSyncs = false
  readonly heldSyncs: Gate[] = []
  /** Error code thrown by opens of matching files (e.g. 'EMFILE'). */
  failOpens: string | undefined
  /** Only files whose path matches get faults (undefined: every file); may change at any time. */
  paths: RegExp | undefined
  /** The path of each open descriptor. */
  private readonly open = new Map<number, string>()

  constructor(options: FaultFileOpsOptions = {}) {
    this.paths = options.paths
    this.failWrites = options.failWrites
  }

  openSync = (path: string, mode: OpenMode): number => {
    if (this.failOpens !== undefined && this.matches(path)) throw errno(this.failOpens, `open '${path}'`)
    const fd = nodeFileOps.openSync(path, mode)
    this.opened.set(path, (this.opened.get(path) ?? 0) + 1)
    this.open.set(fd, path)
    return fd
  }

  closeSync = (fd: number): void => {
    this.open.delete(fd)
    nodeFileOps.closeSync(fd)
  }

  writevSync = (fd: number, buffers: readonly Buffer[], position: number): number => {
    if (this.failWrites === undefined || !this.matches(this.open.get(fd))) return nodeFileOps.writevSync(fd, buffers, position)
    if (this.writesBeforeFailure > 0) {
      this.writesBeforeFailure -= 1
      return nodeFileOps.writevSync(fd, buffers, position)
    }
    this.refusedWrites += 1
    if (this.partialWriteBytes > 0) {
      nodeFileOps.writevSync(fd, [Buffer.concat(buffers).subarray(0, this.partialWriteBytes)], position)
    }
    throw errno(this.failWrites, 'write')
  }

  ftruncateSync = (fd: number, length: number): void => nodeFileOps.ftruncateSync(fd, length)

  read = (fd: number, buffer: Buffer, offset: number, length: number, position: number): Promise<number> =>
    nodeFileOps.read(fd, buffer, offset, length, position)

  fdatasync = async (fd: number): Promise<void> => {
    // Directory syncs (new partitions and segments) are not what the tests count or fail.
    if (fstatSync(fd).isDirectory()) return nodeFileOps.fdatasync(fd)
    this.syncCalls += 1
    if (this.holdSyncs) {
      const held = gate()
      this.heldSyncs.push(held)
      await held.promise
    }
    if (this.failSyncs !== undefined && this.matches(this.open.get(fd))) throw errno(this.failSyncs, 'fdatasync')
    await nodeFileOps.fdatasync(fd)
    this.syncsCompleted += 1
  }

  private matches(path: string | undefined): boolean {
    return this.paths === undefined || (path !== undefined && this.paths.test(path))
  }
}

function errno(code: string, what: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected failure, ${what}`), {code})
}
