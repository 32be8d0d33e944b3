/**
 * stats (docs/protocol.md#stats): every item in MetaQ's text format, plus meta's `partitions` item.
 *
 *   ""         system stats, fixed keys in MetaQ's order
 *   topics     `<topic> partitions <n> message_count <n> message_bytes <n> accept_publish <b> accept_subscribe <b>`
 *              (`<topic> *Empty*` for a configured topic without data)
 *   offsets    `<topic> part <p> min_offset <n> max_offset <n>`
 *   realtime   realtime_put, realtime_get, … each with a realtime value
 *   config     the raw server.ini bytes (no STATS/END wrapper)
 *   meta-topic-overlay (meta) the topic overlay as JSON (no STATS/END wrapper; topic-overlay.ts)
 *   help       the items and what they return
 *   reset      resets realtime stats: `reset ok`
 *   partitions (meta) `<topic> <p> min_offset <n> max_offset <n> size_bytes <n> message_count <n> segments <n> unflushed <n> last_append_ms <n> closed <b>`
 *   meta-principals (meta) `<user> connections <n> connections_limit <n|-> groups <n> groups_limit <n|-> partitions <n> partitions_limit <n|-> produce_bytes <n> produce_byte_rate <n|-> fetch_bytes <n> fetch_byte_rate <n|-> throttled_ms <n>`
 *   meta-connections (meta) `<remote host:port> id <n> in_flight <n> pending_bytes <n> reading <b> idle_ms <n>`
 *   damage     (meta) `<topic> <p> quarantined true code <CODE> reason <text…>` per quarantined partition,
 *              `<topic> <p> damaged_range offset <n> bytes <n> reason <why> acknowledged <b> file <path…>` per damaged range
 *   <topic>    per-topic stats with resultCode 0 (data), 1 (unknown), 2 (configured, no data)
 */
import {META_VERSION} from '../../package-info.js'
import {PROTOCOL_VERSION} from '../../protocol/index.js'
import {RECORD_HEADER_BYTES} from '../../protocol/message-set.js'
import type {StatsCommand} from '../../protocol/commands/stats.js'
import {Status} from '../../protocol/errors.js'
import {
  DAMAGE_ITEM,
  REALTIME_ITEMS,
  encodeDamageStats,
  encodeOffsetsStats,
  encodePartitionsStats,
  encodeRealtimeStats,
  encodeStatsBody,
  encodeSystemStats,
  encodeTopicStats,
  encodeTopicsStats,
  type DamageStats,
  type PartitionStats,
  type RealtimeItem,
  type RealtimeValue,
  type StatsLine,
  type SystemStats,
  type TopicStats,
} from '../../protocol/stats-body.js'
import {CAPABILITIES_ITEM, CONNECTIONS_ITEM, SYNC_ITEM, encodeSyncStats, encodeCapabilities, encodeConnectionsStats} from '../../protocol/meta-stats-body.js'
import type {PartitionInfo} from '../../storage/index.js'
import {renderServerIni} from '../config/index.js'
import type {Connection} from '../connection.js'
import {isSyncSlave, type BrokerContext} from '../context.js'
import {STATS_HELP_LINES} from '../stats.js'
import {principalStats} from '../auth/limits.js'
import {SEES_ALL, visibilityOf, type Visibility} from '../auth/visibility.js'

/** meta's stats item of each user's usage and limits. */
const PRINCIPALS_ITEM = 'meta-principals'
import {TOPIC_OVERLAY_ITEM, topicOverlayJson} from '../topic-overlay.js'

export function handleStats(ctx: BrokerContext, conn: Connection, frame: StatsCommand): void {
  const item = frame.item
  const rights = ctx.access?.rightsOf(conn.user)
  const seen = rights === undefined ? SEES_ALL : visibilityOf(rights)
  // server.ini and the overlay name every topic: for admins and slaves (which copy them) only.
  if ((item === 'config' || item === TOPIC_OVERLAY_ITEM) && !seen.admin && rights?.allows('replicate', '*') !== true) {
    const who = conn.user === undefined ? 'an anonymous connection' : `user "${conn.user}"`
    const message = `access denied: ${who} lacks the "admin" or "replicate" right on this broker (stats ${item} names every topic)`
    ctx.access?.audit.refused(conn.user ?? '(anonymous)', conn.socket.remoteAddress ?? conn.remote, 'stats', `admin ${item}`, message)
    conn.sendError('ACCESS_DENIED', frame.opaque, message)
    return
  }
  if (item === 'config') {
    conn.sendResult(Status.OK, frame.opaque, ctx.config.source?.bytes ?? Buffer.from(renderServerIni(ctx.config)))
    return
  }
  if (item === TOPIC_OVERLAY_ITEM) {
    conn.sendResult(Status.OK, frame.opaque, JSON.stringify(topicOverlayJson(ctx.topicOverlay())))
    return
  }
  conn.sendResult(Status.OK, frame.opaque, encodeStatsBody(statsLines(ctx, item, conn, seen)))
}

/**
 * meta extension: each user's usage and limits (auth/quota.ts), `-` for no limit: every user for
 * an admin, the connection's own user otherwise (none for an anonymous connection).
 */
function principalLines(ctx: BrokerContext, conn: Connection): StatsLine[] {
  if (ctx.access === undefined) return []
  const limit = (value: number | undefined) => value ?? '-'
  return principalStats(ctx, ctx.access, conn).map((p) => [
    p.user,
    `connections ${p.connections} connections_limit ${limit(p.limits.connections)} groups ${p.groups} groups_limit ${limit(p.limits.groups)} partitions ${p.partitions} partitions_limit ${limit(p.limits.partitions)} produce_bytes ${p.producedBytes} produce_byte_rate ${limit(p.limits.produceByteRate)} fetch_bytes ${p.fetchedBytes} fetch_byte_rate ${limit(p.limits.fetchByteRate)} throttled_ms ${p.throttledMs}`,
  ])
}

/** The lines of one stats item (everything but `config`). */
function statsLines(ctx: BrokerContext, item: string, conn: Connection, seen: Visibility): StatsLine[] {
  switch (item) {
    case '':
      // meta's lines: failed logins since start (0 without access control), connections refused for
      // their address's caps, requests refused for rights.
      return [
        ...encodeSystemStats(systemStats(ctx)),
        ['auth_failures', ctx.access?.failures ?? 0],
        ['connections_refused', ctx.connectionsRefused()],
        ['access_denied', ctx.access?.audit.refusals ?? 0],
      ]
    case 'topics':
      return encodeTopicsStats(topicsStats(ctx).filter((t) => seen.topic(t.topic)))
    case 'offsets':
      return encodeOffsetsStats(partitionStats(ctx).filter((p) => seen.topic(p.topic)))
    case 'partitions':
      return encodePartitionsStats(partitionStats(ctx).filter((p) => seen.topic(p.topic)))
    case 'realtime':
      return encodeRealtimeStats(realtime(ctx))
    case 'help':
      return STATS_HELP_LINES.map(([name, text]) => [name, text])
    case CAPABILITIES_ITEM:
      return capabilityLines(ctx)
    case CONNECTIONS_ITEM:
      // Client addresses: an admin's to see.
      return seen.admin ? connectionLines(ctx) : []
    case PRINCIPALS_ITEM:
      return principalLines(ctx, conn)
    case SYNC_ITEM:
      return encodeSyncStats(ctx.sync?.stats() ?? {role: isSyncSlave(ctx) ? 'slave' : 'none'})
    case DAMAGE_ITEM:
      return encodeDamageStats(damage(ctx).filter((d) => seen.topic(d.topic)))
    case 'reset':
      ctx.realtime.reset()
      return [['reset', 'ok']]
    default:
      // A topic the principal may not see is answered as one the broker does not know.
      return topicLines(ctx, item, seen.topic(item))
  }
}

/**
 * meta extension: one line per connection, for operators looking for the client that holds
 * memory (pending_bytes: answers not yet taken by the socket plus requests in flight) or that
 * the broker has stopped reading (reading false: at its limit, or ending).
 */
function connectionLines(ctx: BrokerContext): StatsLine[] {
  const now = Date.now()
  return encodeConnectionsStats(
    [...ctx.connections()].map((c) => ({
      remote: c.remote,
      id: c.id,
      inFlight: c.requestsInFlight,
      pendingBytes: c.pendingBytes,
      reading: c.reading,
      idleMs: now - c.lastRequestAtMs,
    })),
  )
}

/**
 * meta extension: what this broker supports beyond MetaQ 1.4. Clients ask for this item when
 * they connect; a MetaQ broker treats it as an unknown topic (no meta_version line), so
 * clients fall back to plain MetaQ requests.
 */
function capabilityLines(ctx: BrokerContext): StatsLine[] {
  return encodeCapabilities({
    version: META_VERSION,
    brokerId: ctx.config.system.brokerId,
    maxMessageBytes: ctx.config.system.maxTransferBytes - RECORD_HEADER_BYTES,
    longPoll: true,
    groups: true,
    batchPut: true,
    // Transactions are refused under synchronous replication (as MetaQ's samsa and gregor do).
    transactions: ctx.sync === undefined && !isSyncSlave(ctx),
    syncBatch: isSyncSlave(ctx),
    syncCut: isSyncSlave(ctx),
    syncOverlay: isSyncSlave(ctx),
    replicate: true,
    filter: true,
    topicAdmin: true,
  }).concat([['auth_mechanisms', 'SCRAM-SHA-256 PLAIN']])
}

function systemStats(ctx: BrokerContext): SystemStats {
  const c = ctx.counters
  const infos = partitionInfos(ctx)
  return {
    pid: process.pid,
    brokerId: ctx.config.system.brokerId,
    port: ctx.port,
    uptimeSeconds: Math.floor((Date.now() - ctx.startedAtMs) / 1000),
    version: PROTOCOL_VERSION,
    slave: ctx.replica !== undefined || isSyncSlave(ctx),
    currentConnections: ctx.connectionCount(),
    // One JavaScript thread plus libuv's file-I/O pool.
    threads: 1 + Number(process.env.UV_THREADPOOL_SIZE ?? 4),
    cmdPut: c.cmdPut,
    cmdGet: c.cmdGet,
    cmdOffset: c.cmdOffset,
    txBegin: c.txBegin,
    txXaBegin: c.txXaBegin,
    txCommit: c.txCommit,
    txRollback: c.txRollback,
    getMiss: c.getMiss,
    putFailed: c.putFailed,
    totalMessages: infos.reduce((sum, p) => sum + p.messageCount, 0),
    topics: ctx.store.topics().length,
    configChecksum: ctx.config.checksum,
    damage: ctx.store.health(),
  }
}

/** Quarantined partitions, then every damaged range readers step over. */
function damage(ctx: BrokerContext): DamageStats[] {
  const found: DamageStats[] = ctx.store
    .quarantined()
    .map((q) => ({kind: 'quarantined', topic: q.topic, partition: q.partition, code: q.code, reason: q.reason}))
  for (const log of ctx.store.list()) {
    for (const r of log.damagedRanges()) {
      found.push({kind: 'damaged-range', topic: log.topic, partition: log.partition, ...r})
    }
  }
  return found
}

function topicsStats(ctx: BrokerContext): TopicStats[] {
  const topics: TopicStats[] = []
  const withData = new Set<string>()
  // One pass over the partitions (a list and a filter per topic made each stats request quadratic in partitions).
  const byTopic = new Map<string, PartitionInfo[]>()
  for (const log of ctx.store.list()) {
    const infos = byTopic.get(log.topic)
    if (infos === undefined) byTopic.set(log.topic, [log.info()])
    else infos.push(log.info())
  }
  for (const [topic, infos] of byTopic) {
    withData.add(topic)
    const resolved = ctx.topics.resolve(topic)
    topics.push({
      topic,
      empty: false,
      // The configured count (what producers and consumers use), not how many hold data yet.
      partitions: resolved?.numPartitions ?? infos.length,
      messageCount: infos.reduce((s, p) => s + p.messageCount, 0),
      messageBytes: infos.reduce((s, p) => s + p.sizeBytes, 0),
      acceptPublish: resolved?.acceptPublish ?? false,
      acceptSubscribe: resolved?.acceptSubscribe ?? false,
    })
  }
  for (const topic of ctx.topics.configuredTopics()) {
    if (!withData.has(topic)) {
      topics.push({topic, empty: true, partitions: 0, messageCount: 0, messageBytes: 0, acceptPublish: true, acceptSubscribe: true})
    }
  }
  return topics
}

function partitionStats(ctx: BrokerContext): PartitionStats[] {
  return partitionInfos(ctx).map((p) => ({
    topic: p.topic,
    partition: p.partition,
    minOffset: p.minOffset,
    maxOffset: p.maxOffset,
    sizeBytes: p.sizeBytes,
    messageCount: p.messageCount,
    segments: p.segmentCount,
    unflushed: p.unflushedCount,
    lastAppendMs: p.lastAppendMs,
    closed: ctx.topics.isClosed(p.topic, p.partition),
  }))
}

function realtime(ctx: BrokerContext, topic?: string): Record<RealtimeItem, RealtimeValue | null> {
  const values = {} as Record<RealtimeItem, RealtimeValue | null>
  for (const item of REALTIME_ITEMS) values[item] = ctx.realtime.value(item, topic)
  return values
}

function topicLines(ctx: BrokerContext, topic: string, seen: boolean): StatsLine[] {
  const infos = seen
    ? ctx.store
        .list()
        .filter((l) => l.topic === topic)
        .map((l) => l.info())
    : []
  const configured = seen && ctx.topics.configuredTopics().includes(topic)
  const resultCode = infos.length > 0 ? 0 : configured ? 2 : 1
  return encodeTopicStats({
    topic,
    resultCode,
    partitions: resultCode === 1 ? 0 : (ctx.topics.resolve(topic)?.numPartitions ?? infos.length),
    messageCount: infos.reduce((s, p) => s + p.messageCount, 0),
    bytes: infos.reduce((s, p) => s + p.sizeBytes, 0),
    realtime: realtime(ctx, seen ? topic : ''),
  })
}

function partitionInfos(ctx: BrokerContext): PartitionInfo[] {
  return ctx.store.list().map((log) => log.info())
}
