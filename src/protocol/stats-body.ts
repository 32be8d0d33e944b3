/**
 * The bodies of `stats` answers (docs/protocol.md#stats), encoded by the broker and parsed by the
 * client with the same tables, so a field is named in one place.
 *
 *   STATS\r\n
 *   <key> <value…>\r\n      one line per stat, tokens joined by single spaces
 *   END\r\n
 *
 * MetaQ's clients read each line as key = text before the first space, value = the rest
 * (statsMap). Items and their lines:
 *
 *   ""                  system stats, fixed keys in MetaQ's order (SYSTEM_FIELDS), then a meta
 *                       broker's storage health (DAMAGE_FIELDS)
 *   topics              `<topic> partitions <n> message_count <n> message_bytes <n> accept_publish <b> accept_subscribe <b>`,
 *                       `<topic> *Empty*` for a configured topic without data
 *   offsets             `<topic> part <p> min_offset <n> max_offset <n>`
 *   partitions (meta)   `<topic> <p> min_offset <n> max_offset <n> size_bytes <n> message_count <n> segments <n> unflushed <n> last_append_ms <n> closed <b>`
 *   realtime            `realtime_<item> <realtime value>` for each REALTIME_ITEMS entry
 *   <topic>             `<topic>`, then `resultCode <0|1|2>`, partitions, message_count, bytes, topic_realtime_<item>…
 *   meta-capabilities   meta_version, broker_id, max_message_bytes, long_poll, groups, batch_put, transactions, sync_batch, sync_cut, sync_overlay, replicate, filter, topic_admin
 *   meta-connections    `<remote host:port> id <n> in_flight <n> pending_bytes <n> reading <b> idle_ms <n>`
 *   meta-sync           role, and on a sync master: slave_address, slave_connected, form, consecutive_failures,
 *                       left_zookeeper, partitions_catching_up, partitions_diverged
 *   damage (meta)       `<topic> <p> quarantined true code <CODE> reason <text…>` per quarantined partition,
 *                       `<topic> <p> damaged_range offset <n> bytes <n> reason <why> acknowledged <b> file <path…>` per damaged range
 *                       (a MetaQ broker answers it as an unknown topic: no meta_version line)
 *
 * meta's own items (meta-capabilities, meta-connections, meta-sync) are in meta-stats-body.ts.
 *
 * A realtime value is `Count=<c>,Value=<v>,Value/Count=<v/c>,Count/Duration=<c/d>,Duration=<d>`
 * (numbers as Java's DecimalFormat("#.##"); `invalid` for a division by 0), or `null` when
 * nothing was recorded.
 */

/** One line of a stats body: its tokens. */
export type StatsLine = ReadonlyArray<string | number | boolean>

/** `STATS\r\n` + lines + `END\r\n`. */
export function encodeStatsBody(lines: readonly StatsLine[]): string {
  let body = 'STATS\r\n'
  for (const line of lines) body += `${line.join(' ')}\r\n`
  return `${body}END\r\n`
}

/** A stats body as lines of tokens (the STATS and END lines removed). */
export function statsLines(body: string): string[][] {
  return body
    .split('\r\n')
    .filter((line) => line !== '' && line !== 'STATS' && line !== 'END')
    .map((line) => line.split(' '))
}

/** Key → value as MetaQ's client parses a stats body (key = text before the first space). */
export function statsMap(body: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const line of body.split('\r\n')) {
    if (line === '' || line === 'STATS' || line === 'END') continue
    const space = line.indexOf(' ')
    map.set(space < 0 ? line : line.slice(0, space), space < 0 ? '' : line.slice(space + 1))
  }
  return map
}

/** Java's DecimalFormat("#.##"): at most two decimals, no trailing zeros, no grouping. */
export function decimal(value: number): string {
  const rounded = Math.round(value * 100) / 100
  return Number.isInteger(rounded) ? String(rounded) : String(rounded).replace(/(\.\d*?)0+$/, '$1')
}

// ---------------------------------------------------------------------------------------
// System stats (no item)

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
  /** meta brokers only: failed logins, connections refused for their address's caps, requests refused for rights. */
  security?: {authFailures: number; connectionsRefused: number; accessDenied: number}
}

/** meta's lines after MetaQ's system stats: what the broker found damaged in its data. */
export interface StorageDamageStats {
  /** Partitions not served because their directory is damaged (see `stats damage`). */
  quarantinedPartitions: number
  /** Damaged ranges readers step over now, and their bytes. */
  damagedRanges: number
  damagedBytes: number
  /**
   * Damaged records (bad length or checksum) found since the broker started: by recovery,
   * reads, `offset` checks and the scrub.
   */
  crcFailures: number
  /** Sealed segments the background scrub has not checked yet. */
  unverifiedSegments: number
  /** Bytes the scrub has read. */
  scrubbedBytes: number
}

/** The system stats' keys on the wire, in MetaQ's order, and their fields. */
const SYSTEM_FIELDS: ReadonlyArray<readonly [string, keyof SystemStats]> = [
  ['pid', 'pid'],
  ['broker_id', 'brokerId'],
  ['port', 'port'],
  ['uptime', 'uptimeSeconds'],
  ['version', 'version'],
  ['slave', 'slave'],
  ['curr_connections', 'currentConnections'],
  ['threads', 'threads'],
  ['cmd_put', 'cmdPut'],
  ['cmd_get', 'cmdGet'],
  ['cmd_offset', 'cmdOffset'],
  ['tx_begin', 'txBegin'],
  ['tx_xa_begin', 'txXaBegin'],
  ['tx_commit', 'txCommit'],
  ['tx_rollback', 'txRollback'],
  ['get_miss', 'getMiss'],
  ['put_failed', 'putFailed'],
  ['total_messages', 'totalMessages'],
  ['topics', 'topics'],
  ['config_checksum', 'configChecksum'],
]

/** meta's storage-health keys, after MetaQ's (clients read stats as key/value pairs). */
const DAMAGE_FIELDS: ReadonlyArray<readonly [string, keyof StorageDamageStats]> = [
  ['quarantined_partitions', 'quarantinedPartitions'],
  ['damaged_ranges', 'damagedRanges'],
  ['damaged_bytes', 'damagedBytes'],
  ['crc_failures', 'crcFailures'],
  ['unverified_segments', 'unverifiedSegments'],
  ['scrubbed_bytes', 'scrubbedBytes'],
]

export function encodeSystemStats(stats: SystemStats): StatsLine[] {
  const lines: StatsLine[] = SYSTEM_FIELDS.map(([key, field]) => [key, stats[field] as string | number | boolean])
  const damage = stats.damage
  if (damage !== undefined) for (const [key, field] of DAMAGE_FIELDS) lines.push([key, damage[field]])
  return lines
}

export function parseSystemStats(body: string): SystemStats {
  const m = statsMap(body)
  const stats = {} as Record<keyof SystemStats, unknown>
  for (const [key, field] of SYSTEM_FIELDS) {
    const text = m.get(key)
    stats[field] = field === 'version' ? (text ?? '') : field === 'slave' ? text === 'true' : Number(text ?? Number.NaN)
  }
  if (m.has('auth_failures')) {
    const count = (key: string) => Number(m.get(key) ?? 0)
    stats.security = {authFailures: count('auth_failures'), connectionsRefused: count('connections_refused'), accessDenied: count('access_denied')}
  }
  if (m.has(DAMAGE_FIELDS[0][0])) {
    const damage = {} as StorageDamageStats
    for (const [key, field] of DAMAGE_FIELDS) damage[field] = Number(m.get(key) ?? Number.NaN)
    stats.damage = damage
  }
  return stats as unknown as SystemStats
}

/** One line of meta's `stats damage`: a quarantined partition, or a damaged range. */
export type DamageStats =
  | {kind: 'quarantined'; topic: string; partition: number; code: string; reason: string}
  | {kind: 'damaged-range'; topic: string; partition: number; offset: number; bytes: number; reason: string; acknowledged: boolean; file: string}

/** The stats item listing a meta broker's quarantined partitions and damaged ranges. */
export const DAMAGE_ITEM = 'damage'

export function encodeDamageStats(damage: readonly DamageStats[]): StatsLine[] {
  return damage.map((d) =>
    d.kind === 'quarantined'
      ? [d.topic, d.partition, 'quarantined', true, 'code', d.code, 'reason', d.reason]
      : [d.topic, d.partition, 'damaged_range', 'offset', d.offset, 'bytes', d.bytes, 'reason', d.reason, 'acknowledged', d.acknowledged, 'file', d.file],
  )
}

/** meta's `stats damage` (a quarantine's reason and a range's file are the rest of their line). */
export function parseDamageStats(body: string): DamageStats[] {
  return statsLines(body).flatMap((tokens): DamageStats[] => {
    const [topic, partitionText, kind] = tokens
    const partition = Number(partitionText)
    const rest = (key: string) => tokens.slice(tokens.indexOf(key) + 1).join(' ')
    if (kind === 'quarantined') return [{kind: 'quarantined', topic, partition, code: tokens[5], reason: rest('reason')}]
    if (kind !== 'damaged_range') return []
    const v = pairs(tokens.slice(3, tokens.indexOf('file')))
    return [
      {
        kind: 'damaged-range',
        topic,
        partition,
        offset: Number(v.offset),
        bytes: Number(v.bytes),
        reason: v.reason,
        acknowledged: v.acknowledged === 'true',
        file: rest('file'),
      },
    ]
  })
}

// ---------------------------------------------------------------------------------------
// topics, offsets, partitions

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

export function encodeTopicsStats(topics: readonly TopicStats[]): StatsLine[] {
  return topics.map((t) =>
    t.empty
      ? [t.topic, '*Empty*']
      : [
          t.topic,
          'partitions',
          t.partitions,
          'message_count',
          t.messageCount,
          'message_bytes',
          t.messageBytes,
          'accept_publish',
          t.acceptPublish,
          'accept_subscribe',
          t.acceptSubscribe,
        ],
  )
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

/** One line of `stats offsets` (plus meta's `stats partitions` detail when available). */
export interface PartitionStats {
  topic: string
  partition: number
  /** The broker holding it (set in cluster views that span brokers; never on the wire). */
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

export function encodeOffsetsStats(partitions: readonly PartitionStats[]): StatsLine[] {
  return partitions.map((p) => [p.topic, 'part', p.partition, 'min_offset', p.minOffset, 'max_offset', p.maxOffset])
}

export function parseOffsetsStats(body: string): PartitionStats[] {
  return statsLines(body).map((tokens) => {
    const v = pairs(tokens.slice(1))
    return {topic: tokens[0], partition: Number(v.part), minOffset: Number(v.min_offset), maxOffset: Number(v.max_offset)}
  })
}

/** meta's `stats partitions` line: the offsets line's fields and the detail after them. */
const PARTITION_DETAIL_FIELDS: ReadonlyArray<readonly [string, keyof PartitionStats]> = [
  ['min_offset', 'minOffset'],
  ['max_offset', 'maxOffset'],
  ['size_bytes', 'sizeBytes'],
  ['message_count', 'messageCount'],
  ['segments', 'segments'],
  ['unflushed', 'unflushed'],
  ['last_append_ms', 'lastAppendMs'],
]

export function encodePartitionsStats(partitions: readonly PartitionStats[]): StatsLine[] {
  return partitions.map((p) => [p.topic, p.partition, ...PARTITION_DETAIL_FIELDS.flatMap(([key, field]) => [key, p[field] ?? 0]), 'closed', p.closed ?? false])
}

export function parsePartitionsStats(body: string): PartitionStats[] {
  return statsLines(body).map((tokens) => {
    const v = pairs(tokens.slice(2))
    const stats: PartitionStats = {topic: tokens[0], partition: Number(tokens[1]), minOffset: 0, maxOffset: 0}
    for (const [key, field] of PARTITION_DETAIL_FIELDS) (stats as unknown as Record<string, number>)[field] = Number(v[key])
    // Brokers from before partition closing do not send it.
    if (v.closed !== undefined) stats.closed = v.closed === 'true'
    return stats
  })
}

// ---------------------------------------------------------------------------------------
// realtime, and one topic

/** The realtime items, in the order `stats realtime` lists them. */
export const REALTIME_ITEMS = ['put', 'get', 'offset', 'get_miss', 'put_failed', 'message_size'] as const
export type RealtimeItem = (typeof REALTIME_ITEMS)[number]

/** A realtime value: counts since the last reset (null when nothing was recorded). */
export interface RealtimeValue {
  count: number
  value: number
  /** null when count is 0 (`invalid` on the wire). */
  valuePerCount: number | null
  /** null when the duration is 0 (`invalid` on the wire). */
  countPerSecond: number | null
  durationSeconds: number
}

export type RealtimeStatsResult = Record<string, RealtimeValue | null>

/** A realtime value from its count, summed value and the seconds since the last reset. */
export function realtimeValue(count: number, value: number, durationSeconds: number): RealtimeValue | null {
  if (count === 0) return null
  return {
    count,
    value,
    valuePerCount: value / count,
    countPerSecond: durationSeconds === 0 ? null : count / durationSeconds,
    durationSeconds,
  }
}

export function formatRealtimeValue(v: RealtimeValue | null): string {
  if (v === null) return 'null'
  const ratio = (x: number | null) => (x === null ? 'invalid' : decimal(x))
  return (
    `Count=${v.count},Value=${decimal(v.value)},Value/Count=${ratio(v.valuePerCount)},` +
    `Count/Duration=${ratio(v.countPerSecond)},Duration=${decimal(Math.round(v.durationSeconds))}`
  )
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

export function encodeRealtimeStats(values: Readonly<Record<RealtimeItem, RealtimeValue | null>>): StatsLine[] {
  return REALTIME_ITEMS.map((item) => [`realtime_${item}`, formatRealtimeValue(values[item])])
}

/** `stats realtime`: key (e.g. `realtime_put`) → value. */
export function parseRealtimeStats(body: string): RealtimeStatsResult {
  const result: RealtimeStatsResult = {}
  for (const [key, value] of statsMap(body)) result[key] = parseRealtimeValue(value)
  return result
}

/** `stats <topic>`. resultCode: 0 = has data, 1 = unknown topic, 2 = configured without data. */
export interface SingleTopicStats {
  topic: string
  resultCode: number
  partitions: number
  messageCount: number
  bytes: number
  /** By realtime item name (`put`, `get`, …). */
  realtime: RealtimeStatsResult
}

export function encodeTopicStats(stats: SingleTopicStats): StatsLine[] {
  return [
    [stats.topic],
    ['resultCode', stats.resultCode],
    ['partitions', stats.partitions],
    ['message_count', stats.messageCount],
    ['bytes', stats.bytes],
    ...REALTIME_ITEMS.map((item) => [`topic_realtime_${item}`, formatRealtimeValue(stats.realtime[item] ?? null)]),
  ]
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

// ---------------------------------------------------------------------------------------
// meta-capabilities

/** `k1 v1 k2 v2 …` tokens as key → value. */
export function pairs(tokens: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < tokens.length; i += 2) out[tokens[i]] = tokens[i + 1]
  return out
}
