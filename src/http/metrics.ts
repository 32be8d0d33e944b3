/**
 * `GET /metrics`: the broker in Prometheus' text format (prom-client). Everything is read when
 * scraped from what the broker keeps anyway (its `stats` counters, its partition logs, the
 * standalone groups' committed offsets, its connections) and two latency histograms it
 * records (put, fdatasync); docs/http.md lists every name.
 */
import type {FastifyInstance} from 'fastify'
import {collectDefaultMetrics, Counter, Gauge, Registry} from 'prom-client'
import type {BrokerReadView, BrokerStatsView, LatencyReadView, PartitionReadView, PrincipalStats, Visibility} from '../broker/read-view.js'
import {parseZkOffset, ZkPaths} from '../cluster/paths.js'
import type {ReplicaPartitionStatus} from '../protocol/commands/replication.js'
import {LATENCY_BUCKETS_SECONDS} from '../broker/stats.js'
import {META_VERSION} from '../package-info.js'
import type {HttpContext} from './context.js'

export function registerMetrics(app: FastifyInstance, ctx: HttpContext): void {
  const registry = brokerRegistry(ctx.broker)
  app.get('/metrics', async (req, reply) => {
    const {seen, user} = ctx.viewer(req)
    const text = await registry.metrics()
    reply.type(registry.contentType).send(seen.admin ? text : visibleSeries(text, seen, user))
  })
}

const LABEL = /\b(topic|group|user)="([^"]*)"/g

/**
 * The series a principal may see (docs/security.md#what-a-principal-may-see): those of topics
 * and groups it may see, and its own user's usage; series without these labels (counters of the
 * whole broker, the process) stay. Names hold no quote or backslash, so the labels are read plainly.
 */
function visibleSeries(text: string, seen: Visibility, user: string | undefined): string {
  return text
    .split('\n')
    .filter((line) => {
      if (line.startsWith('#')) return true
      for (const [, label, value] of line.matchAll(LABEL)) {
        if (label === 'topic' ? !seen.topic(value) : label === 'group' ? !seen.group(value) : value !== user) return false
      }
      return true
    })
    .join('\n')
}

/** A registry of the broker's metrics and the process' (prom-client's default metrics). */
function brokerRegistry(broker: BrokerReadView): Registry {
  const registry = new Registry()
  collectDefaultMetrics({register: registry})
  const ctx = broker.stats
  const counter = (name: string, help: string, value: () => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset()
        this.inc(value())
      },
    })
  counter(
    'meta_messages_put_total',
    'Messages put, counted per message (a put-batch counts each); failed ones included (stats cmd_put).',
    () => ctx.counters.cmdPut,
  )
  counter('meta_messages_put_failed_total', 'Messages whose put failed (stats put_failed).', () => ctx.counters.putFailed)
  counter('meta_get_requests_total', 'get requests (stats cmd_get).', () => ctx.counters.cmdGet)
  counter('meta_get_misses_total', 'get requests that found no message (stats get_miss).', () => ctx.counters.getMiss)
  counter('meta_offset_requests_total', 'offset requests (stats cmd_offset).', () => ctx.counters.cmdOffset)
  counter('meta_auth_failures_total', 'Failed logins, on the broker port and the HTTP server (stats auth_failures).', () => broker.access?.failures ?? 0)
  counter(
    'meta_access_denied_total',
    'Requests refused for rights, on the broker port and the HTTP server (stats access_denied).',
    () => broker.access?.audit.refusals ?? 0,
  )
  counter(
    'meta_connections_refused_total',
    "Connections refused for their address's caps, maxConnectionsPerAddress and maxUnauthenticatedConnectionsPerAddress (stats connections_refused).",
    () => ctx.connectionsRefused(),
  )
  counter('meta_received_bytes_total', 'Bytes received from clients over the MetaQ protocol.', () => broker.traffic().received)
  counter('meta_sent_bytes_total', 'Bytes sent to clients over the MetaQ protocol.', () => broker.traffic().sent)
  new Gauge({
    name: 'meta_connections',
    help: 'Open client connections (stats curr_connections; the HTTP server holds one).',
    registers: [registry],
    collect() {
      this.set(ctx.connectionCount())
    },
  })
  new Gauge({
    name: 'meta_broker_info',
    help: 'Always 1; the labels describe the broker.',
    labelNames: ['broker_id', 'version', 'mode'],
    registers: [registry],
    collect() {
      this.reset()
      this.set({broker_id: String(ctx.config.system.brokerId), version: META_VERSION, mode: broker.cluster ? 'cluster' : 'standalone'}, 1)
    },
  })
  new Gauge({
    name: 'meta_uptime_seconds',
    help: 'Seconds since the broker started.',
    registers: [registry],
    collect() {
      this.set((Date.now() - ctx.startedAtMs) / 1000)
    },
  })
  const partitionGauge = (name: string, help: string, value: (info: PartitionReadView) => number) =>
    partitionSeries(registry, name, help, () => ctx.store.list().map((log) => [log.topic, log.partition, value(log)]))
  partitionGauge('meta_partition_log_end_offset', 'End of the partition log: the byte offset the next message gets.', (log) => log.maxOffset)
  partitionGauge('meta_partition_log_start_offset', 'First readable byte offset of the partition log.', (log) => log.minOffset)
  partitionGauge('meta_partition_size_bytes', 'Bytes the partition holds on disk.', (log) => log.sizeBytes)
  partitionGauge('meta_partition_messages', 'Messages in the partition log.', (log) => log.info().messageCount)
  new Gauge({
    name: 'meta_group_lag_bytes',
    help: "Bytes from a consumer group's committed offset (or the log start, when below it) to the log end, per partition of this broker: groups whose offsets it stores, and in cluster mode the groups committed in ZooKeeper.",
    labelNames: ['group', 'topic', 'partition'],
    registers: [registry],
    async collect() {
      this.reset()
      const lag = (group: string, topic: string, partition: number, offset: number) => {
        const log = ctx.store.get(topic, partition)
        const start = log?.minOffset ?? 0
        const end = log?.maxOffset ?? 0
        this.set({group, topic, partition: String(partition)}, end - Math.min(Math.max(offset, start), end))
      }
      for (const group of ctx.offsets.groupNames()) {
        for (const committed of ctx.offsets.get(group)) lag(group, committed.topic, committed.partition, committed.offset)
      }
      if (broker.cluster !== undefined) await zkGroupOffsets(broker, lag)
    },
  })
  principalMetrics(registry, broker.stats)
  replicationMetrics(registry, broker)
  histogram(
    registry,
    'meta_put_duration_seconds',
    'Time from a put (or put-batch) being taken to its acknowledgement being ready: written, and fdatasynced under group commit. Sampled: one put request in 8 is timed.',
    ctx.latency.put,
  )
  histogram(registry, 'meta_fsync_duration_seconds', "Duration of the partition logs' fdatasync calls.", ctx.latency.fsync)
  return registry
}

/** Each user's usage (auth/quota.ts): one series per user of the users file, labelled `user`. */
function principalMetrics(registry: Registry, stats: BrokerStatsView): void {
  const series = (name: string, help: string, type: 'gauge' | 'counter', value: (p: PrincipalStats) => number) => {
    const collect = function (this: Gauge | Counter) {
      this.reset()
      for (const p of stats.principals()) {
        if (this instanceof Gauge) this.set({user: p.user}, value(p))
        else this.inc({user: p.user}, value(p))
      }
    }
    if (type === 'gauge') new Gauge({name, help, labelNames: ['user'], registers: [registry], collect})
    else new Counter({name, help, labelNames: ['user'], registers: [registry], collect})
  }
  series('meta_principal_connections', 'Connections logged in as the user.', 'gauge', (p) => p.connections)
  series('meta_principal_groups', "Consumer groups whose names the user's group grants match (what its groups limit counts).", 'gauge', (p) => p.groups)
  series('meta_principal_partitions', "Partitions of topics the user's put grants match (what its partitions limit counts).", 'gauge', (p) => p.partitions)
  series('meta_principal_produced_bytes_total', "Bytes the user's puts brought (bodies).", 'counter', (p) => p.producedBytes)
  series('meta_principal_fetched_bytes_total', "Bytes the user's fetches took.", 'counter', (p) => p.fetchedBytes)
  series('meta_principal_throttled_seconds_total', "Time the user's connections were held for its byte rates.", 'counter', (p) => p.throttledMs / 1000)
}

/**
 * On an asynchronous slave: how far behind its master it is, per partition, and whether the
 * master answers. A broker that is not a slave reports none of these (no series, not zeros).
 */
function replicationMetrics(registry: Registry, broker: BrokerReadView): void {
  const replicaGauge = (name: string, help: string, value: (p: ReplicaPartitionStatus, nowMs: number) => number | undefined) =>
    partitionSeries(registry, name, help, () => {
      const nowMs = Date.now()
      return (broker.replicator?.partitionStatuses() ?? []).map((p) => [p.topic, p.partition, value(p, nowMs)])
    })
  replicaGauge(
    'meta_replication_lag_bytes',
    "Slave only: bytes the master holds past this slave's end of the partition, as of the master's last answer.",
    (p) => (p.masterEnd >= 0 ? p.lagBytes : undefined),
  )
  replicaGauge(
    'meta_replication_last_fetch_age_seconds',
    'Slave only: seconds since the master last answered a fetch of the partition (absent before the first answer).',
    (p, nowMs) => (p.lastFetchMs > 0 ? (nowMs - p.lastFetchMs) / 1000 : undefined),
  )
  new Gauge({
    name: 'meta_replication_master_connected',
    help: 'Slave only: 1 while the connection to the master is open, else 0.',
    registers: [registry],
    collect() {
      this.reset()
      const replicator = broker.replicator
      if (replicator !== undefined) this.set(replicator.masterConnected ? 1 : 0)
    },
  })
}

/**
 * Every offset committed in ZooKeeper for a partition of this broker
 * (`consumers/<group>/offsets/<topic>/<thisBrokerId>-<p>`, MetaQ's layout): read at each
 * scrape, so its cost grows with the groups and topics in ZooKeeper. A group or topic removed
 * while it is read is skipped; ZooKeeper unreachable fails the scrape (prom-client answers 500).
 */
async function zkGroupOffsets(broker: BrokerReadView, lag: (group: string, topic: string, partition: number, offset: number) => void): Promise<void> {
  const session = broker.cluster!.session
  const paths = new ZkPaths(broker.config.zookeeper.zkRoot)
  const prefix = `${broker.config.system.brokerId}-`
  for (const group of await session.children(paths.consumers())) {
    for (const topic of await session.children(paths.offsetsOf(group))) {
      for (const child of await session.children(paths.offsets(group, topic))) {
        if (!child.startsWith(prefix)) continue
        const partition = Number(child.slice(prefix.length))
        const value = await session.getString(`${paths.offsets(group, topic)}/${child}`)
        const committed = value === undefined ? undefined : parseZkOffset(value)
        if (Number.isInteger(partition) && committed !== undefined) lag(group, topic, partition, committed.offset)
      }
    }
  }
}

/** A gauge with one series per topic and partition, read at each scrape (an undefined value: no series). */
function partitionSeries(
  registry: Registry,
  name: string,
  help: string,
  series: () => Array<[topic: string, partition: number, value: number | undefined]>,
): void {
  new Gauge({
    name,
    help,
    labelNames: ['topic', 'partition'],
    registers: [registry],
    collect() {
      this.reset()
      for (const [topic, partition, value] of series()) if (value !== undefined) this.set({topic, partition: String(partition)}, value)
    },
  })
}

/** A histogram the broker records itself (stats.ts LatencyHistogram), exposed in Prometheus' cumulative form. */
function histogram(registry: Registry, name: string, help: string, source: LatencyReadView): void {
  registry.registerMetric({
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    async get() {
      const values: Array<{metricName: string; labels: Record<string, string | number>; value: number}> = []
      let cumulative = 0
      LATENCY_BUCKETS_SECONDS.forEach((bound, i) => {
        cumulative += source.counts[i]
        values.push({metricName: `${name}_bucket`, labels: {le: bound}, value: cumulative})
      })
      values.push({metricName: `${name}_bucket`, labels: {le: '+Inf'}, value: source.count})
      values.push({metricName: `${name}_sum`, labels: {}, value: source.sumSeconds})
      values.push({metricName: `${name}_count`, labels: {}, value: source.count})
      return {name, help, type: 'histogram', aggregator: 'sum', values}
    },
    reset() {},
  } as never)
}
