/**
 * `meta send --follow FILE…`: the input that follows files line by line (followed-file.ts) and
 * never ends on its own; stop() ends it (Ctrl-C, SIGTERM, -c, a fatal send error).
 *
 * Polling, not fs.watch: every pass reads what each file gained; when no file gained anything
 * the loop sleeps one interval (--follow-interval, default 250 ms) before the next pass, in
 * which each path is stat()ed for a rotation and each glob is expanded again (files that
 * appear later are followed from their start). fs.watch misses renames on some file systems
 * and across rotations; a stat per file per interval costs next to nothing. While a file keeps
 * growing there is no sleep between passes.
 *
 * At the start, files rotated while `meta send` was stopped are found (adoptRotated): a
 * registry entry whose path a pattern names but which no longer holds its inode is looked up
 * by inode in the entry's directory and read to its end first (FollowedFile.adopt); an entry
 * whose file is gone is dropped, said on stderr.
 */
import {MetaError} from '../../protocol/errors.js'
import type {InputHandler, RecordInput} from '../send-input.js'
import type {RecordSplitter} from '../splitter.js'
import {stat} from 'node:fs/promises'
import {dirname} from 'node:path'
import {FollowedFile, type FollowContext} from './followed-file.js'
import {expandGlob, isGlob, patternNames} from './glob.js'
import {findByInode} from './identity.js'
import {Registry} from './registry.js'

/** Default, smallest and largest --follow-interval (ms). */
export const FOLLOW_INTERVAL_DEFAULT_MS = 250
export const FOLLOW_INTERVAL_FLOOR_MS = 10
export const FOLLOW_INTERVAL_CEILING_MS = 60_000
/** A renamed file is read until it grew no more for this long (ms), at least two intervals. */
const ROTATE_IDLE_MS = 1000

export interface FollowOptions {
  /** Paths and glob patterns. */
  patterns: string[]
  registryPath: string
  /** Files the registry never saw start at their beginning (default: at their end, as tail -F). */
  fromBeginning: boolean
  intervalMs: number
}

interface FollowInputOptions extends FollowOptions {
  delimiter: Buffer
  maxRecordBytes: number
  report: (line: string) => void
}

export class FollowInput implements RecordInput {
  private readonly registry: Registry
  private readonly files = new Map<string, FollowedFile>()
  private readonly context: FollowContext
  private stopping = false
  private wake: (() => void) | undefined
  private paused: {splitter: RecordSplitter; resolve: () => void} | undefined
  /** Globs that matched nothing, said once each. */
  private readonly emptyGlobsReported = new Set<string>()

  /** Opens (and locks) the registry: throws INVALID_ARGUMENT, DATA_DIR_LOCKED. */
  constructor(
    private readonly options: FollowInputOptions,
    private readonly handler: InputHandler,
  ) {
    if (options.patterns.includes('-')) throw MetaError.invalidArgument("'-' (stdin) cannot be followed: expected files with --follow")
    this.registry = Registry.open(options.registryPath)
    this.context = {
      registry: this.registry,
      handler: {record: handler.record, stopped: () => this.stopped()},
      delimiter: options.delimiter,
      maxRecordBytes: options.maxRecordBytes,
      fromBeginning: options.fromBeginning,
      rotateIdleMs: Math.max(ROTATE_IDLE_MS, 2 * options.intervalMs),
      finished: new Map(),
      held: new Set(),
      whenResumed: (splitter) => this.whenResumed(splitter),
      report: options.report,
    }
  }

  /** Follow until stop(). */
  async readAll(): Promise<void> {
    let first = true
    while (!this.stopped()) {
      const named = await this.scan(first)
      if (first) await this.adoptRotated(named)
      first = false
      let progressed = false
      for (const file of this.files.values()) {
        if (this.stopped()) break
        if (await file.poll()) progressed = true
      }
      if (!progressed) await this.sleep(this.options.intervalMs)
    }
  }

  resume(): void {
    const paused = this.paused
    if (paused === undefined || !paused.splitter.resume()) return
    this.paused = undefined
    paused.resolve()
  }

  stop(): void {
    this.stopping = true
    this.wake?.()
    const paused = this.paused
    this.paused = undefined
    paused?.resolve()
  }

  /** After the last acknowledgement: close the files, save the registry (throws STORAGE_ERROR). */
  async settle(): Promise<void> {
    this.stop()
    for (const file of this.files.values()) await file.close()
    await this.registry.close()
  }

  private stopped(): boolean {
    return this.stopping || this.handler.stopped()
  }

  /** Follow every literal path, and what each glob matches now; returns those paths. */
  private async scan(first: boolean): Promise<Set<string>> {
    const named = new Set<string>()
    for (const pattern of this.options.patterns) {
      const paths = isGlob(pattern) ? await expandGlob(pattern) : [pattern]
      if (paths.length === 0 && !this.emptyGlobsReported.has(pattern)) {
        this.emptyGlobsReported.add(pattern)
        this.options.report(`% no file matches "${pattern}" yet: following the files that appear`)
      }
      for (const path of paths) named.add(path)
    }
    for (const path of named) if (!this.files.has(path)) this.files.set(path, new FollowedFile(path, this.context, first))
    for (const [path, file] of this.files) if (!named.has(path) && file.idle) this.files.delete(path)
    return named
  }

  /**
   * Registered files renamed while `meta send` was stopped (their path, which a pattern names,
   * now holds another inode or none): found by inode in the same directory and read to their
   * end before the file now at the path; gone ones are dropped from the registry, said once.
   */
  private async adoptRotated(named: Set<string>): Promise<void> {
    const atNamed = new Set<string>()
    for (const path of named) {
      const id = await statId(path)
      if (id !== undefined) atNamed.add(id)
    }
    for (const entry of this.registry.entries()) {
      if (atNamed.has(`${entry.dev}:${entry.ino}`) || !this.options.patterns.some((p) => patternNames(p, entry.path))) continue
      const renamedTo = await findByInode(dirname(entry.path), entry.dev, entry.ino)
      if (renamedTo === entry.path) continue
      if (renamedTo !== undefined) {
        let file = this.files.get(entry.path)
        if (file === undefined) this.files.set(entry.path, (file = new FollowedFile(entry.path, this.context, true, true)))
        if (await file.adopt(renamedTo, entry)) continue
      }
      this.registry.delete(entry.path, entry.dev, entry.ino)
      this.options.report(
        `% "${entry.path}" (inode ${entry.ino}) is gone: what was written to it after byte ${entry.offset} before meta send started cannot be read`,
      )
    }
  }

  private whenResumed(splitter: RecordSplitter): Promise<void> {
    if (this.stopped()) return Promise.resolve()
    return new Promise((resolve) => (this.paused = {splitter, resolve}))
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped()) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.wake = () => {
        this.wake = undefined
        done()
      }
    })
  }
}

/** `dev:ino` of the file at `path`, or undefined when there is none. */
async function statId(path: string): Promise<string | undefined> {
  try {
    const info = await stat(path, {bigint: true})
    return `${info.dev}:${info.ino}`
  } catch {
    return undefined
  }
}
