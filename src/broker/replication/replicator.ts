/**
 * The asynchronous slave (MetaQ's "metaslave", docs/protocol.md#asynchronous-replication;
 * README.md#asynchronous-slaves-metaqs-metaslave): a broker that copies every partition of its
 * master, byte for byte.
 *
 * - Discovery: every `discoverIntervalMs` it asks the master `stats partitions` and starts a
 *   follower for each partition it does not follow yet (topics the master has data for).
 * - Each follower long-polls the master with `replicate` (docs/protocol.md) from its own end
 *   and appends what comes back with the master's ids, flags, checksums and payloads
 *   unchanged, at the master's byte offsets: a new segment starts exactly where the reply
 *   says the master's does (never because of this broker's maxSegmentSize), so segment files
 *   have the same names and bytes.
 * - Start: from the local end when the partition exists; a new partition starts at the
 *   master's first offset. When the master's first offset has moved past the local end
 *   (retention), the local log is set aside under `<dataPath>/__meta_state/replica-aside/` and
 *   replication restarts at the master's first offset: a slave's log has no gaps.
 * - Before the first fetch of a partition with a local log, and again after it follows a
 *   different master (a failover), the slave finds where its log parts from the master's
 *   (fork-point.ts: the longest common prefix); a divergent tail (a former master started as
 *   slave of the broker that replaced it) is cut off there, the cut bytes kept in
 *   `<20-digit offset>.meta.cut-<ms>` beside the segments, and replication goes on from the
 *   cut. When the logs part below the master's first offset (retention), the log is set
 *   aside as above instead.
 * - A master whose log falls behind the slave's later (it lost data) stops that partition:
 *   `slave-status` says why.
 * - autoSyncMasterConfig: the master's server.ini and topic overlay are applied together when
 *   either changed (syncConfig); a topic gone from the overlay (deleted online on the master)
 *   is dropped here once the master has no partition of it left (dropTopic).
 * - Errors (master down, refused requests) back off up to `maxDelayMs`
 *   (slaveMaxDelayInMills) and retry for ever.
 *
 * The broker module may not use the client, so the connection to the master comes from
 * whoever starts the broker (`meta serve` passes meta's BrokerConnection): {@link MasterLink}.
 */
import assert from 'node:assert'
import {join} from 'node:path'
import type {Logger} from '../../log.js'
import type {OutputBuffer} from '../../protocol/output-buffer.js'
import type {ResponseFrame} from '../../protocol/frames.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {scanRecords} from '../../protocol/message-set.js'
import {encodeStats} from '../../protocol/commands/stats.js'
import {encodeCount} from '../../protocol/commands/seek.js'
import {parsePartitionsStats, parseSystemStats} from '../../protocol/stats-body.js'
import {encodeReplicate, readReplicaBody, type ReplicaPartitionStatus, type SlaveStatusReport} from '../../protocol/commands/replication.js'
import type {MessageStore, PartitionLog} from '../../storage/index.js'
import {STATE_DIR_NAME} from '../../storage/layout.js'
import {parseTopicOverlay, TOPIC_OVERLAY_ITEM, type TopicOverlay} from '../topic-overlay.js'
import {cutDivergentTail, masterBytesOver} from './fork-point.js'

/** What the slave needs of a connection to its master (meta's client BrokerConnection is one). */
export interface MasterLink {
  readonly capabilities: {meta: boolean; replicate?: boolean; topicAdmin?: boolean}
  readonly isOpen: boolean
  ready(): Promise<void>
  requestAsync(write: (out: OutputBuffer, opaque: number) => void, timeoutMs?: number): Promise<ResponseFrame>
  close(): void
}

export interface SlaveOptions {
  /** slaveId (>= 0). */
  slaveId: number
  /** slaveGroup (MetaQ: the group its internal consumer uses; reported by slave-status). */
  slaveGroup: string
  /** slaveMaxDelayInMills: longest back-off after an error, and the discovery period. */
  maxDelayMs: number
  /**
   * The master, `host:port` (standalone: --slave-of). Undefined in ZooKeeper mode, where the
   * broker sets it with {@link Replicator.setMaster} from `ids/<brokerId>/master`.
   */
  master?: {host: string; port: number}
  /** Open a connection to the master (it reconnects by itself). */
  connect(address: {host: string; port: number}): MasterLink
  /**
   * autoSyncMasterConfig: apply the master's server.ini (its topic sections and the [system]
   * keys topics inherit) whenever its config checksum changes (default true).
   */
  autoSyncMasterConfig?: boolean
}

interface ReplicatorContext {
  store: MessageStore
  dataPath: string
  brokerId: number
  log: Logger
  /**
   * Apply the master's server.ini text (the broker's reload); with `overlay`, the master's topic
   * overlay replaces this broker's in the same step.
   */
  applyMasterConfig(text: Buffer, overlay?: TopicOverlay): Promise<unknown>
  /** The topic overlay in force here (a copy). */
  topicOverlay(): TopicOverlay
  /** Remove a deleted topic's data, as topic delete does on the master. */
  removeTopicData(topic: string): Promise<void>
}

/** How long one `replicate` may wait at the master's end. */
const LONG_POLL_MS = 5_000
/** Bytes asked per fetch (grows when one record is larger). */
const FETCH_BYTES = 1024 * 1024
const FETCH_BYTES_MAX = 64 * 1024 * 1024
const ERROR_DELAY_MIN_MS = 50

class Follower {
  next = -1
  masterEnd = -1
  masterMin = -1
  lastFetchMs = 0
  state: ReplicaPartitionStatus['state'] = 'waiting'
  error: string | undefined
  private fetchBytes = FETCH_BYTES
  private delayMs = 0
  /** The local log's tail was compared with the master's (once, before the first fetch). */
  private tailChecked = false
  /** The master deleted the topic: this follower ends (discovery starts a new one if it comes back). */
  private dropped = false

  constructor(
    private readonly r: Replicator,
    readonly topic: string,
    readonly partition: number,
    /** The master's first offset, from discovery. */
    private readonly firstOffset: number,
  ) {}

  async run(): Promise<void> {
    while (this.r.running && this.state !== 'stopped' && !this.dropped) {
      try {
        await this.step()
        this.delayMs = 0
      } catch (error) {
        if (!this.r.running) return
        this.state = 'waiting'
        this.error = (error as Error).message
        this.delayMs = Math.min(this.r.options.maxDelayMs, Math.max(ERROR_DELAY_MIN_MS, this.delayMs * 2))
        this.r.log.debug('replication fetch failed; retrying', {topic: this.topic, partition: this.partition, error: this.error, delayMs: this.delayMs})
        await this.r.sleep(this.delayMs)
      }
    }
  }

  private local(): PartitionLog | undefined {
    return this.r.ctx.store.get(this.topic, this.partition)
  }

  private async step(): Promise<void> {
    let log = this.local()
    if (log !== undefined && !this.tailChecked) {
      const cut = await cutDivergentTail(
        this.r.ctx.store,
        this.topic,
        this.partition,
        masterBytesOver(() => this.r.masterLink(), this.topic, this.partition),
        this.r.log,
      )
      if (cut !== undefined && 'below' in cut) {
        this.masterMin = cut.below
        await this.setAside(log.maxOffset, "this slave's log parts from the master's below the master's first offset (retention removed where they agree)")
        this.next = cut.below
        log = undefined
      } else if (cut !== undefined) {
        this.r.forgetLog(this.topic, this.partition)
        this.next = -1
        log = this.local()
      }
      this.tailChecked = true
    }
    if (this.next < 0) this.next = log !== undefined ? log.maxOffset : this.firstOffset
    const offset = this.next
    const frame = await this.r
      .masterLink()
      .requestAsync(
        (out, opaque) =>
          encodeReplicate(out, {topic: this.topic, partition: this.partition, offset, maxSize: this.fetchBytes, maxWaitMs: LONG_POLL_MS, opaque}),
        LONG_POLL_MS + 10_000,
      )
    if (!this.r.running || this.dropped) return
    if (frame.type === 'result') return this.answered(frame.code, frame.body.toString('utf8'), offset)
    const reply = readReplicaBody(frame.body)
    if (reply === undefined) throw new MetaError('DECODE_ERROR', `the master's replicate answer is ${frame.body.length} bytes: shorter than its header`)
    const {header, data} = reply
    this.masterEnd = header.masterEnd
    this.masterMin = header.masterMin
    this.lastFetchMs = Date.now()
    let count = 0
    const {end, stop} = scanRecords(data, 0, () => (count += 1))
    if (stop === 'bad-checksum' || stop === 'bad-length') {
      throw new MetaError('CHECKSUM_MISMATCH', `the master sent a damaged record at offset ${offset + end} (${stop})`)
    }
    if (count === 0) {
      // One record larger than what was asked for: ask for more next time.
      if (data.length >= this.fetchBytes) this.fetchBytes = Math.min(FETCH_BYTES_MAX, this.fetchBytes * 2)
      return
    }
    if (log === undefined) {
      if (offset !== header.segmentStart) throw new MetaError('INTERNAL', `a new replica must start at a master segment start, not ${offset}`)
      log = this.r.ctx.store.getOrCreate(this.topic, this.partition, offset)
    }
    if (log.appendOffset !== offset) {
      // An append that failed after this fetch was sent rolled the log back: fetch again from
      // its end, so no record lands anywhere but at the master's offset.
      this.next = -1
      return
    }
    assert(end > 0 && end <= data.length, 'a replicated batch is a non-empty run of whole records of the answer')
    const records = end === data.length ? data : data.subarray(0, end)
    const at = log.appendReplica(records, count, header.segmentStart === offset, (err) => {
      if (err !== null) this.failed(err)
    })
    assert(at === offset, "replicated records land at the master's offset")
    this.next = offset + end
    this.state = 'replicating'
    this.error = undefined
  }

  /** A `result` answer to `replicate` at `offset`. */
  private async answered(code: number, body: string, offset: number): Promise<void> {
    this.lastFetchMs = Date.now()
    if (code === Status.NOT_FOUND) {
      // Nothing new within the wait (or no such partition on the master yet).
      if (this.local() !== undefined || offset === this.firstOffset) this.masterEnd = Math.max(this.masterEnd, offset)
      this.state = 'replicating'
      this.error = undefined
      return
    }
    if (code !== Status.MOVED) throw MetaError.fromWire(code, body)
    const moved = Number(body)
    const log = this.local()
    if (moved > offset) {
      // Retention on the master passed our end: set our log aside and restart at its start.
      this.masterMin = moved
      if (log !== undefined) await this.setAside(offset, "the master no longer has what follows this slave's log (retention)")
      this.next = moved
      return
    }
    // The master's log ends before ours: never cut a log; stop this partition.
    this.masterEnd = moved
    this.state = 'stopped'
    this.error = `this slave's log (end ${offset}) is ahead of the master's (end ${moved}): replication of this partition stopped; set the partition aside by hand to replicate it again`
    this.r.log.error('replication stopped', {topic: this.topic, partition: this.partition, error: this.error})
  }

  /** Move the whole local log to `<dataPath>/__meta_state/replica-aside/<topic>-<p>.<ms>`, saying why. */
  private async setAside(localEnd: number, why: string): Promise<void> {
    const aside = join(this.r.ctx.dataPath, STATE_DIR_NAME, 'replica-aside', `${this.topic}-${this.partition}.${Date.now()}`)
    this.r.log.warn(`${why}: setting the log aside and starting again at the master's first offset`, {
      topic: this.topic,
      partition: this.partition,
      localEnd,
      masterFirst: this.masterMin >= 0 ? this.masterMin : this.firstOffset,
      aside,
    })
    await this.r.ctx.store.setAside(this.topic, this.partition, aside)
    this.r.forgetLog(this.topic, this.partition)
  }

  /**
   * Another master (a failover): compare the tail again before the next fetch, from the local
   * end; a partition stopped because it was ahead of the old master runs again.
   */
  masterChanged(): void {
    this.tailChecked = false
    this.masterEnd = -1
    if (this.state === 'stopped') {
      this.state = 'waiting'
      this.error = undefined
      this.r.restart(this)
    }
  }

  /** The master deleted the topic: fetch no more (an answer in flight is dropped). */
  drop(): void {
    this.dropped = true
    this.state = 'stopped'
    this.error = 'the topic was deleted on the master'
  }

  /** The master's end as its stats said (between answers to long polls that wait). */
  noteMasterEnd(end: number): void {
    if (end > this.masterEnd) this.masterEnd = end
  }

  private failed(err: MetaError): void {
    this.r.log.error('appending replicated records failed; fetching again from the local end', {
      topic: this.topic,
      partition: this.partition,
      error: err.message,
    })
    this.next = -1
  }

  status(): ReplicaPartitionStatus {
    const slaveEnd = this.local()?.maxOffset ?? (this.next >= 0 ? this.next : 0)
    return {
      topic: this.topic,
      partition: this.partition,
      masterEnd: this.masterEnd,
      slaveEnd,
      lagBytes: this.masterEnd >= 0 ? Math.max(0, this.masterEnd - slaveEnd) : 0,
      lagMessages: -1,
      lastFetchMs: this.lastFetchMs,
      state: this.state,
      ...(this.error !== undefined ? {error: this.error} : {}),
    }
  }
}

export class Replicator {
  running = true
  private link: MasterLink | undefined
  private master: {host: string; port: number} | undefined
  /** The last master followed (kept while none is registered), to notice a new one. */
  private lastMaster: {host: string; port: number} | undefined
  /** Callbacks for each partition this slave starts to replicate (ZooKeeper registration). */
  private readonly followListeners: Array<(topic: string, partition: number) => void> = []
  readonly log: Logger
  private readonly followers = new Map<string, Follower>()
  private readonly sleepers = new Set<() => void>()
  private discovery: Promise<void> | undefined
  /** The master's config checksum last applied (autoSyncMasterConfig). */
  private masterChecksum: number | undefined
  /** The master's topic overlay last applied, as it sent it (autoSyncMasterConfig). */
  private masterOverlay: string | undefined
  /** Topics gone from the master's overlay (deleted online): their data here goes once the master has none. */
  private readonly deletedTopics = new Set<string>()
  private readonly runs: Array<Promise<void>> = []

  constructor(
    readonly options: SlaveOptions,
    readonly ctx: ReplicatorContext,
    /** Forget a log the broker's handlers remember (PartitionLogs). */
    readonly forgetLog: (topic: string, partition: number) => void,
  ) {
    this.log = ctx.log
    this.setMaster(options.master)
  }

  /** `host:port` of the master, or `none` while none is known (ZooKeeper mode, master down). */
  get masterAddress(): string {
    if (this.master === undefined) return 'none'
    const {host, port} = this.master
    return `${host.includes(':') ? `[${host}]` : host}:${port}`
  }

  /** Follow another master (or none): the old connection closes, fetches go to the new one. */
  setMaster(master: {host: string; port: number} | undefined): void {
    if (master?.host === this.master?.host && master?.port === this.master?.port && (this.link !== undefined) === (master !== undefined)) return
    const last = this.lastMaster
    const changed = last !== undefined && master !== undefined && (master.host !== last.host || master.port !== last.port)
    if (master !== undefined) this.lastMaster = master
    this.link?.close()
    this.master = master
    this.link = master !== undefined && this.running ? this.options.connect(master) : undefined
    if (changed) for (const follower of this.followers.values()) follower.masterChanged()
    if (master !== undefined) this.log.info('following the master', {master: this.masterAddress})
    else this.log.warn('no master registered: replication waits for one')
    for (const wake of [...this.sleepers]) wake()
  }

  /** The connection to the master; NOT_FOUND while there is none. */
  masterLink(): MasterLink {
    if (this.link === undefined) throw new MetaError('NOT_FOUND', 'no master to replicate from')
    return this.link
  }

  /** Subscribe to each partition this slave starts to replicate. */
  onFollow(listener: (topic: string, partition: number) => void): void {
    this.followListeners.push(listener)
  }

  start(): void {
    this.discovery = this.discover()
  }

  /** Resolve after `ms`, or at once when stopping. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        this.sleepers.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.sleepers.add(done)
    })
  }

  private async discover(): Promise<void> {
    let warned = false
    while (this.running) {
      try {
        const link = this.masterLink()
        await link.ready()
        if (!link.capabilities.replicate) {
          throw new MetaError(
            'UNSUPPORTED',
            `the master ${this.masterAddress} does not serve meta's replicate extension (a MetaQ broker, or an older meta): an asynchronous meta slave needs a meta master`,
          )
        }
        if (this.options.autoSyncMasterConfig !== false) await this.syncConfig()
        const body = await this.stats('partitions')
        const partitions = parsePartitionsStats(body.toString('utf8'))
        for (const topic of [...this.deletedTopics]) {
          if (!partitions.some((p) => p.topic === topic)) await this.dropTopic(topic)
        }
        for (const p of partitions) this.follow(p.topic, p.partition, p.minOffset).noteMasterEnd(p.maxOffset)
        warned = false
      } catch (error) {
        if (!this.running) return
        if (!warned) this.log.warn('cannot reach the master; retrying', {master: this.masterAddress, error: (error as Error).message})
        warned = true
      }
      await this.sleep(this.options.maxDelayMs)
    }
  }

  private async stats(item: string): Promise<Buffer> {
    const frame = await this.masterLink().requestAsync((out, opaque) => encodeStats(out, {item, opaque}))
    // The master's text says why (an access denied names the right this slave's login lacks).
    if (frame.type !== 'result' || frame.code !== Status.OK)
      throw new MetaError(
        'INTERNAL',
        `the master answered stats ${item} with ${frame.type === 'result' ? `${frame.code}: ${frame.body.toString('utf8')}` : frame.type}`,
      )
    return frame.body
  }

  /**
   * autoSyncMasterConfig: when the master's config checksum or its topic overlay (topics
   * created, changed or deleted online; asked of a master with topic admin) changed, apply its
   * server.ini with its overlay in one reload. A topic gone from the overlay was deleted on the
   * master: its data here goes as well (once the master has none, see discover).
   */
  private async syncConfig(): Promise<void> {
    const checksum = parseSystemStats((await this.stats('')).toString('utf8')).configChecksum
    const overlayText = this.masterLink().capabilities.topicAdmin === true ? (await this.stats(TOPIC_OVERLAY_ITEM)).toString('utf8') : undefined
    if (checksum === this.masterChecksum && overlayText === this.masterOverlay) return
    const text = await this.stats('config')
    try {
      const overlay =
        overlayText === undefined
          ? undefined
          : parseTopicOverlay(overlayText, (why) => new MetaError('DECODE_ERROR', `the master's ${TOPIC_OVERLAY_ITEM} answer is not a topic overlay (${why})`))
      const before = this.ctx.topicOverlay()
      if (overlay !== undefined) await this.dropDeletedFirst([...before.keys()].filter((topic) => !overlay.has(topic)))
      await this.ctx.applyMasterConfig(text, overlay)
      if (overlay !== undefined) {
        for (const topic of before.keys()) if (!overlay.has(topic)) this.deletedTopics.add(topic)
        for (const topic of overlay.keys()) this.deletedTopics.delete(topic)
      }
      this.log.info("applied the master's configuration", {
        master: this.masterAddress,
        checksum,
        onlineTopics: overlay === undefined ? undefined : [...overlay.keys()],
      })
    } catch (error) {
      this.log.error("the master's configuration cannot be applied here; keeping this slave's", {
        master: this.masterAddress,
        checksum,
        error: (error as Error).message,
      })
    }
    this.masterChecksum = checksum
    this.masterOverlay = overlayText
  }

  /**
   * Topics gone from the master's overlay were deleted there, data first (topic-delete.ts): those
   * the master holds no data for go here before its configuration is applied, which would
   * otherwise refuse data past the partition count such a topic falls back to.
   */
  private async dropDeletedFirst(topics: string[]): Promise<void> {
    if (topics.length === 0) return
    const held = new Set(parsePartitionsStats((await this.stats('partitions')).toString('utf8')).map((p) => p.topic))
    for (const topic of topics) if (!held.has(topic)) await this.dropTopic(topic)
  }

  /** The master deleted `topic` online and has no data left for it: stop following it and remove it here. */
  private async dropTopic(topic: string): Promise<void> {
    const partitions = new Set(
      this.ctx.store
        .list()
        .filter((log) => log.topic === topic)
        .map((log) => log.partition),
    )
    for (const [key, follower] of this.followers) {
      if (follower.topic !== topic) continue
      follower.drop()
      partitions.add(follower.partition)
      this.followers.delete(key)
    }
    await this.ctx.removeTopicData(topic)
    for (const partition of partitions) this.forgetLog(topic, partition)
    this.deletedTopics.delete(topic)
    this.log.info('topic deleted on the master: removed here', {topic, partitions: [...partitions].sort((a, b) => a - b)})
  }

  private follow(topic: string, partition: number, firstOffset: number): Follower {
    const key = `${topic}-${partition}`
    const known = this.followers.get(key)
    if (known !== undefined) return known
    const follower = new Follower(this, topic, partition, firstOffset)
    this.followers.set(key, follower)
    this.log.info('replicating', {topic, partition, from: this.ctx.store.get(topic, partition)?.maxOffset ?? firstOffset})
    this.runs.push(follower.run())
    for (const listener of this.followListeners) listener(topic, partition)
    return follower
  }

  /** Every replicated partition as this slave knows it now (lag in bytes; messages unknown: -1). */
  partitionStatuses(): ReplicaPartitionStatus[] {
    return [...this.followers.values()].map((f) => f.status()).sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
  }

  /** Is the master answering right now. */
  get masterConnected(): boolean {
    return this.link?.isOpen === true
  }

  /** Run a stopped follower again. */
  restart(follower: Follower): void {
    if (this.running) this.runs.push(follower.run())
  }

  /** `slave-status`: every partition, with the lag in messages counted by the master. */
  async status(): Promise<SlaveStatusReport> {
    const partitions = this.partitionStatuses()
    await Promise.all(
      partitions.map(async (p) => {
        if (p.lagBytes === 0) {
          p.lagMessages = p.masterEnd >= 0 ? 0 : -1
          return
        }
        try {
          const frame = await this.masterLink().requestAsync(
            (out, opaque) => encodeCount(out, {topic: p.topic, partition: p.partition, from: p.slaveEnd, to: p.masterEnd, opaque}),
            5_000,
          )
          if (frame.type === 'result' && frame.code === Status.OK) p.lagMessages = Number(frame.body.toString('utf8'))
        } catch {
          // Unknown: the master does not answer now.
        }
      }),
    )
    return {
      brokerId: this.ctx.brokerId,
      slaveId: this.options.slaveId,
      slaveGroup: this.options.slaveGroup,
      master: this.masterAddress,
      masterConnected: this.masterConnected,
      running: this.running,
      nowMs: Date.now(),
      partitions,
    }
  }

  async stop(): Promise<void> {
    this.running = false
    for (const wake of [...this.sleepers]) wake()
    this.link?.close()
    await this.discovery
    await Promise.all(this.runs)
  }
}
