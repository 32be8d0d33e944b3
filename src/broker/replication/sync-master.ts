/**
 * The synchronous master (MetaQ's "samsa", docs/protocol.md#synchronous-replication): `[system]
 * syncSlaveAddress=host:port` or `meta serve --sync-slave-address host:port`. Every put (and
 * put-batch) appended here is forwarded to the slave in the same turn, and the producer is
 * acknowledged only when both the local append (per the topic's flush policy, group commit
 * included) and the slave's answer are in (handlers/put.ts calls {@link SyncMaster.replicateOne} /
 * replicateBatch).
 *
 * - Slave not connected (or a partition of it being brought up to date): the put is refused
 *   before anything is appended, with MetaQ's 500 "Slave is disconnected" (SLAVE_DISCONNECTED);
 *   with `minSyncSlaves=0`, a put while no slave is connected is acknowledged by this broker
 *   alone (not forwarded; the slave's catch-up brings it over when it connects).
 * - A meta slave gets `sync-batch` frames (one per append: a put or a whole put-batch) carrying
 *   the master's offset and segment start, so its log stays byte-identical. When it answers
 *   that its log ends elsewhere (a put it missed when a connection dropped mid-flight), or
 *   whenever the connection is (re-)established, the master reads what the slave lacks from
 *   its own log and sends it; puts to that partition are refused until the slave has it all.
 *   A slave whose log goes past the fork point (after a `kill -9` of the master) is first
 *   ordered to cut back to it (`sync-cut`, sync-heal.ts).
 * - A MetaQ slave gets MetaQ's one-message `sync`; a put-batch becomes one `sync` per message.
 *   Its log is not compared (as with MetaQ, a put that failed half-way may be on one side).
 * - After `slaveContinuousFailureThreshold` consecutive failed forwards (refusals included)
 *   the master leaves ZooKeeper (cluster mode) so producers stop choosing it; a test sync is
 *   sent every `checkSlaveIntervalInMills` and when one succeeds the master registers again.
 */
import {setImmediate as nextTurn} from 'node:timers/promises'
import type {Logger} from '../../log.js'
import {encodeSync, SLAVE_STATUS_TEST_TOPIC} from '../../protocol/commands/sync.js'
import {encodeSyncBatch, parseSyncEnd} from '../../protocol/commands/sync-batch.js'
import {encodeSyncOverlay} from '../../protocol/commands/sync-overlay.js'
import {checksum} from '../../protocol/crc.js'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import {RECORD_HEADER_BYTES, scanRecords} from '../../protocol/message-set.js'
import type {OutputBuffer} from '../../protocol/output-buffer.js'
import type {MessageStore, PartitionLog} from '../../storage/index.js'
import type {SyncStats} from '../../protocol/meta-stats-body.js'
import type {ClusterRegistration} from '../cluster-registration.js'
import type {SystemConfig} from '../config/index.js'
import {topicOverlayJson, type TopicOverlay} from '../topic-overlay.js'
import {fitSlaveLog} from './sync-heal.js'
import {disconnected, SyncLink, type ReplicationLogin} from './sync-link.js'

/** Bytes read from the log per catch-up frame (well under a slave's 1 MiB frame limit). */
const CATCH_UP_CHUNK_BYTES = 256 * 1024
/** A partition the slave refused is tried again on a put this long after. */
const RETRY_REFUSED_MS = 1000
/** Puts of one partition in one turn are forwarded together up to this many bytes per frame. */
const COALESCE_MAX_BYTES = 256 * 1024

/** Single puts of one partition appended in this turn, forwarded as one sync-batch at its end. */
interface PendingBatch {
  log: PartitionLog
  offset: number
  segmentStart: number
  bytes: number
  records: Buffer[]
  dones: SlaveDone[]
}

/** The outcome of one forwarded append: null when the slave has it. */
type SlaveDone = (err: MetaError | null) => void

interface SyncMasterOptions {
  system: SystemConfig
  store: MessageStore
  log: Logger
  /** The broker's ZooKeeper registration (cluster mode), when there is one. */
  cluster(): ClusterRegistration | undefined
  /**
   * The slave comes from ZooKeeper (syncSlaveFromZk, sync-announce.ts): none until
   * {@link SyncMaster.setSlave}, and the master never leaves ZooKeeper over slave failures (its
   * master node is what keeps a failover slave from taking the id).
   */
  fromZk?: {brokerId: number}
  /**
   * Awaited after each catch-up of a meta slave, before puts are acknowledged again (records
   * in ZooKeeper that the slave is up to date, sync-announce.ts); a rejection drops the link.
   */
  inSync?(slaveAddress: string): Promise<void>
  /** The topic overlay in force on this master (topic-overlay.ts), pushed to a slave that takes it. */
  topicOverlay?(): TopicOverlay
  /** Log in to the slave after every connect (none: the slave's anonymous rights apply). */
  login?: ReplicationLogin
}

export class SyncMaster {
  private link: SyncLink | undefined
  private readonly system: SystemConfig
  private readonly fromZk: SyncMasterOptions['fromZk']
  private readonly inSync: SyncMasterOptions['inSync']
  private readonly topicOverlay: SyncMasterOptions['topicOverlay']
  private readonly store: MessageStore
  private readonly log: Logger
  private readonly threshold: number
  private readonly checkIntervalMs: number
  private readonly cluster: () => ClusterRegistration | undefined
  /** Consecutive forwards that failed. */
  private failures = 0
  /** Out of ZooKeeper because the slave failed too often; the heal timer runs. */
  private left = false
  private healTimer: NodeJS.Timeout | undefined
  /** Partitions being brought up to date on the slave (puts to them are refused meanwhile). */
  private readonly catchingUp = new Set<PartitionLog>()
  /**
   * Partitions the slave cannot take now, and why: its copy holds bytes the master's does not
   * (until repaired), or it refused what was sent (a topic it does not accept, a frame too
   * large, a storage error: tried again on a put after RETRY_REFUSED_MS).
   */
  private readonly diverged = new Map<PartitionLog, {error: MetaError; atMs: number; retry: boolean}>()
  /**
   * Per partition, the end of the last batch the slave confirmed for puts of this process:
   * every put this process acknowledged ends at or below it, so the slave is never ordered
   * to cut below it (sync-heal.ts).
   */
  private readonly confirmed = new Map<PartitionLog, number>()
  /** This turn's single puts per partition (meta slave), sent at the end of the turn. */
  private readonly pendingBatches = new Map<PartitionLog, PendingBatch>()
  private sendQueued = false
  private closed = false
  private readonly login: ReplicationLogin | undefined

  constructor(options: SyncMasterOptions) {
    const {system} = options
    this.system = system
    this.fromZk = options.fromZk
    this.login = options.login
    this.inSync = options.inSync
    this.topicOverlay = options.topicOverlay
    this.store = options.store
    this.log = options.log
    this.cluster = options.cluster
    this.threshold = system.slaveContinuousFailureThreshold
    this.checkIntervalMs = system.checkSlaveIntervalMs
    if (this.fromZk === undefined) this.setSlave(system.syncSlaveAddress)
  }

  /**
   * Forward to the slave at `address` (`host:port`; undefined: none, puts are refused) from
   * now on. The old connection closes (its requests in flight fail with SLAVE_DISCONNECTED).
   */
  setSlave(address: string | undefined): void {
    if (this.closed || address === this.link?.address) return
    this.link?.close()
    this.link = undefined
    this.catchingUp.clear()
    this.diverged.clear()
    this.confirmed.clear()
    if (address === undefined) return
    const colon = address.lastIndexOf(':')
    const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1')
    const link: SyncLink = new SyncLink({
      host,
      port: Number(address.slice(colon + 1)),
      timeoutMs: this.system.sendToSlaveTimeoutMs,
      retryMs: this.system.checkSlaveIntervalMs,
      log: this.log,
      login: this.login,
      onConnected: async (batchForm) => {
        this.diverged.clear()
        // The slave serves the master's online topics before any of their partitions is sent.
        await this.pushOverlay(link)
        if (batchForm) await this.catchUpAll()
        // Record in ZooKeeper that this slave holds everything, before any ack (failover).
        if (batchForm && this.inSync !== undefined && this.link === link) await this.inSync(link.address)
      },
      onDisconnected: () => this.catchingUp.clear(),
    })
    this.link = link
  }

  /** `host:port` of the slave (`none` while a master taking it from ZooKeeper has none). */
  get slaveAddress(): string {
    return this.link?.address ?? 'none'
  }

  /** True while puts can be forwarded (connected, and the slave is up to date). */
  get connected(): boolean {
    return this.link?.ready === true
  }

  /** `stats meta-sync`. */
  stats(): SyncStats {
    const link = this.link
    return {
      role: 'master',
      slaveAddress: this.slaveAddress,
      slaveConnected: link?.ready === true,
      form: link?.ready === true ? (link.batchForm ? 'sync-batch' : 'sync') : 'unknown',
      consecutiveFailures: this.failures,
      leftZooKeeper: this.left,
      partitionsCatchingUp: this.catchingUp.size,
      partitionsDiverged: this.diverged.size,
    }
  }

  /**
   * Why a put to `log` (undefined: a partition without a log yet) must be refused now, before
   * anything is created or appended; undefined when it may go ahead.
   */
  refusal(log: PartitionLog | undefined): MetaError | undefined {
    let why: MetaError | undefined
    const link = this.link
    // minSyncSlaves=0: with no slave connected and up to date, this broker takes puts alone
    // (put.ts forwards only over a ready link; the slave's catch-up sends them later).
    if (link?.ready !== true && this.system.minSyncSlaves === 0) return undefined
    if (link === undefined)
      why = disconnected(
        `no sync slave has announced itself in ZooKeeper for broker id ${this.fromZk?.brokerId ?? '?'} (meta_sync_slave/${this.fromZk?.brokerId ?? '?'}); puts are refused until one is up to date`,
      )
    else if (!link.ready) why = disconnected(`the master has no working connection to its sync slave ${link.address}`)
    else if (log === undefined) return undefined
    else if (this.catchingUp.has(log)) why = disconnected(`the sync slave ${link.address} is being brought up to date for ${log.topic}-${log.partition}`)
    else {
      const refused = this.diverged.get(log)
      if (refused !== undefined && refused.retry && Date.now() - refused.atMs >= RETRY_REFUSED_MS) {
        this.diverged.delete(log)
        this.startCatchUp(log, undefined)
        why = disconnected(`the sync slave ${link.address} is being brought up to date for ${log.topic}-${log.partition}`)
      } else {
        why = refused?.error
      }
    }
    if (why !== undefined) this.failed()
    return why
  }

  /**
   * Forward one message just appended to `log` at `offset` (call right after the append). To a
   * meta slave, the puts of one partition in one turn go as one sync-batch at the end of the
   * turn (split where the master's log rolled a segment), so a window of pipelined puts costs
   * one frame and one slave append per turn, not one per put.
   */
  replicateOne(log: PartitionLog, offset: number, id: bigint, flag: number, payload: Uint8Array, crc: number, done: SlaveDone): void {
    const {topic, partition} = log
    const link = this.link
    if (link === undefined) return done(disconnected('the sync slave left'))
    if (link.batchForm) {
      const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.byteLength)
      record.writeInt32BE(payload.byteLength, 0)
      record.writeInt32BE(crc, 4)
      record.writeBigInt64BE(id, 8)
      record.writeInt32BE(flag, 16)
      record.set(payload, RECORD_HEADER_BYTES)
      const segmentStart = log.appendSegmentStart
      let batch = this.pendingBatches.get(log)
      if (
        batch !== undefined &&
        (batch.segmentStart !== segmentStart || batch.offset + batch.bytes !== offset || batch.bytes + record.length > COALESCE_MAX_BYTES)
      ) {
        this.sendBatch(batch)
        batch = undefined
      }
      if (batch === undefined) {
        batch = {log, offset, segmentStart, bytes: 0, records: [], dones: []}
        this.pendingBatches.set(log, batch)
        if (!this.sendQueued) {
          this.sendQueued = true
          setImmediate(() => this.sendPending())
        }
      }
      batch.records.push(record)
      batch.dones.push(done)
      batch.bytes += record.length
    } else {
      const body = Buffer.from(payload)
      link.request(
        (out, opaque) => encodeSync(out, {topic, partition, flag, msgId: id, checksum: crc, opaque, body}),
        (err) => this.answered(log, err, done),
      )
    }
  }

  /** Forward `count` stored-format records just appended to `log` at `offset` (a put-batch). */
  replicateBatch(log: PartitionLog, offset: number, records: Buffer, count: number, done: SlaveDone): void {
    const {topic, partition} = log
    const link = this.link
    if (link === undefined) return done(disconnected('the sync slave left'))
    if (link.batchForm) {
      // Single puts of this partition appended before the batch go first.
      const pending = this.pendingBatches.get(log)
      if (pending !== undefined) this.sendBatch(pending)
      const segmentStart = log.appendSegmentStart
      const end = offset + records.length
      link.request(
        (out, opaque) => encodeSyncBatch(out, {topic, partition, offset, segmentStart, count, opaque, body: records}),
        (err) => this.answered(log, err, done, end),
      )
      return
    }
    // MetaQ's slave takes one message per sync: the batch is acknowledged when all are.
    let waiting = count
    let first: MetaError | null = null
    const one = (err: MetaError | null) => {
      first ??= err
      if (--waiting === 0) done(first)
    }
    for (let pos = 0; pos < records.length;) {
      const length = records.readInt32BE(pos)
      const body = Buffer.from(records.subarray(pos + RECORD_HEADER_BYTES, pos + RECORD_HEADER_BYTES + length))
      const msgId = records.readBigInt64BE(pos + 8)
      const flag = records.readInt32BE(pos + 16)
      const crc = records.readInt32BE(pos + 4)
      link.request(
        (out, opaque) => encodeSync(out, {topic, partition, flag, msgId, checksum: crc, opaque, body}),
        (err) => this.answered(log, err, one),
      )
      pos += RECORD_HEADER_BYTES + length
    }
  }

  close(): void {
    this.sendPending()
    this.closed = true
    clearTimeout(this.healTimer)
    this.link?.close()
  }

  /** End of the turn: forward every partition's coalesced puts. */
  private sendPending(): void {
    this.sendQueued = false
    for (const batch of this.pendingBatches.values()) this.sendBatch(batch)
    this.link?.flush()
  }

  private sendBatch(batch: PendingBatch): void {
    const {log, offset, segmentStart, records, dones} = batch
    this.pendingBatches.delete(log)
    const body = records.length === 1 ? records[0] : Buffer.concat(records, batch.bytes)
    const {topic, partition} = log
    const link = this.link
    if (link === undefined) {
      for (const done of dones) done(disconnected('the sync slave left'))
      return
    }
    link.request(
      (out, opaque) => encodeSyncBatch(out, {topic, partition, offset, segmentStart, count: records.length, opaque, body}),
      (err) =>
        this.answered(
          log,
          err,
          (outcome) => {
            for (const done of dones) done(outcome)
          },
          offset + batch.bytes,
        ),
    )
  }

  /** The slave's answer to a forwarded append ending at `end` (undefined: MetaQ's form, not compared). */
  private answered(log: PartitionLog, err: MetaError | null, done: SlaveDone, end?: number): void {
    if (err === null) {
      this.failures = 0
      if (end !== undefined && end > (this.confirmed.get(log) ?? 0)) this.confirmed.set(log, end)
      done(null)
      return
    }
    this.failed()
    // The slave refused what the master appended: bring its copy of this partition up to
    // date (a dropped connection does that for every partition when it comes back).
    if (this.link?.batchForm === true && err.code !== 'SLAVE_DISCONNECTED')
      this.startCatchUp(log, err.code === 'SYNC_OFFSET_MISMATCH' ? parseSyncEnd(err.message) : undefined)
    done(
      err.code === 'SLAVE_DISCONNECTED'
        ? err
        : new MetaError(err.code, `the sync slave ${this.slaveAddress} refused the message: ${err.message}`, {status: err.status}),
    )
  }

  private failed(): void {
    this.failures += 1
    if (this.failures < this.threshold || this.left || this.closed || this.fromZk !== undefined) return
    const cluster = this.cluster()
    if (cluster === undefined) return
    this.left = true
    this.log.error('the sync slave failed too many times in a row: leaving ZooKeeper until a test sync succeeds', {
      slave: this.slaveAddress,
      failures: this.failures,
      slaveContinuousFailureThreshold: this.threshold,
    })
    cluster.leave().catch((error: Error) => this.log.warn('could not leave ZooKeeper', {error: error.message}))
    this.scheduleHeal()
  }

  /** MetaQ's heal thread: a test sync every checkSlaveIntervalInMills until one succeeds, then register again. */
  private scheduleHeal(): void {
    if (this.closed) return
    this.healTimer = setTimeout(() => {
      this.testSync().then(
        () => {
          this.failures = 0
          this.left = false
          this.log.info('the sync slave answers again: registering in ZooKeeper', {slave: this.slaveAddress})
          const cluster = this.cluster()
          cluster?.rejoin().catch((error: Error) => this.log.warn('could not register in ZooKeeper again', {error: error.message}))
        },
        () => this.scheduleHeal(),
      )
    }, this.checkIntervalMs)
    this.healTimer.unref()
  }

  private async testSync(): Promise<void> {
    const link = this.link
    if (link === undefined || !link.ready) throw disconnected('not connected')
    if (link.batchForm) {
      await link.call((out, opaque) =>
        encodeSyncBatch(out, {topic: SLAVE_STATUS_TEST_TOPIC, partition: 0, offset: 0, segmentStart: 0, count: 0, opaque, body: Buffer.alloc(0)}),
      )
      return
    }
    const body = Buffer.from('test')
    await link.call((out, opaque) =>
      encodeSync(out, {topic: SLAVE_STATUS_TEST_TOPIC, partition: 0, flag: 0, msgId: 0n, checksum: checksum(body), opaque, body}),
    )
  }

  private startCatchUp(log: PartitionLog, slaveEnd: number | undefined): void {
    const link = this.link
    if (this.catchingUp.has(log) || this.diverged.has(log) || link === undefined || !link.ready) return
    this.catchingUp.add(log)
    this.catchUpOrRefuse(log, slaveEnd).then(
      () => this.catchingUp.delete(log),
      (error: Error) => {
        this.catchingUp.delete(log)
        link.reset(`catch-up failed: ${error.message}`)
      },
    )
  }

  /** After (re)connecting to a meta slave: bring every partition up to date before puts resume. */
  private async catchUpAll(): Promise<void> {
    for (const log of this.store.list()) {
      if (this.closed) return
      await this.catchUpOrRefuse(log, undefined)
    }
  }

  /**
   * {@link catchUp}; when the slave refuses (or the master cannot read its own log), only that
   * partition is refused, with why, and tried again later. A lost connection is thrown (the
   * link starts over).
   */
  private async catchUpOrRefuse(log: PartitionLog, knownEnd: number | undefined): Promise<void> {
    try {
      await this.catchUp(log, knownEnd)
    } catch (error) {
      if (isMetaError(error, 'SLAVE_DISCONNECTED') || !(error instanceof MetaError)) throw error
      const {topic, partition} = log
      const why = new MetaError(error.code, `the sync slave ${this.slaveAddress} cannot take ${topic}-${partition}: ${error.message}`, {status: error.status})
      this.diverged.set(log, {error: why, atMs: Date.now(), retry: true})
      this.log.error('sync slave refused a partition; puts to it fail until it takes it', {topic, partition, error: error.message})
    }
  }

  /**
   * Send the slave what it lacks of `log`: from its end (asked when not known) to the end of
   * the master's log as it is now (puts to the partition wait meanwhile), in whole records
   * read from the master's files, each frame within one of the master's segments.
   */
  private async catchUp(log: PartitionLog, knownEnd: number | undefined): Promise<void> {
    const {topic, partition} = log
    let pos = knownEnd ?? (await this.slaveEnd(log))
    const link = this.link
    if (link?.canCut === true) {
      // A slave holding bytes past the fork point is ordered to cut them (sync-heal.ts).
      const from = await fitSlaveLog({log, slaveEnd: pos, confirmedEnd: this.confirmed.get(log) ?? 0, link, logger: this.log, probe: () => this.slaveEnd(log)})
      if (from instanceof MetaError) {
        this.diverged.set(log, {error: from, atMs: Date.now(), retry: false})
        return
      }
      pos = from
    }
    const target = log.appendOffset
    if (pos > target) {
      // Only that partition stops: the others keep replicating. (A slave that cannot be
      // ordered to cut: a meta slave without sync_cut.)
      const why = new MetaError(
        'SYNC_OFFSET_MISMATCH',
        `the sync slave's log of ${topic}-${partition} ends at ${pos}, past the master's end ${target}: the slave holds messages the master does not, and does not list sync_cut; puts to this partition are refused until one side is repaired (restart the slave: registered in ZooKeeper with a slave id it cuts the tail the master lacks, keeping it in a .meta.cut file; otherwise remove the slave's copy of the partition and restart it)`,
      )
      this.diverged.set(log, {error: why, atMs: Date.now(), retry: false})
      this.log.error('sync slave diverged from the master', {topic, partition, slaveEnd: pos, masterEnd: target})
      return
    }
    if (pos < target) this.log.info('bringing the sync slave up to date', {topic, partition, from: pos, to: target})
    pos = Math.max(pos, log.minOffset)
    while (pos < target) {
      if (this.closed) return
      if (pos >= log.maxOffset) {
        await nextTurn() // appends of this turn are written at its end
        continue
      }
      const records = await this.wholeRecordsAt(log, pos)
      const segmentStart = log.nearestOffset(pos)
      await this.call((out, opaque) => encodeSyncBatch(out, {topic, partition, offset: pos, segmentStart, count: records.count, opaque, body: records.bytes}))
      pos += records.bytes.length
    }
  }

  /**
   * The master's topic overlay changed (a topic created, altered or deleted online): sent to a
   * slave that takes it before the change is acknowledged. When the slave does not take it, the
   * link is dropped: it reconnects and sends it again before puts resume.
   */
  async overlayChanged(): Promise<void> {
    const link = this.link
    if (link === undefined || !link.ready) return // sent when the link (re)connects
    try {
      await this.pushOverlay(link)
    } catch (error) {
      this.log.warn('the sync slave did not take the topic overlay: reconnecting to send it again', {slave: link.address, error: (error as Error).message})
      if (this.link === link) link.reset(`the topic overlay was not taken: ${(error as Error).message}`)
    }
  }

  /** Send the topic overlay to `link`'s slave when it takes it (sync_overlay). */
  private async pushOverlay(link: SyncLink): Promise<void> {
    if (!link.canOverlay || this.topicOverlay === undefined) return
    const json = Buffer.from(JSON.stringify(topicOverlayJson(this.topicOverlay())), 'utf8')
    await link.call((out, opaque) => encodeSyncOverlay(out, json, opaque))
  }

  /** A request to the current slave (SLAVE_DISCONNECTED when there is none). */
  private call(encode: (out: OutputBuffer, opaque: number) => void): Promise<string> {
    return this.link === undefined ? Promise.reject(disconnected('the sync slave left')) : this.link.call(encode)
  }

  /** The slave's end of `log`'s partition (a sync-batch of no records). */
  private async slaveEnd(log: PartitionLog): Promise<number> {
    const body = await this.call((out, opaque) =>
      encodeSyncBatch(out, {topic: log.topic, partition: log.partition, offset: 0, segmentStart: 0, count: 0, opaque, body: Buffer.alloc(0)}),
    )
    const end = Number(body.split(' ')[1])
    if (!Number.isSafeInteger(end) || end < 0)
      throw new MetaError('INTERNAL', `the sync slave answered a probe of ${log.topic}-${log.partition} with "${body}": expected "<partition> <end>"`)
    return end
  }

  /** Whole records of the master's log from `pos` (at least one; never across a segment end). */
  private async wholeRecordsAt(log: PartitionLog, pos: number): Promise<{bytes: Buffer; count: number}> {
    for (let size = CATCH_UP_CHUNK_BYTES; ;) {
      const read = await log.read(pos, size)
      if (read.kind !== 'data')
        throw new MetaError('STORAGE_ERROR', `cannot read ${log.topic}-${log.partition} at offset ${pos} for the sync slave (${read.kind})`)
      let count = 0
      const {end} = scanRecords(read.data, 0, () => (count += 1))
      if (count > 0) return {bytes: read.data.subarray(0, end), count}
      const needed = read.data.length >= RECORD_HEADER_BYTES ? RECORD_HEADER_BYTES + read.data.readInt32BE(0) : RECORD_HEADER_BYTES
      if (needed <= size || needed > 2 ** 31 - 1)
        throw new MetaError(
          'STORAGE_CORRUPT',
          `no whole record at offset ${pos} of the master's own log of ${log.topic}-${log.partition} (it ends at ${log.maxOffset}); it cannot be sent to the sync slave`,
        )
      size = needed
    }
  }
}

/**
 * A put's two outcomes under synchronous replication: the local append (`local`) and the
 * slave's answer (`remote`). `done` runs once both are in, with the first error (the local one
 * first) and whether the local append failed.
 */
export class BothSides {
  private waiting = 2
  private localErr: MetaError | null = null
  private remoteErr: MetaError | null = null

  constructor(private readonly done: (err: MetaError | null, storageFailed: boolean) => void) {}

  readonly local = (err: MetaError | null): void => {
    this.localErr = err
    this.settle()
  }

  readonly remote = (err: MetaError | null): void => {
    this.remoteErr = err
    this.settle()
  }

  private settle(): void {
    if (--this.waiting === 0) this.done(this.localErr ?? this.remoteErr, this.localErr !== null)
  }
}
