/**
 * The admin client: a broker's stats parsed into typed objects, its version, and end offsets.
 *
 *   const admin = await connectAdmin({broker: '127.0.0.1:8123'})
 *   const system = await admin.systemStats()
 *   await admin.close()
 */
import {silentLogger, type Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import {
  decodeGroupDescription,
  decodeGroupSummaries,
  encodeGroupDelete,
  encodeGroupDescribe,
  encodeGroupList,
  type GroupDescription,
  type GroupSummary,
} from '../protocol/commands/group-admin.js'
import {decodeCommittedOffsets, encodeOffsetCommit, encodeOffsetFetch, type CommittedOffset} from '../protocol/commands/offsets.js'
import {encodeCount, encodeSeek, type SeekMode} from '../protocol/commands/seek.js'
import {encodeOffset} from '../protocol/commands/offset.js'
import {encodePartitions} from '../protocol/commands/partitions.js'
import {decodeTxList, encodeTxDecide, encodeTxList, type TxListEntry} from '../protocol/commands/tx-admin.js'
import {encodeTransaction} from '../protocol/commands/transaction.js'
import type {OutputBuffer} from '../protocol/output-buffer.js'
import type {ResponseFrame} from '../protocol/frames.js'
import {transactionError} from './transaction.js'
import {decodeSlaveStatus, encodeSlaveStatus, type SlaveStatusReport} from '../protocol/commands/replication.js'
import {
  decodePartitionsState,
  decodeReloadReport,
  encodeConfigReload,
  encodePartitionsState,
  type PartitionsStateReply,
  type ReloadReport,
} from '../protocol/commands/broker-admin.js'
import {encodeTopicAdmin, type TopicAdminAction, type TopicAdminReply, type TopicAdminRequest} from '../protocol/commands/topic-admin.js'
import {parseBrokerAddress} from './address.js'
import {BrokerConnection} from './connection.js'
import {resultText} from './connection-errors.js'
import {DEFAULT_CONNECT_TIMEOUT_MS} from './connection-options.js'
import {TAIL_OFFSET} from './consumer.js'
import {
  DAMAGE_ITEM,
  parseDamageStats,
  parseOffsetsStats,
  parsePartitionsStats,
  parseRealtimeStats,
  parseSystemStats,
  parseTopicStats,
  parseTopicsStats,
  type DamageStats,
  type PartitionStats,
  type RealtimeStatsResult,
  type SingleTopicStats,
  type SystemStats,
  type TopicStats,
} from '../protocol/stats-body.js'

// The stats bodies are encoded by the broker and parsed here by one module.
export {
  parseDamageStats,
  parseOffsetsStats,
  parsePartitionsStats,
  parseRealtimeStats,
  parseRealtimeValue,
  parseSystemStats,
  parseTopicStats,
  parseTopicsStats,
  statsLines,
  statsMap,
  type DamageStats,
  type PartitionStats,
  type RealtimeStatsResult,
  type RealtimeValue,
  type SingleTopicStats,
  type StorageDamageStats,
  type SystemStats,
  type TopicStats,
} from '../protocol/stats-body.js'

/** A reload reads a file and may touch ZooKeeper: give it longer than a stats request. */
const RELOAD_TIMEOUT_MS = 30_000

export interface AdminOptions {
  broker?: string
  /** Deadline of each request (default 10000). */
  timeoutMs?: number
  /** Deadline of connecting and of the broker's first answer (default 5000). */
  connectTimeoutMs?: number
  logger?: Logger
}

export class AdminClient {
  constructor(readonly conn: BrokerConnection) {}

  async raw(item = ''): Promise<string> {
    return this.conn.stats(item)
  }

  async systemStats(): Promise<SystemStats> {
    return parseSystemStats(await this.conn.stats(''))
  }

  async topics(): Promise<TopicStats[]> {
    return parseTopicsStats(await this.conn.stats('topics'))
  }

  async offsets(): Promise<PartitionStats[]> {
    return parseOffsetsStats(await this.conn.stats('offsets'))
  }

  /** Per-partition detail: meta's `stats partitions`, or `stats offsets` from a MetaQ broker. */
  async partitions(): Promise<PartitionStats[]> {
    return this.conn.capabilities.meta ? parsePartitionsStats(await this.conn.stats('partitions')) : this.offsets()
  }

  /** meta's `stats damage`; empty from a MetaQ broker (which has no such item). */
  async damage(): Promise<DamageStats[]> {
    return this.conn.capabilities.meta ? parseDamageStats(await this.conn.stats(DAMAGE_ITEM)) : []
  }

  async realtime(): Promise<RealtimeStatsResult> {
    return parseRealtimeStats(await this.conn.stats('realtime'))
  }

  async topic(name: string): Promise<SingleTopicStats> {
    return parseTopicStats(await this.conn.stats(name))
  }

  async config(): Promise<string> {
    return this.conn.stats('config')
  }

  async resetRealtime(): Promise<void> {
    await this.conn.stats('reset')
  }

  async version(): Promise<string> {
    return this.conn.version()
  }

  /** Groups known to the broker (members or committed offsets). meta brokers only. */
  async groups(): Promise<GroupSummary[]> {
    this.requireMeta('group list')
    return decodeGroupSummaries(await this.text((out, opaque) => encodeGroupList(out, opaque)))
  }

  /** Members, ownership and committed offsets of a group; NOT_FOUND for an unknown group. */
  async describeGroup(group: string): Promise<GroupDescription> {
    this.requireMeta('group describe')
    return decodeGroupDescription(await this.text((out, opaque) => encodeGroupDescribe(out, group, opaque)))
  }

  /** Delete a group's committed offsets (durable when this resolves); NOT_FOUND for an unknown group, BAD_REQUEST while it has live members. */
  async deleteGroup(group: string): Promise<void> {
    this.requireMeta('group delete')
    await this.text((out, opaque) => encodeGroupDelete(out, group, opaque))
  }

  /** A group's committed offsets (optionally only some topics). */
  async fetchOffsets(group: string, topics?: string[]): Promise<CommittedOffset[]> {
    this.requireMeta('offset fetch')
    return decodeCommittedOffsets(await this.text((out, opaque) => encodeOffsetFetch(out, group, {topics}, opaque)), 'offset-fetch reply')
  }

  /** Overwrite a group's committed offsets (durable when this resolves). */
  async commitOffsets(group: string, offsets: CommittedOffset[]): Promise<void> {
    this.requireMeta('offset commit')
    await this.text((out, opaque) => encodeOffsetCommit(out, group, offsets, opaque))
  }

  /** Prepared XA transactions and heuristic outcomes on this broker (`tx-list`). */
  async transactions(): Promise<TxListEntry[]> {
    this.requireTransactions('tx list')
    return decodeTxList(await this.text((out, opaque) => encodeTxList(out, opaque)))
  }

  /**
   * A heuristic decision on a prepared XA transaction (`tx-decide`): commit or roll it back
   * now. TRANSACTION_ERROR with `details.xaCode` (-4 unknown, -6 not prepared) when refused.
   */
  async decideTransaction(xid: string, decision: 'commit' | 'rollback'): Promise<void> {
    this.requireTransactions(`tx ${decision}`)
    await this.transactionRequest((out, opaque) => encodeTxDecide(out, {xid, decision, opaque}), `${decision} of ${xid}`)
  }

  /** FORGET a heuristic outcome. */
  async forgetTransaction(xid: string): Promise<void> {
    this.requireTransactions('tx forget')
    await this.transactionRequest(
      (out, opaque) => encodeTransaction(out, {txKey: xid, sessionId: 'meta-tx', txType: 'FORGET', timeoutSeconds: 0, uniqueQualifier: undefined, opaque}),
      `forget of ${xid}`,
    )
  }

  private async transactionRequest(write: (out: OutputBuffer, opaque: number) => void, what: string): Promise<void> {
    let frame: ResponseFrame
    try {
      frame = await this.conn.requestAsync(write)
    } catch (error) {
      throw transactionError(undefined, error as MetaError, what)
    }
    if (frame.type !== 'result' || frame.code !== 200) throw transactionError(frame, null, what)
  }

  private requireTransactions(what: string): void {
    if (this.conn.capabilities.transactions !== true) {
      throw new MetaError(
        'UNSUPPORTED',
        `${what}: broker ${this.conn.name} does not serve meta's transaction administration (a MetaQ broker, or an older meta)`,
      )
    }
  }

  /**
   * `slave-status` of an asynchronous slave (docs/protocol.md#replication). NOT_A_SLAVE when
   * the broker is a master; UNSUPPORTED when it is a broker without meta's replication.
   */
  async slaveStatus(): Promise<SlaveStatusReport> {
    if (!this.conn.capabilities.replicate) {
      throw new MetaError(
        'UNSUPPORTED',
        `${this.conn.name} does not serve slave-status: it is ${this.conn.capabilities.meta ? 'a meta broker without replication' : 'a MetaQ broker (its slaves report over JMX)'}`,
      )
    }
    return decodeSlaveStatus(await this.text((out, opaque) => encodeSlaveStatus(out, opaque)))
  }

  /** Partition count of a topic on this broker. */
  async partitionCount(topic: string): Promise<number> {
    this.requireMeta('partitions')
    return Number(await this.text((out, opaque) => encodePartitions(out, {topic, opaque})))
  }

  /** Log start and end of a partition (both 0 when it does not exist yet). */
  async bounds(topic: string, partition: number): Promise<{start: number; end: number}> {
    const ask = async (offset: number) => {
      const frame = await this.conn.requestAsync((out, opaque) => encodeOffset(out, {topic, group: 'meta-admin', partition, offset, opaque}))
      if (frame.type === 'result' && frame.code === 404) return 0
      return Number(resultText(frame))
    }
    return {start: await ask(-1), end: await ask(TAIL_OFFSET)}
  }

  /** Translate a time or a message count into a byte offset (side index). */
  async seek(topic: string, partition: number, mode: SeekMode, value: number, delta = 0): Promise<number> {
    this.requireMeta('seek')
    return Number(await this.text((out, opaque) => encodeSeek(out, {topic, partition, mode, value, delta, opaque})))
  }

  /** Whole messages in [from, to) of a partition. */
  async count(topic: string, partition: number, from: number, to: number): Promise<number> {
    this.requireMeta('count')
    return Number(await this.text((out, opaque) => encodeCount(out, {topic, partition, from, to, opaque})))
  }

  /**
   * Re-read and apply the broker's server.ini (`check`: only report what would change).
   * Throws CONFIG_INVALID (naming file, line and key) when the broker refuses the file.
   */
  async reload(mode: 'apply' | 'check' = 'apply'): Promise<ReloadReport> {
    this.requireMeta('reload')
    const frame = await this.conn.requestAsync((out, opaque) => encodeConfigReload(out, mode, opaque), RELOAD_TIMEOUT_MS)
    return decodeReloadReport(resultText(frame)) // CONFIG_INVALID comes back with its code
  }

  /** Close partitions start..end of a topic (default: all): put and get answer 403 until reopened. */
  closePartitions(topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    return this.partitionsState('partitions-close', topic, start, end)
  }

  /** Reopen partitions start..end of a topic (default: every closed one). */
  openPartitions(topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    return this.partitionsState('partitions-open', topic, start, end)
  }

  /**
   * Create, alter, delete or show a topic on this broker (meta's `topic-admin`): settings are
   * server.ini `[topic=…]` keys and values, checked by the broker as server.ini is; a delete
   * only reports unless `execute`. Throws CONFIG_INVALID/INVALID_ARGUMENT naming the value,
   * NOT_FOUND for a topic the broker does not have, UNSUPPORTED from a broker without it.
   */
  async topicAdmin(action: TopicAdminAction, topic: string, request: TopicAdminRequest = {}): Promise<TopicAdminReply> {
    this.requireMeta(`topic ${action}`)
    if (this.conn.capabilities.topicAdmin !== true) {
      throw new MetaError('UNSUPPORTED', `topic ${action} needs a broker that lists topic_admin in stats meta-capabilities; ${this.conn.name} does not`)
    }
    const frame = await this.conn.requestAsync((out, opaque) => encodeTopicAdmin(out, action, topic, request, opaque), RELOAD_TIMEOUT_MS)
    return JSON.parse(resultText(frame)) as TopicAdminReply
  }

  private async partitionsState(type: 'partitions-close' | 'partitions-open', topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    this.requireMeta(type.replace('-', ' '))
    const frame = await this.conn.requestAsync((out, opaque) => encodePartitionsState(out, {type, topic, start: start ?? -1, end: end ?? -1}, opaque))
    return decodePartitionsState(resultText(frame)) // TOPIC_NOT_ACCEPTED, INVALID_ARGUMENT come back with their codes
  }

  private async text(write: Parameters<BrokerConnection['requestAsync']>[0]): Promise<string> {
    return resultText(await this.conn.requestAsync(write))
  }

  private requireMeta(what: string): void {
    if (!this.conn.capabilities.meta) {
      throw new MetaError('SERVICE_UNAVAILABLE', `${what} needs a meta broker; ${this.conn.name} is a MetaQ broker without meta's extensions`)
    }
  }

  close(): void {
    this.conn.close()
  }
}

/** Connect (no reconnect: an admin call fails fast with CONNECTION_FAILED). */
export async function connectAdmin(options: AdminOptions = {}): Promise<AdminClient> {
  const address = parseBrokerAddress(options.broker ?? '127.0.0.1:8123')
  const conn = await BrokerConnection.connect({
    ...address,
    reconnect: false,
    requestTimeoutMs: options.timeoutMs ?? 10_000,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    logger: options.logger ?? silentLogger,
  })
  if (conn.isClosed) throw new MetaError('CONNECTION_FAILED', `cannot reach broker ${conn.name}`)
  return new AdminClient(conn)
}
