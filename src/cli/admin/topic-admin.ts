/**
 * `meta topic create|alter|delete|export`: topics managed on a running broker through the
 * `topic-admin` extension. Values are checked by the broker with its server.ini parser; here
 * only the shape of `--set key=value` and the target (-b, or --zk with --broker-id) are.
 */
import {Args, Flags} from '@oclif/core'
import type {TopicAdminAction, TopicAdminReply, TopicAdminRequest} from '../../protocol/commands/topic-admin.js'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import {validateTopicName} from '../../protocol/names.js'
import {adminFlags, topicNameFlag} from '../client-flags.js'
import {formatBytes, renderTable} from '../output.js'
import {confirmOnTty, declined} from './confirm.js'
import {onBrokers, shown} from './operations.js'
import {withGroupAdmin, type AdminContext} from './connect.js'
import {describeTarget} from '../connection.js'

/** Largest --partitions (MetaQ's numPartitions is an int; more than this many partitions per broker is a mistake). */
const MAX_TOPIC_PARTITIONS = 65_536

/** --partitions, --set: shared by create and alter. */
const topicSettingFlags = {
  partitions: Flags.integer({summary: 'Number of partitions (numPartitions); alter only grows it.', min: 1, max: MAX_TOPIC_PARTITIONS}),
  set: Flags.string({
    summary:
      'A [topic=…] server.ini setting, key=value (repeatable): unflushThreshold, unflushInterval, deletePolicy, deleteWhen, acceptPublish, acceptSubscribe, maxPartitionBytes, …',
    multiple: true,
  }),
}

/** --broker-id: which broker of a cluster (--zk needs it: topics are per broker). */
export const brokerIdFlag = Flags.integer({summary: 'With --zk: the broker to change (required with --zk).', min: 0, max: 1023})

/** The argument and flags of `meta topic create` and `meta topic alter`. */
export const topicChangeArgs = {topic: Args.string({description: 'Topic name (or -t/--topic).'})}
export const topicChangeFlags = {...adminFlags, topic: topicNameFlag, ...topicSettingFlags, 'broker-id': brokerIdFlag}

/** The settings of --partitions and --set as server.ini key → value. Throws INVALID_ARGUMENT naming a malformed --set. */
export function settingsOf(flags: {partitions?: number; set?: string[]}): Record<string, string> {
  const settings: Record<string, string> = {}
  for (const item of flags.set ?? []) {
    const eq = item.indexOf('=')
    if (eq <= 0) throw MetaError.invalidArgument(`--set "${item}": expected key=value, e.g. --set unflushThreshold=100`)
    const key = item.slice(0, eq).trim()
    if (key in settings) throw MetaError.invalidArgument(`--set "${item}": key "${key}" is set twice`)
    settings[key] = item.slice(eq + 1)
  }
  if (flags.partitions !== undefined) {
    if (settings.numPartitions !== undefined) throw MetaError.invalidArgument('--partitions and --set numPartitions=… both set the partition count: give one')
    settings.numPartitions = String(flags.partitions)
  }
  return settings
}

/** Check the topic name and that --zk comes with --broker-id. Throws INVALID_ARGUMENT. */
export function checkTarget(topic: string, flags: {zk?: string; 'broker-id'?: number}): void {
  validateTopicName(topic)
  if (topic.includes('*')) throw MetaError.invalidArgument(`topic "${topic}": expected a topic name, not a pattern`)
  if (flags.zk !== undefined && flags['broker-id'] === undefined) {
    throw MetaError.invalidArgument('--zk needs --broker-id: a topic is created, changed and deleted on one broker of a cluster')
  }
}

/** One broker's reply, with the address it came from. */
export type TopicAnswer = {broker: string} & TopicAdminReply

/** Run one topic-admin request on the broker the flags reach. */
export async function topicAdmin(
  context: AdminContext,
  brokerId: number | undefined,
  action: TopicAdminAction,
  topic: string,
  request: TopicAdminRequest,
): Promise<TopicAnswer[]> {
  try {
    const answers = await onBrokers(context, {brokerId}, (admin) => admin.topicAdmin(action, topic, request))
    return answers.map((a) => ({...a.result, broker: a.broker}))
  } catch (error) {
    // `no such topic`: name the close ones, as tail does.
    if (isMetaError(error, 'NOT_FOUND') && (error as {hint?: string}).hint === undefined) {
      const hint = await withGroupAdmin(context, async (admin, target) => {
        const known = await admin.topics()
        const {unknownTopicError} = await import('../suggest.js')
        return known === undefined ? undefined : unknownTopicError(topic, known, describeTarget(target)).hint
      }).catch(() => undefined)
      if (hint !== undefined) (error as {hint?: string}).hint = hint
    }
    throw error
  }
}

/**
 * `meta topic create|alter` once their flags are checked: the request on the broker the flags
 * reach, then a line per broker on stdout, or the answers for --json.
 */
export async function changeTopic(
  target: {context: AdminContext; brokerId: number | undefined; json: boolean},
  action: 'create' | 'alter',
  topic: string,
  settings: Record<string, string>,
): Promise<TopicAnswer[] | undefined> {
  const answers = await topicAdmin(target.context, target.brokerId, action, topic, {settings})
  if (target.json) return answers
  process.stdout.write(renderTopicChange(answers))
  return undefined
}

/** `meta topic create|alter`: a line per broker with the topic's settings afterwards. */
function renderTopicChange(answers: readonly TopicAnswer[]): string {
  const lines: string[] = []
  for (const a of answers) {
    const verb = a.action === 'create' ? 'created' : 'changed'
    lines.push(`topic "${a.topic}" ${verb} on broker ${a.brokerId} (${a.broker})`)
    lines.push(...settingLines(a.effective, a.overlay))
    for (const note of a.notes) lines.push(`  note: ${note}`)
  }
  return `${lines.join('\n')}\n`
}

/** The effective settings, the online ones marked with `*`. */
function settingLines(effective: Record<string, string> | null, overlay: Record<string, string> | null): string[] {
  if (effective === null) return []
  return Object.entries(effective).map(([key, value]) => `  ${overlay?.[key] === undefined ? ' ' : '*'} ${key}=${shown(key, value)}`)
}

/** `meta topic delete`: what goes (or would), then — with --execute and a confirmation on a terminal — the deletion. */
export async function runTopicDelete(
  context: AdminContext,
  topic: string,
  flags: {execute: boolean; yes: boolean; 'broker-id'?: number},
  json: boolean,
): Promise<TopicAnswer[]> {
  const plan = await topicAdmin(context, flags['broker-id'], 'delete', topic, {execute: false})
  if (!json) process.stdout.write(renderDeletion(plan))
  const what = `topic "${topic}" (${describeRemoval(plan)})`
  if (!flags.execute) {
    if (!json) process.stderr.write(`dry run: nothing was deleted; add --execute to delete ${what}\n`)
    return plan
  }
  if (
    !(await confirmOnTty(
      `Delete ${what}, its closed-partition marks and its group offsets${plan.some((a) => a.removed?.zkGroups !== undefined) ? ' (also in ZooKeeper)' : ''}?`,
      {yes: flags.yes},
    ))
  )
    throw declined(`deleting topic "${topic}"`)
  const done = await topicAdmin(context, flags['broker-id'], 'delete', topic, {execute: true})
  if (!json) {
    process.stderr.write(`deleted topic "${topic}" (${describeRemoval(done)})\n`)
    for (const a of done) for (const note of a.notes) process.stderr.write(`note: ${note}\n`)
  }
  return done
}

/** `2 partitions, 1 message`: what a deletion removes, over every broker answering. */
function describeRemoval(answers: readonly TopicAnswer[]): string {
  const partitions = answers.reduce((n, a) => n + (a.removed?.partitionCount ?? 0), 0)
  const messages = answers.reduce((n, a) => n + (a.removed?.messages ?? 0), 0)
  return `${counted(partitions, 'partition')}, ${counted(messages, 'message')}`
}

function counted(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}

/**
 * One row per broker: the partition count, the partitions with data (files), messages, size,
 * closed marks, groups with offsets on the broker, and in a cluster those with offsets in ZooKeeper.
 */
function renderDeletion(answers: readonly TopicAnswer[]): string {
  const list = (items: ReadonlyArray<number | string> | undefined) => (items === undefined || items.length === 0 ? '-' : items.join(','))
  const cluster = answers.some((a) => a.removed?.zkGroups !== undefined)
  const rows = answers.map((a) => [
    a.brokerId,
    a.topic,
    a.removed?.partitionCount ?? 0,
    list(a.removed?.partitions),
    a.removed?.messages ?? 0,
    formatBytes(a.removed?.bytes ?? 0),
    list(a.removed?.closedPartitions),
    list(a.removed?.groups),
    ...(cluster ? [list(a.removed?.zkGroups)] : []),
  ])
  const headers = ['BROKER', 'TOPIC', 'PARTITIONS', 'WITH-DATA', 'MESSAGES', 'SIZE', 'CLOSED', 'GROUPS', ...(cluster ? ['ZK-GROUPS'] : [])]
  const align = ['right', 'left', 'right', 'left', 'right', 'right', 'left', 'left', 'left'] as const
  return `${renderTable(headers, rows, {align: align.slice(0, headers.length)})}\n`
}
