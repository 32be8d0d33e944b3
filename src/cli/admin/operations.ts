/**
 * `meta reload` and `meta partitions …`: running an operation on the brokers a command
 * reaches (-b, or --zk with an optional --broker-id), and the text each prints.
 */
import type {AdminClient} from '../../client/admin.js'
import type {PartitionsStateReply, ReloadReport} from '../../protocol/commands/broker-admin.js'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import type {PartitionPlan} from '../../broker/index.js'
import {formatBytes, renderTable} from '../output.js'
import {withEachBroker, withGroupAdmin, type AdminContext} from './connect.js'
import {requireTopics} from './topic-check.js'

/** One broker's answer, tagged with where it came from. */
export interface BrokerAnswer<T> {
  /** The broker's id (from ZooKeeper with --zk, else from its stats). */
  brokerId: number | undefined
  broker: string
  result: T
}

/**
 * Run `op` on the broker at -b, or on every broker registered in ZooKeeper (only
 * `brokerId` when given). `skip(error)` may drop a broker from the answers in cluster mode
 * (e.g. one that does not have the topic); throws when no broker answered.
 */
export async function onBrokers<T>(
  context: AdminContext,
  options: {brokerId?: number; skip?: (error: unknown) => boolean},
  op: (admin: AdminClient) => Promise<T>,
): Promise<Array<BrokerAnswer<T>>> {
  const target = await context.target()
  const answers = await withEachBroker(context, async (admin, brokerId): Promise<BrokerAnswer<T> | undefined> => {
    if (options.brokerId !== undefined && brokerId !== options.brokerId) return undefined
    try {
      const result: T = await op(admin)
      return {brokerId: brokerId ?? admin.conn.capabilities.brokerId, broker: admin.conn.name, result}
    } catch (error) {
      if (target.zk !== undefined && options.skip?.(error) === true) return undefined
      throw error
    }
  })
  const found = answers.filter((a): a is BrokerAnswer<T> => a !== undefined)
  if (found.length === 0 && target.zk !== undefined) {
    const which = options.brokerId === undefined ? 'no broker' : `no broker with id ${options.brokerId}`
    throw new MetaError('NOT_FOUND', `${which} registered in ZooKeeper at ${target.zk} could do it`)
  }
  return found
}

/**
 * `meta partitions close|open`: the change on every broker the flags reach; in cluster mode
 * brokers that do not have the topic are skipped. Prints the table unless `json`.
 */
export async function changePartitionState(
  change: 'close' | 'open',
  context: AdminContext,
  flags: {topic: string; start?: number; end?: number; 'broker-id'?: number; 'allow-missing-topic'?: boolean},
  options: {json: boolean},
): Promise<Array<{broker: string} & PartitionsStateReply> | undefined> {
  // Closing a topic nobody has would keep closed marks for it (topic-check.ts); opening one changes nothing.
  if (change === 'close' && flags['allow-missing-topic'] !== true) {
    await withGroupAdmin(context, (admin, target) => requireTopics(admin, [flags.topic], target))
  }
  const answers = await onBrokers(
    context,
    {
      brokerId: flags['broker-id'],
      // In a cluster a topic lives on some brokers only.
      skip: (error) => isMetaError(error, 'TOPIC_NOT_ACCEPTED'),
    },
    (admin) => (change === 'close' ? admin.closePartitions(flags.topic, flags.start, flags.end) : admin.openPartitions(flags.topic, flags.start, flags.end)),
  )
  if (options.json) return answers.map((a) => ({broker: a.broker, ...a.result}))
  process.stdout.write(renderPartitionsState(answers, change === 'close' ? 'closed' : 'opened'))
  return undefined
}

/** `meta reload`: what changed, one line per change, after a heading naming the file. */
export function renderReload(answer: BrokerAnswer<ReloadReport>): string {
  const r = answer.result
  const verb = !r.applied ? (r.changed ? 'would change' : 'is up to date') : r.changed ? 'reloaded' : 'is up to date'
  const lines = [
    `broker ${answer.brokerId ?? '?'} (${answer.broker}) ${verb}: ${r.source} (config checksum ${r.checksumBefore}${r.checksumAfter !== r.checksumBefore ? ` → ${r.checksumAfter}` : ''})`,
  ]
  for (const c of r.changes) {
    const where = `[${c.section}]`
    let text: string
    if (c.key === '(section)') text = c.after === null ? `- ${where} removed` : `+ ${where} added`
    else text = `${c.applied ? '~' : '!'} ${where} ${c.key}: ${shown(c.key, c.before)} → ${shown(c.key, c.after)}`
    lines.push(`  ${text}${c.note === undefined ? '' : ` (${c.note})`}`)
  }
  if (r.changes.length === 0 && r.changed) lines.push('  (the file changed, but not in anything the broker uses)')
  // Topics created or changed online stay on top of the file (key by key, the overlay wins).
  for (const [topic, settings] of Object.entries(r.overlay ?? {})) {
    lines.push(`  overlay [topic=${topic}] ${shownSettings(settings)} (set online, kept over the file)`)
  }
  return `${lines.join('\n')}\n`
}

/** A value as a person writes it: deletePolicy's bare hours (MetaQ's `delete,1`) as `delete,1h`. */
export function shown(key: string, value: string | null): string {
  if (value === null) return '(unset)'
  return key === 'deletePolicy' ? value.replace(/^(delete|archive),(\d+)(?=,|$)/, '$1,$2h') : value
}

/** server.ini settings as `key=value` words, each value {@link shown}. */
export function shownSettings(settings: Record<string, string>): string {
  return Object.entries(settings)
    .map(([key, value]) => `${key}=${shown(key, value)}`)
    .join(' ')
}

/** `meta partitions close|open`: one row per broker. */
function renderPartitionsState(answers: ReadonlyArray<BrokerAnswer<PartitionsStateReply>>, verb: 'closed' | 'opened'): string {
  const list = (ps: number[]) => (ps.length === 0 ? '-' : ps.join(','))
  return `${renderTable(
    ['BROKER', 'TOPIC', verb.toUpperCase(), 'CLOSED-NOW'],
    answers.map((a) => [a.brokerId ?? a.broker, a.result.topic, list(a.result.changed), list(a.result.closed)]),
    {align: ['left', 'left', 'left', 'left']},
  )}\n`
}

/** `meta partitions move|delete`: the plan, one row per directory. */
export function renderPartitionPlan(plan: PartitionPlan): string {
  // Nothing to list: planSummary says so in words, not a bare header.
  if (plan.steps.length === 0) return ''
  const rows = plan.steps.map((s) => [s.action, s.from, s.to ?? '-', s.segments, s.archives, formatBytes(s.sizeBytes)])
  const table = renderTable(['ACTION', 'DIRECTORY', 'NEW NAME', 'SEGMENTS', 'ARCHIVES', 'SIZE'], rows, {
    align: ['left', 'left', 'left', 'right', 'right', 'right'],
  })
  return `${table}\n`
}

/** The last line on stderr after a plan. */
export function planSummary(plan: PartitionPlan, executed: boolean): string {
  const n = plan.steps.length
  if (n === 0)
    return `nothing to ${plan.action === 'move' ? 'move' : 'delete'}: topic "${plan.topic}" has no partition directory in ${plan.start}..${plan.end} in "${plan.dataDir}"\n`
  const dirs = `${n} partition director${n === 1 ? 'y' : 'ies'} of topic "${plan.topic}" in "${plan.dataDir}"`
  const missing = plan.missing.length === 0 ? '' : `; no directory for partition${plan.missing.length === 1 ? '' : 's'} ${compactRange(plan.missing)}`
  const what = plan.action === 'move' ? `moved by ${plan.offset! > 0 ? '+' : ''}${plan.offset}` : 'deleted'
  if (executed) return `${dirs} ${what}${missing}\n`
  return `dry run: nothing was changed (${dirs} would be ${what}${missing}); add --execute to apply\n`
}

function compactRange(ps: readonly number[]): string {
  return ps.length > 6 ? `${ps.slice(0, 5).join(', ')}, … ${ps.at(-1)}` : ps.join(', ')
}
