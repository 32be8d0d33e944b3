/**
 * The store of every partition log on this broker.
 *
 * Layout: `<dataPath>/<topic>-<partition>/` per partition (layout.ts); a topic's dataPath may
 * override the default root, and `extraDataPaths` lists such roots so `open` finds them.
 *
 * One end-of-turn writer for all partitions: the first append of a turn queues its log and
 * schedules one `setImmediate`; it writes every queued log's batch (one gather write each),
 * then tells `onAppend` listeners. One periodic flush timer per distinct `unflushIntervalMs`
 * (unref'ed) fdatasyncs threshold-mode logs with unflushed messages. Shared budgets: at most
 * `maxOpenFiles` descriptors (fd-cache.ts) and `tailCacheBytes` of cached tail (tail-cache.ts).
 *
 * Damage stays local: a partition whose directory cannot be opened as one log (recovery.ts:
 * a stray `.meta` name, segments that are not contiguous, an I/O error) is quarantined — not
 * served, not written, reported by `quarantined()` and at error level — and every other
 * partition opens. After open, a background scrub checks sealed segments (scrub.ts).
 */
import {mkdirSync, renameSync, type Dirent} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {dirname, join, resolve} from 'node:path'
import {silentLogger, type Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import {forEachLimited} from './each-limited.js'
import {quarantineError, repairCommand, type QuarantinedPartition} from './quarantine.js'
import type {StorageDamageStats} from '../protocol/stats-body.js'
import type {StoreContext} from './context.js'
import {cutSegmentFiles} from './cut.js'
import {DamageBook} from './damage.js'
import {DirSync} from './dir-sync.js'
import {FdCache} from './fd-cache.js'
import {nodeFileOps, type FileOps} from './file-ops.js'
import {ioError} from './io-error.js'
import {Limiter} from './limiter.js'
import {parsePartitionDirName, partitionDirName, RECOVERY_CONCURRENCY, RESYNC_MAX_RECORD_BYTES, SCRUB_BYTES_PER_SECOND} from './layout.js'
import {PartitionLog} from './partition-log.js'
import {recoverPartition} from './recovery.js'
import {Scrubber} from './scrub.js'
import {Segment} from './segment.js'
import {createSegmentFile} from './segment-io.js'
import {TailCache} from './tail-cache.js'
import type {TopicStorageConfig} from './types.js'

/** Default {@link MessageStoreOptions.maxOpenFiles}. */
export const DEFAULT_MAX_OPEN_FILES = 1024
/** Default {@link MessageStoreOptions.tailCacheBytes}: 64 MiB. */
export const DEFAULT_TAIL_CACHE_BYTES = 64 * 1024 * 1024
/**
 * fdatasync jobs in flight across the store. libuv has 4 threadpool threads by default and
 * reads need them too; ext4 commits concurrent fdatasyncs in one journal transaction anyway.
 */
const MAX_CONCURRENT_SYNCS = 3

export interface MessageStoreOptions {
  /** Default root directory for partitions. */
  dataPath: string
  /**
   * Resolves a topic's storage config (flush policy, dataPath, segment size); called when a
   * partition is opened or created, and again by {@link MessageStore.reloadConfig}.
   */
  topicConfig(topic: string): TopicStorageConfig
  /** Other roots to scan at open (per-topic dataPath overrides). */
  extraDataPaths?: string[]
  /** Upper bound on file descriptors the store keeps open (default 1024). */
  maxOpenFiles?: number
  /** Global budget of in-memory tail cache bytes (default 64 MiB), plus at most 1/16 of it in recycled spare blocks. */
  tailCacheBytes?: number
  logger?: Logger
  /** Fault-injection seam for tests (ENOSPC, EIO); defaults to node:fs. */
  fileOps?: FileOps
  /**
   * Longest record (header included) the store expects, e.g. the broker's maxTransferSize;
   * resynchronising after damage considers records up to max(this, 4 MiB).
   */
  maxRecordBytes?: number
  /**
   * The background scrub of sealed segments after open (scrub.ts): its read rate (default
   * 64 MiB/s), or false for none (reads of unchecked segments still check what they return).
   */
  scrub?: false | {bytesPerSecond?: number}
}

/** A partition that is not served because its directory is damaged (see the top of this file). */
/** What {@link MessageStore.cutTail} cut. */
export interface CutResult {
  topic: string
  partition: number
  /** The new end of the log (the first byte cut). */
  from: number
  /** The old end. */
  to: number
  /** Whole messages cut. */
  messages: number
  bytes: number
  /** The file keeping the cut bytes; undefined when nothing was cut. */
  file: string | undefined
}

/** Damage facts of the whole store: the stats lines' type (protocol/stats-body.ts), declared once. */
export type StoreHealth = StorageDamageStats

interface FlushTimer {
  timer: NodeJS.Timeout
  logs: Set<PartitionLog>
}

/**
 * Every partition log of a broker, with the shared writer, flush timers and budgets. Create
 * with {@link MessageStore.open}; finish with {@link MessageStore.close}.
 */
export class MessageStore {
  private readonly options: MessageStoreOptions
  private readonly ctx: StoreContext
  private readonly logs = new Map<string, PartitionLog>()
  private readonly listeners: Array<(log: PartitionLog) => void> = []
  private readonly rollListeners: Array<(log: PartitionLog) => void> = []
  private readonly timers = new Map<number, FlushTimer>()
  private readonly quarantine = new Map<string, QuarantinedPartition>()
  private scrubber: Scrubber | undefined
  private queued: PartitionLog[] = []
  private writeScheduled = false
  private writeWaiters: Array<() => void> = []
  private closing: Promise<void> | undefined

  private constructor(options: MessageStoreOptions) {
    this.options = options
    const ops = options.fileOps ?? nodeFileOps
    const log = (options.logger ?? silentLogger).child('storage')
    const fds = new FdCache(ops, options.maxOpenFiles ?? DEFAULT_MAX_OPEN_FILES, log)
    const syncLimiter = new Limiter(MAX_CONCURRENT_SYNCS)
    this.ctx = {
      ops,
      log,
      fds,
      tailCache: new TailCache(options.tailCacheBytes ?? DEFAULT_TAIL_CACHE_BYTES),
      syncLimiter,
      dirSync: new DirSync(ops, fds, syncLimiter),
      damage: new DamageBook(),
      maxRecordBytes: Math.max(RESYNC_MAX_RECORD_BYTES, options.maxRecordBytes ?? 0),
      // Only PartitionLogs call these (StoreContext names the part of one it needs: StoreLog).
      queueWrite: (partitionLog: PartitionLog) => this.queueWrite(partitionLog),
      nextWrite: () => this.nextWrite(),
      rolled: (partitionLog: PartitionLog) => {
        for (const listener of this.rollListeners) {
          try {
            listener(partitionLog)
          } catch (error) {
            this.ctx.log.error('roll listener threw', {topic: partitionLog.topic, partition: partitionLog.partition, error: String(error)})
          }
        }
      },
    }
  }

  /**
   * Open the store: scan `dataPath` and `extraDataPaths` for `<topic>-<partition>`
   * directories (others are ignored) and recover each (recovery.ts), a bounded number at a
   * time; quarantine those that cannot be recovered; start the scrub. Rejects with
   * STORAGE_ERROR only when a data path itself cannot be listed.
   */
  static async open(options: MessageStoreOptions): Promise<MessageStore> {
    const store = new MessageStore(options)
    try {
      await store.recoverAll()
    } catch (error) {
      store.stopTimers()
      await store.ctx.fds.closeAll()
      throw error
    }
    if (options.scrub !== false) {
      const rate = options.scrub?.bytesPerSecond ?? SCRUB_BYTES_PER_SECOND
      store.scrubber = new Scrubber(() => store.list(), rate, store.ctx.log.child('scrub'))
    }
    return store
  }

  /** Partitions not served because their directory is damaged, sorted. */
  quarantined(): QuarantinedPartition[] {
    return [...this.quarantine.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  }

  /** Why (topic, partition) is quarantined, or undefined when it is not. */
  quarantineOf(topic: string, partition: number): QuarantinedPartition | undefined {
    return this.quarantine.size === 0 ? undefined : this.quarantine.get(partitionDirName(topic, partition))
  }

  /** Damage facts for stats. */
  health(): StoreHealth {
    let damagedRanges = 0
    let damagedBytes = 0
    let unverifiedSegments = 0
    for (const log of this.logs.values()) {
      const info = log.info()
      damagedRanges += info.damagedRanges
      damagedBytes += info.damagedBytes
      unverifiedSegments += log.unverifiedSegments().length
    }
    return {
      quarantinedPartitions: this.quarantine.size,
      damagedRanges,
      damagedBytes,
      crcFailures: this.ctx.damage.found,
      unverifiedSegments,
      scrubbedBytes: this.scrubber?.scrubbedBytes ?? 0,
    }
  }

  /** Resolves when the scrub started at open has finished (at once without one). */
  async scrubbed(): Promise<void> {
    await this.scrubber?.done
  }

  /** Partitions served (quarantined ones are not). */
  get partitionCount(): number {
    return this.logs.size
  }

  /** Files the store holds open now: at most its maxOpenFiles (briefly one more during a write). */
  get openFileCount(): number {
    return this.ctx.fds.openCount
  }

  /** The log of (topic, partition), or undefined when it does not exist. */
  get(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(partitionDirName(topic, partition))
  }

  /**
   * The log of (topic, partition), creating its directory and first segment
   * `<20-digit startOffset>.meta` (default 0) when it does not exist. Throws
   * INVALID_ARGUMENT for a bad name or offset, STORAGE_ERROR when the files cannot be made.
   */
  getOrCreate(topic: string, partition: number, startOffset = 0): PartitionLog {
    const existing = this.get(topic, partition)
    if (existing !== undefined) return existing
    this.checkOpen()
    const quarantined = this.quarantineOf(topic, partition)
    if (quarantined !== undefined) throw quarantineError(quarantined)
    checkName(topic, partition, startOffset)
    const config = this.options.topicConfig(topic)
    const dir = join(config.dataPath, partitionDirName(topic, partition))
    try {
      mkdirSync(dir, {recursive: true})
    } catch (error) {
      throw ioError(error, 'create', dir)
    }
    const first = new Segment(startOffset, dir, 0)
    createSegmentFile(this.ctx.fds, first, true)
    const init = {topic, partition, dir, config, segments: [first], lastModifiedMs: Date.now()}
    return this.add(new PartitionLog({...init, newDirs: [dir, config.dataPath]}, this.ctx))
  }

  /**
   * Take (topic, partition) out of the store: its log is closed, its files released and its
   * directory renamed to `toDir` (which must not exist; its parent is created). A replica does this
   * when its log can no longer continue its master's (docs/protocol.md#asynchronous-replication).
   * Returns false when the store has no such log.
   */
  async setAside(topic: string, partition: number, toDir: string): Promise<boolean> {
    const log = this.get(topic, partition)
    if (log === undefined) return false
    this.logs.delete(partitionDirName(topic, partition))
    this.unwatch(log)
    await log.closeAndRelease()
    try {
      mkdirSync(dirname(toDir), {recursive: true})
      renameSync(log.dir, toDir)
    } catch (error) {
      throw ioError(error, 'rename', log.dir)
    }
    return true
  }

  /**
   * Cut (topic, partition)'s log back to `offset`, a record boundary: a replica whose log holds
   * a tail its master does not (a former master's messages its slave never took). The bytes
   * [offset, end) are kept in `<20-digit offset>.meta.cut-<epoch ms>` beside the segments
   * (layout.ts), later segments and side index entries are dropped, and the partition is
   * opened again (its old PartitionLog is closed: take the new one from {@link get}). The
   * caller makes sure nothing appends to the partition meanwhile. Throws INVALID_ARGUMENT when
   * there is no such log or `offset` is not a record boundary of it.
   */
  async cutTail(topic: string, partition: number, offset: number): Promise<CutResult> {
    const log = this.get(topic, partition)
    if (log === undefined) throw MetaError.invalidArgument(`cannot cut partition "${topic}-${partition}": it does not exist`)
    await log.flush()
    const end = log.maxOffset
    const what = `cannot cut "${topic}-${partition}" at offset "${offset}"`
    if (!Number.isSafeInteger(offset) || offset < log.minOffset || offset > end) {
      throw MetaError.invalidArgument(`${what}: expected a record boundary in [${log.minOffset}, ${end}]`)
    }
    if (offset === end) return {topic, partition, from: offset, to: end, messages: 0, bytes: 0, file: undefined}
    if ((await log.shiftOffset(offset, 0)) !== offset) throw MetaError.invalidArgument(`${what}: it is not a record boundary`)
    const messages = await log.countBetween(offset, end)
    const segments = await log.segmentInfos()
    const key = partitionDirName(topic, partition)
    this.logs.delete(key)
    this.unwatch(log)
    await log.closeAndRelease()
    const file = cutSegmentFiles(log.dir, segments, offset, end, Date.now())
    const recovered = await recoverPartition(this.ctx, {dir: log.dir, topic, partition})
    this.add(new PartitionLog({...recovered, topic, partition, dir: log.dir, config: this.options.topicConfig(topic)}, this.ctx))
    this.ctx.log.info('cut the tail off a log', {topic, partition, from: offset, to: end, bytes: end - offset, messages, keptIn: file})
    return {topic, partition, from: offset, to: end, messages, bytes: end - offset, file}
  }

  /** Every log, sorted by topic then partition. */
  list(): PartitionLog[] {
    return [...this.logs.values()].sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  }

  /** Every topic with at least one partition, sorted. */
  topics(): string[] {
    return [...new Set([...this.logs.values()].map((log) => log.topic))].sort()
  }

  /**
   * Call `listener` once per partition per written batch, after its bytes became readable
   * (long-poll wake-ups). Listener errors are logged, never thrown into the writer.
   */
  onAppend(listener: (log: PartitionLog) => void): void {
    this.listeners.push(listener)
  }

  /**
   * Call `listener` when a log starts a new segment (inside the end-of-turn write: the
   * listener must only note it and do its work later). Errors are logged.
   */
  onRoll(listener: (log: PartitionLog) => void): void {
    this.rollListeners.push(listener)
  }

  /** Re-resolve every topic's config (flush policy, segment size) after a config reload. */
  reloadConfig(): void {
    for (const log of this.logs.values()) {
      this.unwatch(log)
      log.updateConfig(this.options.topicConfig(log.topic))
      this.watch(log)
    }
  }

  /** Write what is pending and fdatasync everything unflushed. */
  async flushAll(): Promise<void> {
    await Promise.all([...this.logs.values()].map((log) => log.flush()))
  }

  /**
   * Write pending batches, fdatasync, and close every file; idempotent. Appends and reads
   * after close fail with STORAGE_ERROR.
   */
  close(): Promise<void> {
    this.closing ??= this.closeAll()
    return this.closing
  }

  private async closeAll(): Promise<void> {
    await this.scrubber?.stop()
    this.writeQueued()
    this.stopTimers()
    await Promise.all([...this.logs.values()].map((log) => log.close()))
    await this.ctx.fds.closeAll()
  }

  private stopTimers(): void {
    for (const {timer} of this.timers.values()) clearInterval(timer)
    this.timers.clear()
  }

  private checkOpen(): void {
    if (this.closing !== undefined) throw new MetaError('STORAGE_ERROR', 'message store is closed')
  }

  private add(log: PartitionLog): PartitionLog {
    this.logs.set(partitionDirName(log.topic, log.partition), log)
    this.watch(log)
    return log
  }

  /** Register a threshold-mode log with the periodic flush timer of its interval. */
  private watch(log: PartitionLog): void {
    const {unflushThreshold, unflushIntervalMs} = log.storageConfig
    if (unflushThreshold <= 0 || !(unflushIntervalMs > 0)) return
    let entry = this.timers.get(unflushIntervalMs)
    if (entry === undefined) {
      const logs = new Set<PartitionLog>()
      const timer = setInterval(() => {
        for (const each of logs) each.flushIfDirty()
      }, unflushIntervalMs)
      timer.unref()
      entry = {timer, logs}
      this.timers.set(unflushIntervalMs, entry)
    }
    entry.logs.add(log)
  }

  private unwatch(log: PartitionLog): void {
    for (const [intervalMs, entry] of this.timers) {
      if (!entry.logs.delete(log) || entry.logs.size > 0) continue
      clearInterval(entry.timer)
      this.timers.delete(intervalMs)
    }
  }

  private queueWrite(log: PartitionLog): void {
    this.queued.push(log)
    this.scheduleWrite()
  }

  private nextWrite(): Promise<void> {
    return new Promise((resolve) => {
      this.writeWaiters.push(resolve)
      this.scheduleWrite()
    })
  }

  private scheduleWrite(): void {
    if (this.writeScheduled) return
    this.writeScheduled = true
    setImmediate(() => this.writeQueued())
  }

  /** The end-of-turn write: one batch per queued log, then listeners and waiters. */
  private writeQueued(): void {
    this.writeScheduled = false
    const queued = this.queued
    const waiters = this.writeWaiters
    this.queued = []
    this.writeWaiters = []
    for (const log of queued) {
      if (log.writePending()) this.notify(log)
    }
    this.ctx.tailCache.trim()
    for (const resolve of waiters) resolve()
  }

  private notify(log: PartitionLog): void {
    for (const listener of this.listeners) {
      try {
        listener(log)
      } catch (error) {
        this.ctx.log.error('append listener threw', {topic: log.topic, partition: log.partition, error: String(error)})
      }
    }
  }

  private async recoverAll(): Promise<void> {
    const {dirs, twice} = await this.findPartitionDirs()
    for (const found of twice) this.quarantinePartition(found, new MetaError('STORAGE_CORRUPT', found.reason))
    await forEachLimited(dirs, RECOVERY_CONCURRENCY, async (found) => {
      const {dir, topic, partition} = found
      const config = this.options.topicConfig(topic)
      let recovered
      try {
        recovered = await recoverPartition(this.ctx, {dir, topic, partition})
      } catch (error) {
        if (!(error instanceof MetaError) || (error.code !== 'STORAGE_CORRUPT' && error.code !== 'STORAGE_ERROR')) throw error
        this.quarantinePartition({...found, dirs: [dir]}, error)
        return
      }
      this.add(new PartitionLog({...recovered, topic, partition, dir, config}, this.ctx))
    })
    if (dirs.length > 0) this.ctx.log.info('recovered partitions', {count: this.logs.size, quarantined: this.quarantine.size})
  }

  private quarantinePartition(found: {topic: string; partition: number; dirs: string[]; root: string}, error: MetaError): void {
    const entry: QuarantinedPartition = {
      topic: found.topic,
      partition: found.partition,
      dirs: found.dirs,
      dataPath: found.root,
      reason: error.message,
      code: error.code,
    }
    this.quarantine.set(partitionDirName(found.topic, found.partition), entry)
    this.ctx.log.error('partition quarantined: not served until repaired', {
      topic: entry.topic,
      partition: entry.partition,
      dirs: entry.dirs,
      reason: entry.reason,
      repair: repairCommand(entry),
    })
  }

  /**
   * Partition directories under every root. The same partition in two roots is ambiguous:
   * it is returned in `twice` (to be quarantined), not in `dirs`.
   */
  private async findPartitionDirs(): Promise<{
    dirs: Array<{dir: string; root: string; topic: string; partition: number}>
    twice: Array<{dirs: string[]; root: string; topic: string; partition: number; reason: string}>
  }> {
    const roots = [...new Set([this.options.dataPath, ...(this.options.extraDataPaths ?? [])].map((r) => resolve(r)))]
    const found = new Map<string, Array<{dir: string; root: string; topic: string; partition: number}>>()
    for (const root of roots) {
      for (const entry of await listDirectories(root)) {
        const parsed = parsePartitionDirName(entry.name)
        if (parsed === undefined) continue
        const key = partitionDirName(parsed.topic, parsed.partition)
        found.set(key, [...(found.get(key) ?? []), {dir: join(root, entry.name), root, ...parsed}])
      }
    }
    const dirs = [...found.values()].filter((list) => list.length === 1).map((list) => list[0])
    const twice = [...found.entries()]
      .filter(([, list]) => list.length > 1)
      .map(([key, list]) => ({
        ...list[0],
        dirs: list.map((f) => f.dir),
        reason: `partition "${key}" exists twice: ${list.map((f) => `"${f.dir}"`).join(' and ')}`,
      }))
    return {dirs, twice}
  }
}

/** Subdirectories of `root`; none when it does not exist yet. */
async function listDirectories(root: string): Promise<Dirent[]> {
  try {
    return (await readdir(root, {withFileTypes: true})).filter((entry) => entry.isDirectory())
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw ioError(error, 'list', root)
  }
}

/** Names become directory names: refuse what would escape or confuse the layout. */
function checkName(topic: string, partition: number, startOffset: number): void {
  if (topic === '' || topic === '.' || topic === '..' || /[/\\\0]/.test(topic)) {
    throw MetaError.invalidArgument(`invalid topic "${topic}": expected a non-empty name without "/", "\\" or NUL`)
  }
  if (!Number.isSafeInteger(partition) || partition < 0) {
    throw MetaError.invalidArgument(`invalid partition "${partition}" for topic "${topic}": expected an integer >= 0`)
  }
  if (!Number.isSafeInteger(startOffset) || startOffset < 0) {
    throw MetaError.invalidArgument(`invalid start offset "${startOffset}": expected an integer >= 0`)
  }
}
