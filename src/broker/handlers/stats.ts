/**
 * stats (spec §9): every item in MetaQ's text format, plus meta's `partitions` item.
 *
 *   ""         system stats, fixed keys in MetaQ's order
 *   topics     `<topic> partitions <n> message_count <n> message_bytes <n> accept_publish <b> accept_subscribe <b>`
 *              (`<topic> *Empty*` for a configured topic without data)
 *   offsets    `<topic> part <p> min_offset <n> max_offset <n>`
 *   realtime   realtime_put, realtime_get, … each with a realtime value
 *   config     the raw server.ini bytes (no STATS/END wrapper)
 *   help       the items and what they return
 *   reset      resets realtime stats: `reset ok`
 *   partitions (meta) `<topic> <p> min_offset <n> max_offset <n> size_bytes <n> message_count <n> segments <n> unflushed <n> last_append_ms <n> closed <b>`
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
import type {PartitionInfo} from '../../storage/index.js'
import {renderServerIni} from '../config/index.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'
import {REALTIME_ITEMS, STATS_HELP_LINES, renderStats} from '../stats.js'

type Line = Array<string | number | boolean>

export function handleStats(ctx: BrokerContext, conn: Connection, frame: StatsCommand): void {
  const item = frame.item
  if (item === 'config') {
    conn.sendResult(Status.OK, frame.opaque, ctx.config.source?.bytes ?? Buffer.from(renderServerIni(ctx.config)))
    return
  }
  conn.sendResult(Status.OK, frame.opaque, renderStats(statsLines(ctx, item)))
}

/** The lines of one stats item (everything but `config`). */
export function statsLines(ctx: BrokerContext, item: string): Line[] {
  switch (item) {
    case '':
      return systemLines(ctx)
    case 'topics':
      return topicsLines(ctx)
    case 'offsets':
      return partitionInfos(ctx).map((p) => [p.topic, 'part', p.partition, 'min_offset', p.minOffset, 'max_offset', p.maxOffset])
    case 'partitions':
      return partitionInfos(ctx).map((p) => [
        p.topic, p.partition, 'min_offset', p.minOffset, 'max_offset', p.maxOffset, 'size_bytes', p.sizeBytes,
        'message_count', p.messageCount, 'segments', p.segmentCount, 'unflushed', p.unflushedCount,
        'last_append_ms', p.lastAppendMs, 'closed', ctx.topics.isClosed(p.topic, p.partition),
      ])
    case 'damage':
      return damageLines(ctx)
    case 'realtime':
      return REALTIME_ITEMS.map((name) => [`realtime_${name}`, ctx.realtime.format(name)])
    case 'help':
      return STATS_HELP_LINES.map(([name, text]) => [name, text])
    case 'meta-capabilities':
      return capabilityLines(ctx)
    case 'meta-connections':
      return connectionLines(ctx)
    case 'reset':
      ctx.realtime.reset()
      return [['reset', 'ok']]
    default:
      return topicLines(ctx, item)
  }
}

/**
 * meta extension: one line per connection, for operators looking for the client that holds
 * memory (pending_bytes: answers not yet taken by the socket plus requests in flight) or that
 * the broker has stopped reading (reading false: at its limit, or ending).
 */
function connectionLines(ctx: BrokerContext): Line[] {
  const now = Date.now()
  return [...ctx.connections()].map((c) => [
    c.remote, 'id', c.id, 'in_flight', c.requestsInFlight, 'pending_bytes', c.pendingBytes, 'reading', c.reading,
    'idle_ms', now - c.lastRequestAtMs,
  ])
}

/**
 * meta extension: what this broker supports beyond MetaQ 1.4. Clients ask for this item when
 * they connect; a MetaQ broker treats it as an unknown topic (no meta_version line), so
 * clients fall back to plain MetaQ requests.
 */
function capabilityLines(ctx: BrokerContext): Line[] {
  return [
    ['meta_version', META_VERSION],
    ['broker_id', ctx.config.system.brokerId],
    ['max_message_bytes', ctx.config.system.maxTransferBytes - RECORD_HEADER_BYTES],
    ['long_poll', true],
    ['groups', true],
    ['batch_put', true],
  ]
}

function systemLines(ctx: BrokerContext): Line[] {
  const c = ctx.counters
  const infos = partitionInfos(ctx)
  const totalMessages = infos.reduce((sum, p) => sum + p.messageCount, 0)
  const health = ctx.store.health()
  return [
    ['pid', process.pid],
    ['broker_id', ctx.config.system.brokerId],
    ['port', ctx.port],
    ['uptime', Math.floor((Date.now() - ctx.startedAtMs) / 1000)],
    ['version', PROTOCOL_VERSION],
    ['slave', false],
    ['curr_connections', ctx.connectionCount()],
    // One JavaScript thread plus libuv's file-I/O pool.
    ['threads', 1 + Number(process.env.UV_THREADPOOL_SIZE ?? 4)],
    ['cmd_put', c.cmdPut],
    ['cmd_get', c.cmdGet],
    ['cmd_offset', c.cmdOffset],
    ['tx_begin', c.txBegin],
    ['tx_xa_begin', c.txXaBegin],
    ['tx_commit', c.txCommit],
    ['tx_rollback', c.txRollback],
    ['get_miss', c.getMiss],
    ['put_failed', c.putFailed],
    ['total_messages', totalMessages],
    ['topics', ctx.store.topics().length],
    ['config_checksum', ctx.config.checksum],
    // meta's lines, after MetaQ's (clients read stats as key/value pairs).
    ['quarantined_partitions', health.quarantinedPartitions],
    ['damaged_ranges', health.damagedRanges],
    ['damaged_bytes', health.damagedBytes],
    ['crc_failures', health.crcFailures],
    ['unverified_segments', health.unverifiedSegments],
    ['scrubbed_bytes', health.scrubbedBytes],
  ]
}

/** Quarantined partitions, then every damaged range readers step over. */
function damageLines(ctx: BrokerContext): Line[] {
  const lines: Line[] = ctx.store
    .quarantined()
    .map((q) => [q.topic, q.partition, 'quarantined', true, 'code', q.code, 'reason', q.reason])
  for (const log of ctx.store.list()) {
    for (const r of log.damagedRanges()) {
      lines.push([log.topic, log.partition, 'damaged_range', 'offset', r.offset, 'bytes', r.bytes, 'reason', r.reason, 'acknowledged', r.acknowledged, 'file', r.file])
    }
  }
  return lines
}

function topicsLines(ctx: BrokerContext): Line[] {
  const lines: Line[] = []
  const withData = new Set<string>()
  for (const topic of ctx.store.topics()) {
    withData.add(topic)
    const infos = ctx.store.list().filter((l) => l.topic === topic).map((l) => l.info())
    const resolved = ctx.topics.resolve(topic)
    lines.push([
      // The configured count (what producers and consumers use), not how many hold data yet.
      topic, 'partitions', resolved?.numPartitions ?? infos.length,
      'message_count', infos.reduce((s, p) => s + p.messageCount, 0),
      'message_bytes', infos.reduce((s, p) => s + p.sizeBytes, 0),
      'accept_publish', resolved?.acceptPublish ?? false,
      'accept_subscribe', resolved?.acceptSubscribe ?? false,
    ])
  }
  for (const topic of ctx.topics.configuredTopics()) {
    if (!withData.has(topic)) lines.push([topic, '*Empty*'])
  }
  return lines
}

function topicLines(ctx: BrokerContext, topic: string): Line[] {
  const infos = ctx.store.list().filter((l) => l.topic === topic).map((l) => l.info())
  const configured = ctx.topics.configuredTopics().includes(topic)
  const resultCode = infos.length > 0 ? 0 : configured ? 2 : 1
  const partitions = resultCode === 1 ? 0 : (ctx.topics.resolve(topic)?.numPartitions ?? infos.length)
  const rt = (name: (typeof REALTIME_ITEMS)[number]) => ctx.realtime.format(name, topic)
  return [
    [topic],
    ['resultCode', resultCode],
    ['partitions', partitions],
    ['message_count', infos.reduce((s, p) => s + p.messageCount, 0)],
    ['bytes', infos.reduce((s, p) => s + p.sizeBytes, 0)],
    ['topic_realtime_put', rt('put')],
    ['topic_realtime_get', rt('get')],
    ['topic_realtime_offset', rt('offset')],
    ['topic_realtime_get_miss', rt('get_miss')],
    ['topic_realtime_put_failed', rt('put_failed')],
    ['topic_realtime_message_size', rt('message_size')],
  ]
}

function partitionInfos(ctx: BrokerContext): PartitionInfo[] {
  return ctx.store.list().map((log) => log.info())
}
