/**
 * topic-admin (meta extension, protocol/commands/topic-admin.ts): topics created, changed and
 * deleted on a running broker. Creations and changes go into the topic overlay
 * (topic-overlay.ts), applied as a reload is; a delete removes the topic's partition logs, its
 * closed-partition entries, the group offsets this broker stores for it and its overlay
 * section, in the order topic-delete.ts gives.
 */
import {
  ALL_TOPICS_TOKEN,
  type TopicAdminAction,
  type TopicAdminCommand,
  type TopicAdminReply,
  type TopicAdminRequest,
} from '../../protocol/commands/topic-admin.js'
import {isMetaError, MetaError, Status} from '../../protocol/errors.js'
import {topicPatternMatches, validateTopicName} from '../../protocol/names.js'
import {renderServerIni, resolveTopic} from '../config/index.js'
import type {Connection} from '../connection.js'
import {isSyncSlave, type BrokerContext} from '../context.js'
import {deleteTopic, inZooKeeper} from '../topic-delete.js'
import {parseTopicSettings, settingsText} from '../topic-overlay.js'

/** Most settings one request may carry (there are about ten `[topic=…]` keys). */
const MAX_SETTINGS = 64

export function handleTopicAdmin(ctx: BrokerContext, conn: Connection, frame: TopicAdminCommand): void {
  conn.beginRequest()
  run(ctx, frame).then(
    (reply) => {
      conn.sendResult(Status.OK, frame.opaque, JSON.stringify(reply))
      conn.endRequest()
    },
    (error: Error) => {
      if (isMetaError(error)) conn.sendError(error.code, frame.opaque, error.message, error.status)
      else conn.sendError('INTERNAL', frame.opaque, error.message)
      conn.endRequest()
    },
  )
}

async function run(ctx: BrokerContext, frame: TopicAdminCommand): Promise<TopicAdminReply> {
  const request = parseRequest(frame.body)
  if (frame.action === 'show' && frame.topic === ALL_TOPICS_TOKEN) {
    return {...reply(ctx, 'show', frame.topic, false), overlays: Object.fromEntries(ctx.topicOverlay()), serverIni: exportedIni(ctx)}
  }
  validateTopicName(frame.topic)
  if (frame.topic.includes('*')) throw MetaError.invalidArgument(`topic "${frame.topic}": expected a topic name, not a pattern`)
  if (frame.action !== 'show') refuseOnSlave(ctx, frame.action, frame.topic)
  switch (frame.action) {
    case 'create':
      return create(ctx, frame.topic, request.settings ?? {})
    case 'alter':
      return alter(ctx, frame.topic, request.settings ?? {})
    case 'delete':
      return remove(ctx, frame.topic, request.execute === true)
    case 'show':
      requireExisting(ctx, frame.topic)
      return reply(ctx, 'show', frame.topic, false)
  }
}

/**
 * A slave's topics are its master's (an asynchronous slave applies the master's server.ini,
 * a synchronous one takes what the master sends): changing them on the slave alone would
 * fork the two. Answered 403 with SLAVE_READ_ONLY, naming the role.
 */
function refuseOnSlave(ctx: BrokerContext, action: TopicAdminAction, topic: string): void {
  const role = ctx.replica !== undefined ? 'an asynchronous slave' : isSyncSlave(ctx) ? 'a synchronous slave' : undefined
  if (role === undefined) return
  throw new MetaError(
    'SLAVE_READ_ONLY',
    `topic ${action} "${topic}" refused: broker ${ctx.config.system.brokerId} is ${role} (role slave) and follows its master's topics; run meta topic ${action} on the master`,
    {status: Status.FORBIDDEN},
  )
}

function parseRequest(body: Buffer): TopicAdminRequest {
  if (body.length === 0) return {}
  let value: TopicAdminRequest
  try {
    value = JSON.parse(body.toString('utf8')) as TopicAdminRequest
  } catch (error) {
    throw MetaError.invalidArgument(`topic-admin body: expected JSON (${(error as Error).message})`)
  }
  const settings = value.settings ?? {}
  if (typeof settings !== 'object' || !Object.values(settings).every((v) => typeof v === 'string')) {
    throw MetaError.invalidArgument('topic-admin settings: expected an object of server.ini keys and string values')
  }
  if (Object.keys(settings).length > MAX_SETTINGS) throw MetaError.invalidArgument(`topic-admin settings: expected at most ${MAX_SETTINGS} keys`)
  return value
}

/** Partitions with files, per topic. */
function partitionsWithData(ctx: BrokerContext, topic: string): number[] {
  return ctx.store
    .list()
    .filter((log) => log.topic === topic)
    .map((log) => log.partition)
}

/** Where the topic exists: its own section (server.ini or the overlay), or partitions with data. */
function existence(ctx: BrokerContext, topic: string): string | undefined {
  if (ctx.topicOverlay().has(topic)) return 'it was created online'
  if (ctx.config.topics.some((t) => t.pattern === topic)) return 'it has a [topic=' + topic + '] section in server.ini'
  const data = partitionsWithData(ctx, topic)
  if (data.length > 0) return `it has ${data.length} partition${data.length === 1 ? '' : 's'} with data`
  return undefined
}

function requireExisting(ctx: BrokerContext, topic: string): void {
  if (existence(ctx, topic) === undefined) {
    throw new MetaError('NOT_FOUND', `no such topic "${topic}": it has no section in server.ini or the overlay and no data on this broker`)
  }
}

function checkLimit(ctx: BrokerContext, topic: string, numPartitions: number): void {
  const refusal = ctx.topics.onlineCreationRefusal(topic, numPartitions, ctx.store.list())
  if (refusal !== undefined) throw refusal
}

async function create(ctx: BrokerContext, topic: string, settings: Record<string, string>): Promise<TopicAdminReply> {
  const exists = existence(ctx, topic)
  if (exists !== undefined) throw MetaError.invalidArgument(`topic "${topic}" already exists (${exists}): change it with meta topic alter`)
  const parsed = parseTopicSettings(topic, settings, ctx.config.source?.path)
  const numPartitions = parsed.numPartitions ?? ctx.config.system.numPartitions
  checkLimit(ctx, topic, numPartitions)
  const overlay = ctx.topicOverlay()
  // The count is written even when it is the [system] default, so a later change there does not move it.
  overlay.set(topic, {...settings, numPartitions: String(numPartitions)})
  await ctx.changeTopicOverlay(overlay)
  ctx.log.info('topic created online', {topic, settings: overlay.get(topic)})
  return reply(ctx, 'create', topic, true)
}

async function alter(ctx: BrokerContext, topic: string, settings: Record<string, string>): Promise<TopicAdminReply> {
  requireExisting(ctx, topic)
  if (Object.keys(settings).length === 0) throw MetaError.invalidArgument(`topic "${topic}": expected --partitions or at least one --set key=value`)
  const parsed = parseTopicSettings(topic, settings, ctx.config.source?.path)
  const current = resolveTopic(ctx.config, topic)?.numPartitions ?? 0
  const notes: string[] = []
  if (parsed.numPartitions !== undefined) {
    if (parsed.numPartitions < current) {
      throw MetaError.invalidArgument(
        `numPartitions ${parsed.numPartitions} for topic "${topic}": expected at least ${current} (its current partition count); partitions only grow`,
      )
    }
    checkLimit(ctx, topic, parsed.numPartitions)
    const last = parsed.numPartitions - 1
    if (last === current) notes.push(`partition ${current} added`)
    else if (last > current) notes.push(`partitions ${current}..${last} added`)
  }
  const overlay = ctx.topicOverlay()
  overlay.set(topic, {...overlay.get(topic), ...settings})
  await ctx.changeTopicOverlay(overlay)
  ctx.log.info('topic changed online', {topic, settings})
  return {...reply(ctx, 'alter', topic, true), notes}
}

async function remove(ctx: BrokerContext, topic: string, execute: boolean): Promise<TopicAdminReply> {
  requireExisting(ctx, topic)
  const logs = ctx.store.list().filter((log) => log.topic === topic)
  const infos = logs.map((log) => log.info())
  const groups = ctx.offsets.groupNames().filter((g) => ctx.offsets.get(g, [topic]).length > 0)
  const withData = infos.map((i) => i.partition)
  const cluster = ctx.cluster()
  const removed = {
    // A topic no longer accepted (its section gone) still counts the partitions it has files for.
    partitionCount: resolveTopic(ctx.config, topic)?.numPartitions ?? Math.max(0, ...withData.map((p) => p + 1)),
    partitions: withData,
    messages: infos.reduce((sum, i) => sum + i.messageCount, 0),
    bytes: infos.reduce((sum, i) => sum + i.sizeBytes, 0),
    closedPartitions: ctx.topics.closedPartitions(topic),
    groups,
    ...(cluster === undefined ? {} : {zkGroups: (await inZooKeeper(topic, 'read its consumer offsets', cluster.topicOffsetNodes(topic))).map((g) => g.group)}),
  }
  if (!execute) return {...reply(ctx, 'delete', topic, false), removed, notes: stillAccepted(ctx, topic)}
  const zkGroups = await deleteTopic(ctx, topic)
  if (zkGroups !== undefined) removed.zkGroups = zkGroups
  ctx.log.info('topic deleted online', {topic, ...removed})
  return {...reply(ctx, 'delete', topic, true), removed, notes: stillAccepted(ctx, topic)}
}

/** A note when the configuration still accepts the deleted topic (a put creates it again, empty). */
function stillAccepted(ctx: BrokerContext, topic: string): string[] {
  const withoutOverlay = ctx.config.topics.some((t) => t.pattern === topic) && !ctx.topicOverlay().has(topic)
  if (withoutOverlay) return [`server.ini still has a [topic=${topic}] section: the topic stays configured, empty (remove the section and reload to drop it)`]
  if (resolveTopic(ctx.config, topic) === undefined) return []
  const wildcard = ctx.config.topics.find((t) => t.pattern.includes('*') && topicPatternMatches(t.pattern, topic))
  const why =
    wildcard !== undefined
      ? `its [topic=${wildcard.pattern}] section accepts "${topic}"`
      : 'it accepts any topic (zero-config: no [topic=…] section of its own)'
  return [`this broker still accepts "${topic}" (${why}): a put creates it again, empty`]
}

/** The effective configuration as a server.ini; `[topic=*]` keeps zero-config mode once it has topic sections. */
function exportedIni(ctx: BrokerContext): string {
  const text = renderServerIni(ctx.config)
  if (!ctx.config.acceptAnyTopic || ctx.config.topics.length === 0) return text
  return `${text}\n; any other topic is accepted with the [system] values (the broker runs without topic sections in its own file)\n[topic=*]\n`
}

function reply(ctx: BrokerContext, action: TopicAdminReply['action'], topic: string, applied: boolean): TopicAdminReply {
  const resolved = topic === ALL_TOPICS_TOKEN ? undefined : resolveTopic(ctx.config, topic)
  const section = ctx.config.topics.find((t) => t.pattern === topic)
  const stays = resolved !== undefined && (section !== undefined || partitionsWithData(ctx, topic).length > 0 || action !== 'delete')
  return {
    action,
    topic,
    brokerId: ctx.config.system.brokerId,
    applied,
    overlay: ctx.topicOverlay().get(topic) ?? null,
    effective: stays ? settingsText(resolved) : null,
    notes: [],
  }
}
