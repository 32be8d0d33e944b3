/**
 * The dashboard's JSON API (docs/http.md#dashboard-api) and live streams:
 *
 *   GET  /api/overview                      broker id, version, uptime, mode, checksum, counters
 *   GET  /api/events                        SSE: the counters once a second (the live charts)
 *   GET  /api/topics?page&size&q            topics (paged)
 *   GET  /api/topics/:topic/partitions?page&size
 *   GET  /api/topics/:topic/partitions/:p/messages?offset|time&limit
 *   GET  /api/groups                        groups; /api/groups/:group members, ownership, lag
 *   POST /api/groups/:group/skip            MetaQ's skip: past the message at the committed offset
 *   GET  /api/config, POST /api/reload      server.ini, reload (or dry run) and what it changed
 *   GET  /api/cluster                       brokers and topics from ZooKeeper (cluster mode)
 *   GET  /follow?topic[&partition][&offset] SSE: every new message of a topic (curl -N)
 *
 * Tables are paged on the server, so a page costs one request however many partitions exist.
 */
import type {FastifyInstance, FastifyReply, FastifyRequest} from 'fastify'
import type {BrokerReadView, PartitionReadView} from '../broker/read-view.js'
import {StandaloneGroupAdmin, connectGroupAdmin, type GroupOffsetsAdmin} from '../client/group-admin.js'
import {ClusterTopology} from '../client/cluster-topology.js'
import {readBrokers, readSlaves, readTopics} from '../cluster/discovery.js'
import {parseBrokerRole, parseBrokerUrl} from '../cluster/paths.js'
import {connectAdmin} from '../client/admin.js'
import {slaveHealth} from '../cli/admin/slave-status.js'
import {lagRows, partitionsOf} from '../cli/admin/offset-rows.js'
import {encodeGet} from '../protocol/commands/get.js'
import {MetaError} from '../protocol/errors.js'
import {decodeMessageSet} from '../protocol/message-set.js'
import {messageIdTimestamp} from '../protocol/message-id.js'
import {META_VERSION} from '../package-info.js'
import type {HttpContext} from './context.js'
import type {CounterHistory, CounterSample} from './history.js'
import {messageJson} from './gateway.js'
import {groupParam, HttpError, intParam, param, topicParam, type Query} from './params.js'

/** Period of the live counters (/api/events). */
const EVENTS_INTERVAL_MS = 1000
const PAGE_SIZE_MAX = 500
/** Most messages one browser page shows. */
const MESSAGES_MAX = 200
/** How long /follow waits on the broker for a new message before asking again. */
const FOLLOW_WAIT_MS = 10_000

interface Page<T> {
  items: T[]
  total: number
  page: number
  size: number
}

export function registerApi(app: FastifyInstance, ctx: HttpContext, history: CounterHistory): void {
  const {broker} = ctx
  let groupAdmin: Promise<GroupOffsetsAdmin> | undefined
  /** Groups' offsets: the broker's own (standalone) or ZooKeeper's (cluster mode), opened once. */
  const groups = async (req: FastifyRequest): Promise<GroupOffsetsAdmin> => {
    const zk = broker.config.zookeeper
    if (broker.cluster === undefined || zk.zkConnect === undefined) return new StandaloneGroupAdmin(await ctx.admin(req))
    groupAdmin ??= connectGroupAdmin({zk: zk.zkConnect, zkRoot: zk.zkRoot, logger: ctx.log.child('groups')}).catch((error: unknown) => {
      groupAdmin = undefined
      throw error
    })
    return groupAdmin
  }
  app.addHook('onClose', async () => {
    const admin = await groupAdmin?.catch(() => undefined)
    if (admin !== undefined && !(admin instanceof StandaloneGroupAdmin)) await admin.close()
  })

  app.get('/api/overview', async (req) => {
    const system = await (await ctx.admin(req)).systemStats()
    const config = broker.config
    return {
      brokerId: system.brokerId,
      version: META_VERSION,
      uptimeSeconds: system.uptimeSeconds,
      mode: broker.cluster ? 'cluster' : 'standalone',
      slave: system.slave,
      configChecksum: system.configChecksum,
      configPath: config.source?.path ?? null,
      url: broker.url,
      host: broker.host,
      port: broker.port,
      dataPath: config.system.dataPath,
      zk: broker.cluster ? `${config.zookeeper.zkConnect}${config.zookeeper.zkRoot}` : null,
      ...liveCounters(broker),
    }
  })

  // One sample a second for every open stream, taken only while one is open.
  const listeners = new Set<(counters: Record<string, number>) => void>()
  const withRates = (counters: Record<string, number>): Record<string, number> => ({
    ...counters,
    ...(history.ratesAt(counters as unknown as CounterSample) as Record<string, number>),
  })
  let ticker: NodeJS.Timeout | undefined
  app.addHook('onClose', async () => clearInterval(ticker))
  app.get('/api/events', (req, reply) => {
    sse(req, reply, (send) => {
      const listener = (counters: Record<string, number>) => send('counters', counters)
      listener(withRates(liveCounters(broker)))
      listeners.add(listener)
      ticker ??= setInterval(() => {
        const counters = withRates(liveCounters(broker))
        for (const l of listeners) l(counters)
      }, EVENTS_INTERVAL_MS)
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0) {
          clearInterval(ticker)
          ticker = undefined
        }
      }
    })
  })

  app.get('/api/topics', async (req) => {
    const q = req.query as Query
    const filter = (param(q, 'q') ?? '').toLowerCase()
    const {seen} = ctx.viewer(req)
    const topics = (await (await ctx.admin(req)).topics())
      .filter((t) => t.topic.toLowerCase().includes(filter) && seen.topic(t.topic))
      .map((t) => ({...t, numPartitions: broker.topics.resolve(t.topic)?.numPartitions ?? null, putRate: history.topicRate(t.topic)}))
    return paged(
      q,
      topics.sort((a, b) => (a.topic < b.topic ? -1 : 1)),
    )
  })

  app.get('/api/topics/:topic/partitions', async (req) => {
    const topic = topicParam((req.params as {topic: string}).topic)
    // A topic the principal may not see is one this broker does not know.
    const seen = ctx.viewer(req).seen.topic(topic)
    const resolved = seen ? broker.topics.resolve(topic) : undefined
    const logs = seen ? broker.stats.store.list().filter((log) => log.topic === topic) : []
    if (resolved === undefined && logs.length === 0) throw new HttpError(404, `unknown topic "${topic}": this broker neither accepts it nor holds data for it`)
    const count = Math.max(resolved?.numPartitions ?? 0, ...logs.map((l) => l.partition + 1))
    const byPartition = new Map(logs.map((l) => [l.partition, l]))
    const rows = Array.from({length: count}, (_, partition) => partitionRow(broker, topic, partition, byPartition.get(partition)))
    return {topic, numPartitions: resolved?.numPartitions ?? null, acceptPublish: resolved?.acceptPublish ?? null, ...paged(req.query as Query, rows)}
  })

  app.get('/api/topics/:topic/partitions/:partition/messages', async (req) => {
    const params = req.params as {topic: string; partition: string}
    const topic = topicParam(params.topic)
    const partition = intParam({partition: params.partition}, 'partition', {min: 0})
    const q = req.query as Query
    const limit = intParam(q, 'limit', {min: 1, max: MESSAGES_MAX, fallback: 20})
    const log = ctx.viewer(req).seen.topic(topic) ? broker.stats.store.get(topic, partition) : undefined
    if (log === undefined) throw new HttpError(404, `partition ${topic}-${partition} holds no data on this broker`)
    const time = param(q, 'time')
    let from: number
    if (time !== undefined && time !== '') {
      const ms = /^\d+$/.test(time) ? Number(time) : Date.parse(time)
      if (!Number.isFinite(ms)) throw new HttpError(400, `invalid time "${time}": expected an ISO 8601 time or milliseconds since the epoch`)
      from = await (await ctx.admin(req)).seek(topic, partition, 'time', ms)
    } else {
      from = intParam(q, 'offset', {min: 0, max: Number.MAX_SAFE_INTEGER, fallback: log.minOffset})
    }
    return {topic, partition, start: log.minOffset, end: log.maxOffset, ...(await readMessages(ctx, req, topic, partition, from, limit))}
  })

  app.get('/api/groups', async (req) => {
    const {seen} = ctx.viewer(req)
    const admin = await groups(req)
    const list = (await admin.listGroups()).filter((g) => seen.group(g.group))
    return paged(
      req.query as Query,
      list.sort((a, b) => (a.group < b.group ? -1 : 1)),
    )
  })

  app.get('/api/groups/:group', async (req) => {
    const group = groupParam((req.params as {group: string}).group)
    ctx.authorize(req, 'group', group)
    const admin = await groups(req)
    const description = await admin.describeGroup(group)
    const owners = new Map<string, string>()
    for (const member of description.members) for (const tp of member.owned) owners.set(`${tp.topic}\0${tp.partition}`, member.id)
    const topics = new Set([...description.members.flatMap((m) => m.topics), ...description.offsets.map((o) => o.topic)])
    const refs = await partitionsOf(admin, topics, description.offsets)
    const q = req.query as Query
    const page = paged(q, refs)
    const rows = await lagRows(admin, page.items, description.offsets)
    // Members' addresses are an admin's to see.
    const members = ctx.viewer(req).seen.admin ? description.members : description.members.map((m) => ({...m, host: ''}))
    return {
      group,
      generation: description.generation,
      members,
      ...page,
      items: rows.map((row) => ({...row, owner: owners.get(`${row.topic}\0${row.partition}`) ?? null})),
    }
  })

  app.post('/api/groups/:group/skip', async (req) => {
    ctx.authorizeMutation(req)
    const group = groupParam((req.params as {group: string}).group)
    ctx.authorize(req, 'group', group)
    const body = jsonBody(req)
    const topic = topicParam(typeof body.topic === 'string' ? body.topic : undefined)
    const partition = intParam({partition: String(body.partition ?? '')}, 'partition', {min: 0})
    const admin = await groups(req)
    const committed = (await admin.fetchOffsets(group, [topic])).find((o) => o.partition === partition)
    if (committed === undefined) throw new HttpError(404, `group "${group}" has no committed offset for ${topic} partition ${partition}: nothing to skip`)
    if (body.offset !== undefined && Number(body.offset) !== committed.offset) {
      throw new HttpError(
        409,
        `group "${group}" is at offset ${committed.offset} of ${topic} partition ${partition}, not ${String(body.offset)}: it moved; look again before skipping`,
        'CONFLICT',
      )
    }
    const {messages} = await readMessages(ctx, req, topic, partition, committed.offset, 1)
    const message = messages[0] as {offset: number; recordBytes: number; msgId: string} | undefined
    if (message === undefined || message.offset !== committed.offset) {
      throw new HttpError(
        409,
        `no message starts at offset ${committed.offset} of ${topic} partition ${partition} (the group is at the end of the log, or the offset is not a message boundary): nothing to skip`,
        'CONFLICT',
      )
    }
    const next = {topic, partition, offset: message.offset + message.recordBytes, msgId: message.msgId}
    await admin.commitOffsets(group, [next])
    ctx.log.info('skipped a message for a group (dashboard)', {group, topic, partition, from: committed.offset, to: next.offset, msgId: message.msgId})
    return {group, topic, partition, before: committed.offset, after: next.offset, skipped: message}
  })

  app.get('/api/config', async (req) => {
    // server.ini names every topic: an admin's to see.
    ctx.authorize(req, 'admin', '*')
    const config = broker.config
    return {text: await (await ctx.admin(req)).config(), checksum: config.checksum, path: config.source?.path ?? null}
  })

  app.post('/api/reload', async (req) => {
    ctx.authorizeMutation(req)
    const dryRun = jsonBody(req).dryRun === true
    if (broker.config.source?.path === undefined) {
      throw new HttpError(400, 'nothing to reload: the broker was started without a server.ini (meta serve -c <file>)')
    }
    const report = await (await ctx.admin(req)).reload(dryRun ? 'check' : 'apply')
    if (!dryRun) ctx.log.info('configuration reload requested from the dashboard', {changed: report.changed})
    return report
  })

  app.get('/api/cluster', async (req) => {
    const {seen} = ctx.viewer(req)
    const zk = broker.config.zookeeper
    if (broker.cluster === undefined || zk.zkConnect === undefined) return {mode: 'standalone'}
    const topology = new ClusterTopology({zk: zk.zkConnect, zkRoot: zk.zkRoot, logger: ctx.log.child('cluster')})
    try {
      const session = await topology.session()
      const paths = topology.paths
      const brokers = [...(await readBrokers(session, paths)).entries()].sort(([a], [b]) => a - b)
      const rows = []
      const registered = await readSlaves(session, paths).catch(() => [] as Awaited<ReturnType<typeof readSlaves>>)
      for (const [id, url] of brokers) {
        const slaves = await Promise.all(registered.filter((s) => s.brokerId === id).map((s) => slaveRow(s, ctx)))
        rows.push({id, url, self: id === broker.config.system.brokerId, slaves})
      }
      const topics = []
      for (const topic of (await readTopics(session, paths)).filter((t) => seen.topic(t))) {
        const pub = await session.children(paths.topicPub(topic)).catch(() => [] as string[])
        const sub = await session.children(paths.topicSub(topic)).catch(() => [] as string[])
        const placements = new Map<string, {brokerId: number; role: string; partitions: number; publish: boolean; subscribe: boolean}>()
        const add = (child: string, base: string, kind: 'publish' | 'subscribe') =>
          session.getString(`${base}/${child}`).then((json) => {
            const role = parseBrokerRole(child)
            if (role === undefined) return
            const key = `${role.brokerId}-${role.role}`
            const row = placements.get(key) ?? {
              brokerId: role.brokerId,
              role: role.role === 'm' ? 'master' : 'slave',
              partitions: 0,
              publish: false,
              subscribe: false,
            }
            row.partitions = Math.max(row.partitions, numParts(json))
            row[kind] = true
            placements.set(key, row)
          })
        for (const child of pub) await add(child, paths.topicPub(topic), 'publish')
        for (const child of sub) await add(child, paths.topicSub(topic), 'subscribe')
        topics.push({topic, brokers: [...placements.values()].sort((a, b) => a.brokerId - b.brokerId)})
      }
      return {mode: 'cluster', zk: `${zk.zkConnect}${zk.zkRoot}`, brokers: rows, topics}
    } finally {
      await topology.close()
    }
  })

  app.get('/follow', (req, reply) => {
    const q = req.query as Query
    const topic = topicParam(param(q, 'topic'))
    const resolved = broker.topics.resolve(topic)
    if (resolved === undefined) throw new HttpError(404, `unknown topic "${topic}": this broker does not accept it`)
    // As /get: a topic neither in server.ini nor holding data here is unknown (no silent 200).
    if (!resolved.configured && !broker.stats.store.list().some((log) => log.topic === topic)) {
      throw new HttpError(404, `unknown topic "${topic}": it is not configured and holds no data on this broker`)
    }
    const one = param(q, 'partition')
    const partitions =
      one === undefined ? Array.from({length: resolved.numPartitions}, (_, p) => p) : [intParam(q, 'partition', {min: 0, max: resolved.numPartitions - 1})]
    const offset = param(q, 'offset')
    const startAt = offset === undefined || offset === '' ? undefined : intParam(q, 'offset', {min: 0, max: Number.MAX_SAFE_INTEGER})
    sse(req, reply, (send) => {
      let stopped = false
      for (const partition of partitions) {
        void follow(partition).catch((error: Error) => {
          if (!stopped) send('error', {partition, error: error.message})
        })
      }
      async function follow(partition: number): Promise<void> {
        let position = startAt ?? broker.stats.store.get(topic, partition)?.maxOffset ?? 0
        while (!stopped) {
          const frame = await ctx.request(
            req,
            (out, opaque) =>
              encodeGet(out, {
                topic,
                group: 'meta-http-follow',
                partition,
                offset: position,
                maxSize: broker.config.system.maxTransferBytes,
                opaque,
                maxWaitMs: FOLLOW_WAIT_MS,
              }),
            FOLLOW_WAIT_MS + 30_000,
          )
          if (stopped) return
          if (frame.type === 'value') {
            const set = decodeMessageSet(frame.body, {baseOffset: position, maxPayloadBytes: Number.MAX_SAFE_INTEGER})
            for (const m of set.messages) send('message', {topic, partition, ...messageJson(m), timeMs: messageIdTimestamp(m.id)})
            if (set.bytesConsumed === 0) throw new MetaError('INVALID_MESSAGE', set.error?.message ?? `no whole message at offset ${position}`)
            position += set.bytesConsumed
          } else if (frame.code === 301) {
            position = Number(frame.body.toString())
          } else if (frame.code !== 404) {
            throw new MetaError('INTERNAL', `get answered ${frame.code}: ${frame.body.toString()}`)
          }
        }
      }
      return () => {
        stopped = true
      }
    })
  })
}

/** Messages stored per topic now (the topics page's rates, from the counter history). */
export function topicMessageCounts(broker: BrokerReadView): Map<string, number> {
  const counts = new Map<string, number>()
  for (const log of broker.stats.store.list()) counts.set(log.topic, (counts.get(log.topic) ?? 0) + log.info().messageCount)
  return counts
}

/** Counters the live charts draw, with their rates (src/http/history.ts: a sliding window). */
function liveCounters(broker: BrokerReadView): Record<string, number> {
  const ctx = broker.stats
  const traffic = broker.traffic()
  let messages = 0
  let bytes = 0
  for (const log of ctx.store.list()) {
    bytes += log.sizeBytes
    messages += log.info().messageCount
  }
  return {
    timeMs: Date.now(),
    uptimeSeconds: Math.round((Date.now() - ctx.startedAtMs) / 1000),
    connections: ctx.connectionCount(),
    cmdPut: ctx.counters.cmdPut,
    cmdGet: ctx.counters.cmdGet,
    cmdOffset: ctx.counters.cmdOffset,
    putFailed: ctx.counters.putFailed,
    getMiss: ctx.counters.getMiss,
    receivedBytes: traffic.received,
    sentBytes: traffic.sent,
    totalMessages: messages,
    totalBytes: bytes,
    topics: ctx.store.topics().length,
    partitions: ctx.store.list().length,
  }
}

function partitionRow(broker: BrokerReadView, topic: string, partition: number, log: PartitionReadView | undefined): Record<string, unknown> {
  const closed = broker.topics.isClosed(topic, partition)
  if (log === undefined) return {partition, empty: true, start: 0, end: 0, sizeBytes: 0, messages: 0, segments: 0, lastAppendMs: null, closed}
  const info = log.info()
  return {
    partition,
    empty: false,
    start: info.minOffset,
    end: info.maxOffset,
    sizeBytes: info.sizeBytes,
    messages: info.messageCount,
    segments: info.segmentCount,
    unflushed: info.unflushedCount,
    lastAppendMs: info.lastAppendMs,
    closed,
  }
}

/** Up to `limit` whole messages from `from` (moved to the log start when below it). */
async function readMessages(
  ctx: HttpContext,
  req: FastifyRequest,
  topic: string,
  partition: number,
  from: number,
  limit: number,
): Promise<{from: number; messages: Record<string, unknown>[]; nextOffset: number}> {
  let offset = from
  const messages: Record<string, unknown>[] = []
  const maxSize = ctx.broker.config.system.maxTransferBytes
  for (let round = 0; round < 4 && messages.length < limit; round++) {
    const frame = await ctx.request(req, (out, opaque) => encodeGet(out, {topic, group: 'meta-http-browse', partition, offset, maxSize, opaque, maxWaitMs: 0}))
    if (frame.type === 'result') {
      if (frame.code === 301 && round === 0 && messages.length === 0) {
        offset = Number(frame.body.toString())
        from = offset
        continue
      }
      break
    }
    const set = decodeMessageSet(frame.body, {baseOffset: offset, maxPayloadBytes: Number.MAX_SAFE_INTEGER})
    for (const m of set.messages.slice(0, limit - messages.length)) {
      messages.push({...messageJson(m), timeMs: messageIdTimestamp(m.id)})
      offset = m.offset + m.size
    }
    if (set.messages.length === 0) break
  }
  return {from, messages, nextOffset: offset}
}

function paged<T>(q: Query, items: readonly T[]): Page<T> {
  const size = intParam(q, 'size', {min: 1, max: PAGE_SIZE_MAX, fallback: 50})
  const page = intParam(q, 'page', {min: 0, fallback: 0})
  return {items: items.slice(page * size, page * size + size), total: items.length, page, size}
}

function jsonBody(req: FastifyRequest): Record<string, unknown> {
  const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : ''
  if (raw.trim() === '') return {}
  try {
    const parsed = JSON.parse(raw) as unknown
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>
  } catch {
    // answered below
  }
  throw new HttpError(400, `invalid body: expected a JSON object, got ${JSON.stringify(raw.slice(0, 80))}`)
}

function numParts(json: string | undefined): number {
  try {
    const parsed = JSON.parse(json ?? '{}') as {numParts?: number}
    return typeof parsed.numParts === 'number' ? parsed.numParts : 0
  } catch {
    return 0
  }
}

/**
 * Answer with server-sent events: `start(send)` begins sending and returns what stops it,
 * called when the client goes away or the server closes.
 */
function sse(req: FastifyRequest, reply: FastifyReply, start: (send: (event: string, data: unknown) => void) => () => void): void {
  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no'})
  res.write(': meta\n\n')
  const send = (event: string, data: unknown) => {
    if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
  }
  const stop = start(send)
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000)
  const end = () => {
    clearInterval(keepAlive)
    stop()
    if (!res.writableEnded) res.end()
  }
  req.raw.once('close', end)
  res.once('close', end)
}

/** Longest the cluster view waits for one slave's `slave-status`. */
const SLAVE_STATUS_TIMEOUT_MS = 2000
/** Lag (messages) up to which the cluster view calls a slave healthy: `meta slave-status`'s default --max-lag. */
const SLAVE_HEALTHY_MAX_LAG = 1000

/**
 * A slave registered in ZooKeeper, with its replication state asked of the slave itself
 * (`slave-status`, as `meta slave-status --zk` does): lag summed over its partitions; an
 * unreachable slave or one without the extension (a synchronous or a MetaQ slave) says why.
 */
async function slaveRow(slave: {slaveId: number; url: string}, ctx: HttpContext) {
  const name = `slave${slave.slaveId}`
  const address = parseBrokerUrl(slave.url)
  if (address === undefined) return {name, url: slave.url, error: 'not a broker URL'}
  try {
    const admin = await connectAdmin({
      broker: `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`,
      timeoutMs: SLAVE_STATUS_TIMEOUT_MS,
      logger: ctx.log,
    })
    try {
      const report = await admin.slaveStatus()
      const health = slaveHealth(report, SLAVE_HEALTHY_MAX_LAG)
      const known = report.partitions.every((p) => p.lagMessages >= 0)
      return {
        name,
        url: slave.url,
        healthy: health.healthy,
        ...(health.problem !== undefined ? {problem: health.problem} : {}),
        masterConnected: report.masterConnected,
        partitions: report.partitions.length,
        lagBytes: report.partitions.reduce((sum, p) => sum + p.lagBytes, 0),
        lagMessages: known ? report.partitions.reduce((sum, p) => sum + p.lagMessages, 0) : null,
      }
    } finally {
      admin.close()
    }
  } catch (error) {
    return {name, url: slave.url, error: (error as Error).message}
  }
}
