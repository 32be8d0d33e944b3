/**
 * The admin client: a broker's stats parsed into typed objects, its version, and end offsets.
 *
 *   const admin = await connectAdmin({broker: '127.0.0.1:8123'})
 *   const system = await admin.systemStats()
 *   await admin.close()
 */
import {silentLogger, type Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import {encodeGroupDelete, encodeGroupDescribe, encodeGroupList, type GroupDescription, type GroupSummary} from '../protocol/commands/group-admin.js'
import {encodeOffsetCommit, encodeOffsetFetch, type CommittedOffset} from '../protocol/commands/offsets.js'
import {encodeCount, encodeSeek, type SeekMode} from '../protocol/commands/seek.js'
import {encodeOffset} from '../protocol/commands/offset.js'
import {encodePartitions} from '../protocol/commands/partitions.js'
import {
  encodeConfigReload,
  encodePartitionsState,
  type PartitionsStateReply,
  type ReloadReport,
} from '../protocol/commands/broker-admin.js'
import {parseBrokerAddress} from './address.js'
import {BrokerConnection, DEFAULT_CONNECT_TIMEOUT_MS, resultText} from './connection.js'
import {TAIL_OFFSET} from './consumer.js'

/** `stats` (no item). Numbers are numbers; `slave` is a boolean. */
export interface SystemStats {
  pid: number
  brokerId: number
  port: number
  uptimeSeconds: number
  version: string
  slave: boolean
  currentConnections: number
  threads: number
  cmdPut: number
  cmdGet: number
  cmdOffset: number
  txBegin: number
  txXaBegin: number
  txCommit: number
  txRollback: number
  getMiss: number
  putFailed: number
  totalMessages: number
  topics: number
  configChecksum: number
  /** meta brokers only: damage found in their data (undefined from a MetaQ broker). */
  damage?: StorageDamageStats
}

/** meta's lines after MetaQ's system stats: what the broker found damaged in its data. */
export interface StorageDamageStats {
  /** Partitions not served because their directory is damaged (see `stats damage`). */
  quarantinedPartitions: number
  /** Damaged ranges readers step over now, and their bytes. */
  damagedRanges: number
  damagedBytes: number
  /** Damaged records (bad length or checksum) found since the broker started. */
  crcFailures: number
  /** Sealed segments the background scrub has not checked yet. */
  unverifiedSegments: number
  scrubbedBytes: number
}

/** One line of meta's `stats damage`: a quarantined partition, or a damaged range. */
export type DamageStats =
  | {kind: 'quarantined'; topic: string; partition: number; code: string; reason: string}
  | {kind: 'damaged-range'; topic: string; partition: number; offset: number; bytes: number; reason: string; acknowledged: boolean; file: string}

/** One line of `stats topics`. Topics configured without data have `empty: true`. */
export interface TopicStats {
  topic: string
  empty: boolean
  partitions: number
  messageCount: number
  messageBytes: number
  acceptPublish: boolean
  acceptSubscribe: boolean
}

/** One line of `stats offsets` (plus meta's `stats partitions` detail when available). */
export interface PartitionStats {
  topic: string
  partition: number
  /** The broker holding it (set in cluster views that span brokers). */
  brokerId?: number
  minOffset: number
  maxOffset: number
  sizeBytes?: number
  messageCount?: number
  segments?: number
  unflushed?: number
  lastAppendMs?: number
  /** Closed by `meta partitions close` (put and get answer 403); meta brokers only. */
  closed?: boolean
}

/** A realtime value: `Count=…,Value=…,…` or null when nothing was recorded. */
export interface RealtimeValue {
  count: number
  value: number
  valuePerCount: number | null
  countPerSecond: number | null
  durationSeconds: number
}

export type RealtimeStatsResult = Record<string, RealtimeValue | null>

/** `stats <topic>`. resultCode: 0 = has data, 1 = unknown topic, 2 = configured without data. */
export interface SingleTopicStats {
  topic: string
  resultCode: number
  partitions: number
  messageCount: number
  bytes: number
  realtime: RealtimeStatsResult
}

/** Split a stats body into lines of tokens (STATS and END removed). */
export function statsLines(body: string): string[][] {
  return body
    .split('\r\n')
    .filter((line) => line !== '' && line !== 'STATS' && line !== 'END')
    .map((line) => line.split(' '))
}

/** Key → value as MetaQ's client parses it (key = text before the first space). */
export function statsMap(body: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const line of body.split('\r\n')) {
    if (line === '' || line === 'STATS' || line === 'END') continue
    const space = line.indexOf(' ')
    map.set(space < 0 ? line : line.slice(0, space), space < 0 ? '' : line.slice(space + 1))
  }
  return map
}

export function parseSystemStats(body: string): SystemStats {
  const m = statsMap(body)
  const n = (key: string) => Number(m.get(key) ?? Number.NaN)
  return {
    pid: n('pid'),
    brokerId: n('broker_id'),
    port: n('port'),
    uptimeSeconds: n('uptime'),
    version: m.get('version') ?? '',
    slave: m.get('slave') === 'true',
    currentConnections: n('curr_connections'),
    threads: n('threads'),
    cmdPut: n('cmd_put'),
    cmdGet: n('cmd_get'),
    cmdOffset: n('cmd_offset'),
    txBegin: n('tx_begin'),
    txXaBegin: n('tx_xa_begin'),
    txCommit: n('tx_commit'),
    txRollback: n('tx_rollback'),
    getMiss: n('get_miss'),
    putFailed: n('put_failed'),
    totalMessages: n('total_messages'),
    topics: n('topics'),
    configChecksum: n('config_checksum'),
    ...(m.has('quarantined_partitions')
      ? {
          damage: {
            quarantinedPartitions: n('quarantined_partitions'),
            damagedRanges: n('damaged_ranges'),
            damagedBytes: n('damaged_bytes'),
            crcFailures: n('crc_failures'),
            unverifiedSegments: n('unverified_segments'),
            scrubbedBytes: n('scrubbed_bytes'),
          },
        }
      : {}),
  }
}

/** meta's `stats damage` (the reason and file are the rest of their line). */
export function parseDamageStats(body: string): DamageStats[] {
  return statsLines(body).flatMap((tokens): DamageStats[] => {
    const [topic, partitionText, kind] = tokens
    const partition = Number(partitionText)
    const rest = (key: string) => tokens.slice(tokens.indexOf(key) + 1).join(' ')
    if (kind === 'quarantined') return [{kind: 'quarantined', topic, partition, code: tokens[5], reason: rest('reason')}]
    if (kind !== 'damaged_range') return []
    const v = pairs(tokens.slice(3, tokens.indexOf('file')))
    return [{
      kind: 'damaged-range',
      topic,
      partition,
      offset: Number(v.offset),
      bytes: Number(v.bytes),
      reason: v.reason,
      acknowledged: v.acknowledged === 'true',
      file: rest('file'),
    }]
  })
}

export function parseTopicsStats(body: string): TopicStats[] {
  return statsLines(body).map((tokens) => {
    if (tokens[1] === '*Empty*') {
      return {topic: tokens[0], empty: true, partitions: 0, messageCount: 0, messageBytes: 0, acceptPublish: true, acceptSubscribe: true}
    }
    const v = pairs(tokens.slice(1))
    return {
      topic: tokens[0],
      empty: false,
      partitions: Number(v.partitions),
      messageCount: Number(v.message_count),
      messageBytes: Number(v.message_bytes),
      acceptPublish: v.accept_publish === 'true',
      acceptSubscribe: v.accept_subscribe === 'true',
    }
  })
}

export function parseOffsetsStats(body: string): PartitionStats[] {
  return statsLines(body).map((tokens) => {
    const v = pairs(tokens.slice(1))
    return {topic: tokens[0], partition: Number(v.part), minOffset: Number(v.min_offset), maxOffset: Number(v.max_offset)}
  })
}

/** meta's `stats partitions`: `<topic> <p> min_offset … last_append_ms …`. */
export function parsePartitionsStats(body: string): PartitionStats[] {
  return statsLines(body).map((tokens) => {
    const v = pairs(tokens.slice(2))
    return {
      topic: tokens[0],
      partition: Number(tokens[1]),
      minOffset: Number(v.min_offset),
      maxOffset: Number(v.max_offset),
      sizeBytes: Number(v.size_bytes),
      messageCount: Number(v.message_count),
      segments: Number(v.segments),
      unflushed: Number(v.unflushed),
      lastAppendMs: Number(v.last_append_ms),
      ...(v.closed === undefined ? {} : {closed: v.closed === 'true'}),
    }
  })
}

export function parseRealtimeValue(text: string): RealtimeValue | null {
  if (text === 'null' || text === '') return null
  const fields = new Map(text.split(',').map((kv) => kv.split('=') as [string, string]))
  const num = (key: string) => {
    const value = fields.get(key)
    return value === undefined || value === 'invalid' ? null : Number(value)
  }
  return {
    count: num('Count') ?? 0,
    value: num('Value') ?? 0,
    valuePerCount: num('Value/Count'),
    countPerSecond: num('Count/Duration'),
    durationSeconds: num('Duration') ?? 0,
  }
}

export function parseRealtimeStats(body: string): RealtimeStatsResult {
  const result: RealtimeStatsResult = {}
  for (const [key, value] of statsMap(body)) result[key] = parseRealtimeValue(value)
  return result
}

export function parseTopicStats(body: string): SingleTopicStats {
  const lines = statsLines(body)
  const m = statsMap(body)
  const realtime: RealtimeStatsResult = {}
  for (const [key, value] of m) if (key.startsWith('topic_realtime_')) realtime[key.slice(15)] = parseRealtimeValue(value)
  return {
    topic: lines[0]?.[0] ?? '',
    resultCode: Number(m.get('resultCode')),
    partitions: Number(m.get('partitions')),
    messageCount: Number(m.get('message_count')),
    bytes: Number(m.get('bytes')),
    realtime,
  }
}

function pairs(tokens: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < tokens.length; i += 2) out[tokens[i]] = tokens[i + 1]
  return out
}

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
    return this.conn.capabilities.meta ? parseDamageStats(await this.conn.stats('damage')) : []
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
    return JSON.parse(await this.text((out, opaque) => encodeGroupList(out, opaque))) as GroupSummary[]
  }

  /** Members, ownership and committed offsets of a group; NOT_FOUND for an unknown group. */
  async describeGroup(group: string): Promise<GroupDescription> {
    this.requireMeta('group describe')
    return JSON.parse(await this.text((out, opaque) => encodeGroupDescribe(out, group, opaque))) as GroupDescription
  }

  /** Delete a group's committed offsets (durable when this resolves); NOT_FOUND for an unknown group, BAD_REQUEST while it has live members. */
  async deleteGroup(group: string): Promise<void> {
    this.requireMeta('group delete')
    await this.text((out, opaque) => encodeGroupDelete(out, group, opaque))
  }

  /** A group's committed offsets (optionally only some topics). */
  async fetchOffsets(group: string, topics?: string[]): Promise<CommittedOffset[]> {
    this.requireMeta('offset fetch')
    return JSON.parse(await this.text((out, opaque) => encodeOffsetFetch(out, group, {topics}, opaque))) as CommittedOffset[]
  }

  /** Overwrite a group's committed offsets (durable when this resolves). */
  async commitOffsets(group: string, offsets: CommittedOffset[]): Promise<void> {
    this.requireMeta('offset commit')
    await this.text((out, opaque) => encodeOffsetCommit(out, group, offsets, opaque))
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
    if (frame.type === 'result' && frame.code === 400) throw new MetaError('CONFIG_INVALID', frame.body.toString('utf8'))
    return JSON.parse(resultText(frame)) as ReloadReport
  }

  /** Close partitions start..end of a topic (default: all): put and get answer 403 until reopened. */
  closePartitions(topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    return this.partitionsState('partitions-close', topic, start, end)
  }

  /** Reopen partitions start..end of a topic (default: every closed one). */
  openPartitions(topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    return this.partitionsState('partitions-open', topic, start, end)
  }

  private async partitionsState(type: 'partitions-close' | 'partitions-open', topic: string, start?: number, end?: number): Promise<PartitionsStateReply> {
    this.requireMeta(type.replace('-', ' '))
    const frame = await this.conn.requestAsync((out, opaque) => encodePartitionsState(out, {type, topic, start: start ?? -1, end: end ?? -1}, opaque))
    if (frame.type === 'result' && frame.code === 400) throw MetaError.invalidArgument(frame.body.toString('utf8'))
    return JSON.parse(resultText(frame)) as PartitionsStateReply
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
