/**
 * `meta stats`: what each stats item looks like as a table, and the typed object it gives
 * under --json. Fetching goes through the admin client; this file only shapes and renders.
 *
 *   (none)     system stats: a two-column key/value table, uptime humanised
 *   topics     TOPIC PARTITIONS MESSAGES BYTES PUBLISH SUBSCRIBE
 *   offsets    TOPIC PARTITION LOG-START LOG-END (MetaQ's min_offset, max_offset)
 *   partitions the same plus size, messages, segments, unflushed, last append (meta brokers)
 *   damage     TOPIC PARTITION STATE OFFSET BYTES REASON (meta brokers: quarantined partitions, damaged ranges)
 *   realtime   ITEM COUNT VALUE VALUE/COUNT COUNT/S DURATION
 *   config     the broker's server.ini text as-is
 *   help       ITEM DESCRIPTION
 *   reset      one line saying the realtime counters were reset
 *   <topic>    a two-column table of the topic's stats and its realtime lines
 */
import type {AdminClient, DamageStats, PartitionStats, RealtimeStatsResult, RealtimeValue, SingleTopicStats, SystemStats, TopicStats} from '../client/admin.js'
import {statsMap} from '../client/admin.js'
import {OutputSink} from './output-sink.js'
import {watchStdoutReader} from './reader-watch.js'
import {MetaError} from '../protocol/errors.js'
import {formatBytes, formatCount, formatDuration, renderTable, type Cell} from './output.js'

/** The items MetaQ (and meta) answer; anything else is taken as a topic name. */
export const STATS_ITEMS = [
  'topics',
  'offsets',
  'partitions',
  'damage',
  'realtime',
  'config',
  'help',
  'reset',
  'meta-capabilities',
  'meta-sync',
  'meta-principals',
] as const

interface HelpLine {
  item: string
  description: string
}

/** What `meta stats <item> --json` prints, per item. */
export type StatsResult =
  | {item: 'system'; stats: SystemStats & {metaVersion?: string}}
  | {item: 'topics'; stats: TopicStats[]}
  | {item: 'offsets'; stats: PartitionStats[]}
  | {item: 'partitions'; stats: PartitionStats[]}
  | {item: 'damage'; stats: DamageStats[]}
  | {item: 'realtime'; stats: RealtimeStatsResult}
  | {item: 'config'; stats: {text: string}}
  | {item: 'help'; stats: HelpLine[]}
  | {item: 'reset'; stats: {reset: true}}
  | {item: 'topic'; stats: SingleTopicStats}
  | {item: 'meta-capabilities' | 'meta-sync'; stats: Record<string, string>}
  | {item: 'meta-principals'; stats: PrincipalRow[]}

/** Fetch one item as a typed object. Throws NOT_FOUND for a topic the broker does not know. */
export async function fetchStats(admin: AdminClient, item: string | undefined, broker: string): Promise<StatsResult> {
  switch (item ?? '') {
    case '':
      // `version` is MetaQ's (what MetaQ clients check); meta's own comes with the capabilities.
      return {item: 'system', stats: {...(await admin.systemStats()), metaVersion: admin.conn.capabilities.version}}
    case 'topics':
      return {item: 'topics', stats: await topicsWithCounts(admin)}
    case 'offsets':
      // MetaQ's offsets item carries the two offsets only: an empty partition has the same shape.
      return {
        item: 'offsets',
        stats: (await withEmpty(admin, await admin.offsets())).map(
          ({topic, partition, minOffset, maxOffset}) => ({topic, partition, minOffset, maxOffset}) as PartitionStats,
        ),
      }
    case 'partitions':
      return {item: 'partitions', stats: await withEmpty(admin, await admin.partitions())}
    case 'damage':
      return {item: 'damage', stats: await admin.damage()}
    case 'realtime':
      return {item: 'realtime', stats: await admin.realtime()}
    case 'config':
      return {item: 'config', stats: {text: await admin.config()}}
    case 'help':
      return {item: 'help', stats: parseHelp(await admin.raw('help'))}
    case 'reset':
      await admin.resetRealtime()
      return {item: 'reset', stats: {reset: true}}
    // meta's own items (docs/protocol.md): `key value` lines, shown as they are.
    case 'meta-capabilities':
    case 'meta-sync':
      return {item: item as 'meta-capabilities' | 'meta-sync', stats: Object.fromEntries(statsMap(await admin.raw(item)))}
    case 'meta-principals':
      return {item: 'meta-principals', stats: parsePrincipals(await admin.raw(item))}
    default: {
      const stats = await admin.topic(item!)
      if (stats.resultCode === 1) throw await unknownItem(admin, item!, broker)
      return {item: 'topic', stats}
    }
  }
}

/**
 * Partitions without data yet (configured, or added by a reload) listed as empty, as `topic
 * describe` and `partitions close` count them: the broker's own list has only those with a log.
 */
async function withEmpty(admin: AdminClient, rows: PartitionStats[]): Promise<PartitionStats[]> {
  const {withEmptyPartitions} = await import('./admin/views.js')
  return withEmptyPartitions(
    admin,
    rows,
    (await admin.topics()).map((t) => t.topic),
  )
}

/** `stats topics`: a topic without data (MetaQ's `*Empty*`) with the partitions it will have (meta brokers). */
async function topicsWithCounts(admin: AdminClient): Promise<TopicStats[]> {
  const topics = await admin.topics()
  if (!admin.conn.capabilities.meta) return topics
  return Promise.all(topics.map(async (t) => (t.empty ? {...t, partitions: await admin.partitionCount(t.topic)} : t)))
}

/** `meta stats topcs`: the close item names first ("topics"), else the close topic names. */
async function unknownItem(admin: AdminClient, item: string, broker: string): Promise<MetaError & {hint?: string}> {
  const {closeNames, quoteList, unknownTopicError} = await import('./suggest.js')
  const items = closeNames(item, STATS_ITEMS, 2)
  if (items.length > 0) {
    const error = new MetaError('NOT_FOUND', `unknown stats item or topic "${item}" on broker ${broker}`, {details: {topic: item}}) as MetaError & {
      hint?: string
    }
    error.hint = `did you mean the item ${quoteList(items)}? (items: ${STATS_ITEMS.join(', ')}; anything else is a topic name)`
    return error
  }
  return unknownTopicError(
    item,
    (await admin.topics()).map((t) => t.topic),
    `broker ${broker}`,
  )
}

function parseHelp(body: string): HelpLine[] {
  return [...statsMap(body)].map(([item, description]) => ({item, description}))
}

/** The human form of an item (a table, or the config text). Always ends with a newline. */
export function renderStats(result: StatsResult, nowMs = Date.now()): string {
  const text = renderBody(result, nowMs)
  return text.endsWith('\n') || text === '' ? text : `${text}\n`
}

function renderBody(result: StatsResult, nowMs: number): string {
  switch (result.item) {
    case 'system':
      return renderSystem(result.stats)
    case 'topics':
      return renderTopics(result.stats)
    case 'offsets':
      return renderTable(
        ['TOPIC', 'PARTITION', 'LOG-START', 'LOG-END'],
        result.stats.map((p) => [p.topic, p.partition, p.minOffset, p.maxOffset]),
        {align: ['left', 'right', 'right', 'right']},
      )
    case 'partitions':
      return renderPartitions(result.stats, nowMs)
    case 'damage':
      return renderDamage(result.stats)
    case 'realtime':
      return renderRealtime(Object.entries(result.stats))
    case 'config':
      return result.stats.text
    case 'help':
      return renderTable(
        ['ITEM', 'DESCRIPTION'],
        result.stats.map((h) => [h.item, h.description]),
        {align: ['left', 'left']},
      )
    case 'reset':
      return 'realtime statistics reset'
    case 'topic':
      return renderTopic(result.stats)
    case 'meta-capabilities':
    case 'meta-sync':
      return keyValue(Object.entries(result.stats))
    case 'meta-principals':
      return renderPrincipals(result.stats)
  }
}

// renderTable needs explicit alignments: cli-table3 crashes on `colAligns: undefined`.
function keyValue(rows: Cell[][]): string {
  return renderTable(['KEY', 'VALUE'], rows, {align: ['left', 'left']})
}

function renderSystem(s: SystemStats & {metaVersion?: string}): string {
  return keyValue([
    ['pid', s.pid],
    ['broker_id', s.brokerId],
    ['port', s.port],
    ['uptime', formatDuration(s.uptimeSeconds)],
    ['meta_version', s.metaVersion ?? '- (not a meta broker)'],
    ['version', `${s.version} (the MetaQ version MetaQ clients are told)`],
    ['slave', s.slave],
    ['curr_connections', s.currentConnections],
    ['threads', s.threads],
    ['cmd_put', formatCount(s.cmdPut)],
    ['cmd_get', formatCount(s.cmdGet)],
    ['cmd_offset', formatCount(s.cmdOffset)],
    ['tx_begin', s.txBegin],
    ['tx_xa_begin', s.txXaBegin],
    ['tx_commit', s.txCommit],
    ['tx_rollback', s.txRollback],
    ['get_miss', formatCount(s.getMiss)],
    ['put_failed', formatCount(s.putFailed)],
    ['total_messages', formatCount(s.totalMessages)],
    ['topics', s.topics],
    ['config_checksum', s.configChecksum],
    ...(s.damage === undefined
      ? []
      : [
          ['quarantined_partitions', s.damage.quarantinedPartitions],
          ['damaged_ranges', `${s.damage.damagedRanges} (${formatBytes(s.damage.damagedBytes)})`],
          ['crc_failures', s.damage.crcFailures],
          ['unverified_segments', s.damage.unverifiedSegments],
          ['scrubbed', formatBytes(s.damage.scrubbedBytes)],
        ]),
    ...(s.security === undefined
      ? []
      : [
          ['auth_failures', formatCount(s.security.authFailures)],
          ['connections_refused', formatCount(s.security.connectionsRefused)],
          ['access_denied', formatCount(s.security.accessDenied)],
        ]),
  ])
}

/** `stats meta-principals`: one row per user, each count with its limit (`-`: none). */
function renderPrincipals(rows: PrincipalRow[]): string {
  const of = (value: number, limit: string) => (limit === '-' ? formatCount(value) : `${formatCount(value)}/${limit}`)
  const rate = (limit: string) => (limit === '-' ? '' : ` (${formatBytes(Number(limit))}/s)`)
  return renderTable(
    ['USER', 'CONNECTIONS', 'GROUPS', 'PARTITIONS', 'PRODUCED', 'FETCHED', 'THROTTLED'],
    rows.map((r) => [
      r.user,
      of(r.connections, r.connectionsLimit),
      of(r.groups, r.groupsLimit),
      of(r.partitions, r.partitionsLimit),
      `${formatBytes(r.produceBytes)}${rate(r.produceByteRate)}`,
      `${formatBytes(r.fetchBytes)}${rate(r.fetchByteRate)}`,
      formatDuration(r.throttledMs / 1000),
    ]),
    {align: ['left', 'right', 'right', 'right', 'right', 'right', 'right']},
  )
}

/** One line of `stats meta-principals`: numbers, and limits as the broker wrote them (`-`: none). */
interface PrincipalRow {
  user: string
  connections: number
  connectionsLimit: string
  groups: number
  groupsLimit: string
  partitions: number
  partitionsLimit: string
  produceBytes: number
  produceByteRate: string
  fetchBytes: number
  fetchByteRate: string
  throttledMs: number
}

function parsePrincipals(body: string): PrincipalRow[] {
  return [...statsMap(body)].map(([user, rest]) => {
    const words = rest.split(' ')
    const get = (key: string) => words[words.indexOf(key) + 1] ?? '-'
    return {
      user,
      connections: Number(get('connections')),
      connectionsLimit: get('connections_limit'),
      groups: Number(get('groups')),
      groupsLimit: get('groups_limit'),
      partitions: Number(get('partitions')),
      partitionsLimit: get('partitions_limit'),
      produceBytes: Number(get('produce_bytes')),
      produceByteRate: get('produce_byte_rate'),
      fetchBytes: Number(get('fetch_bytes')),
      fetchByteRate: get('fetch_byte_rate'),
      throttledMs: Number(get('throttled_ms')),
    }
  })
}

function renderDamage(lines: DamageStats[]): string {
  if (lines.length === 0) return 'no quarantined partitions and no damaged ranges'
  return renderTable(
    ['TOPIC', 'PARTITION', 'STATE', 'OFFSET', 'BYTES', 'REASON'],
    lines.map((d) =>
      d.kind === 'quarantined'
        ? [d.topic, d.partition, 'quarantined', '-', '-', d.reason]
        : [d.topic, d.partition, d.acknowledged ? 'damaged (acknowledged)' : 'damaged', d.offset, d.bytes, `${d.reason} in ${d.file}`],
    ),
    {align: ['left', 'right', 'left', 'right', 'right', 'left']},
  )
}

function renderTopics(topics: TopicStats[]): string {
  return renderTable(
    ['TOPIC', 'PARTITIONS', 'MESSAGES', 'BYTES', 'PUBLISH', 'SUBSCRIBE'],
    topics.map((t) =>
      t.empty
        ? [t.topic, t.partitions > 0 ? t.partitions : '-', '0 (no data yet)', formatBytes(0), '-', '-']
        : [t.topic, t.partitions, formatCount(t.messageCount), formatBytes(t.messageBytes), yesNo(t.acceptPublish), yesNo(t.acceptSubscribe)],
    ),
    {align: ['left', 'right', 'right', 'right', 'left', 'left']},
  )
}

function renderPartitions(partitions: PartitionStats[], nowMs: number): string {
  return renderTable(
    ['TOPIC', 'PARTITION', 'LOG-START', 'LOG-END', 'SIZE', 'MESSAGES', 'SEGMENTS', 'UNFLUSHED', 'LAST-APPEND'],
    partitions.map((p) => [
      p.topic,
      p.partition,
      p.minOffset,
      p.maxOffset,
      p.sizeBytes === undefined ? undefined : formatBytes(p.sizeBytes),
      p.messageCount === undefined ? undefined : formatCount(p.messageCount),
      p.segments,
      p.unflushed,
      p.lastAppendMs === undefined || p.lastAppendMs <= 0 ? undefined : `${formatDuration(Math.max(0, (nowMs - p.lastAppendMs) / 1000))} ago`,
    ]),
    {align: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right']},
  )
}

function renderRealtime(entries: Array<[string, RealtimeValue | null]>): string {
  return renderTable(
    ['ITEM', 'COUNT', 'VALUE', 'VALUE/COUNT', 'COUNT/S', 'DURATION'],
    entries.map(([name, v]) =>
      v === null
        ? [name, '-', '-', '-', '-', '-']
        : [name, formatCount(v.count), formatCount(v.value), num(v.valuePerCount), num(v.countPerSecond), formatDuration(v.durationSeconds)],
    ),
    {align: ['left', 'right', 'right', 'right', 'right', 'right']},
  )
}

function renderTopic(t: SingleTopicStats): string {
  const summary = keyValue([
    ['topic', t.topic],
    ['data', t.resultCode === 0 ? 'yes' : 'no (configured, nothing stored yet)'],
    ['partitions', t.partitions],
    ['message_count', formatCount(t.messageCount)],
    ['bytes', formatBytes(t.bytes)],
  ])
  const realtime = renderRealtime(Object.entries(t.realtime).map(([name, v]) => [`topic_realtime_${name}`, v]))
  return `${summary}\n\n${realtime}`
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no'
}

function num(value: number | null): string {
  if (value === null) return '-'
  return Number.isInteger(value) ? formatCount(value) : value.toFixed(2)
}

interface WatchOptions {
  item: string | undefined
  raw: boolean
  json: boolean
  intervalMs: number
  /** The broker's address, for the header line. */
  broker: string
  stdout?: NodeJS.WritableStream & {isTTY?: boolean}
}

/**
 * `meta stats --watch`: fetch and print every intervalMs until SIGINT/SIGTERM, or until the
 * reader of stdout goes away (`meta stats --watch 1s | head -2`: EPIPE is a normal end). A
 * failed fetch ends the command with its error.
 */
export async function watchStats(admin: AdminClient, options: WatchOptions): Promise<void> {
  const stdout = options.stdout ?? process.stdout
  const tty = stdout.isTTY === true
  const sink = new OutputSink(stdout)
  let wake: (() => void) | undefined
  let stopped = false
  const stop = () => {
    stopped = true
    wake?.()
  }
  sink.onClosed = stop
  // Between two snapshots nothing is written: the reader leaving is noticed without a write.
  const reader = options.stdout === undefined ? watchStdoutReader(stop) : undefined
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    while (!stopped) {
      const text = await snapshot(admin, options)
      if (stopped) break
      const header = `Every ${formatInterval(options.intervalMs)}: meta stats ${options.item ?? ''} (${options.broker})  ${new Date().toISOString()}`
      const clear = '\u001B[2J\u001B[H'
      const block = options.json || options.raw ? (tty ? `${clear}${text}` : text) : tty ? `${clear}${header}\n\n${text}` : `--- ${header}\n${text}\n`
      await sink.write(block)
      if (sink.closed) break
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.intervalMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
    await sink.flush()
  } finally {
    reader?.dispose()
    sink.dispose()
    process.off('SIGINT', stop)
    process.off('SIGTERM', stop)
  }
}

async function snapshot(admin: AdminClient, options: WatchOptions): Promise<string> {
  if (options.raw) return admin.raw(options.item ?? '')
  const result = await fetchStats(admin, options.item, options.broker)
  return options.json ? `${JSON.stringify(result.stats)}\n` : renderStats(result)
}

function formatInterval(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}
