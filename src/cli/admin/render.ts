/**
 * Tables of the admin commands. Missing values (no committed offset, no owner) print as `-`.
 * Offsets are printed as they are (they are positions, not quantities); counts and sizes
 * are humanised.
 */
import type {GroupDescription, GroupSummary} from '../../client/group-admin.js'
import type {PartitionStats} from '../../client/admin.js'
import {formatBytes, formatCount, renderRows, renderTable, type Cell} from '../output.js'
import type {PartitionLag} from './offset-rows.js'
import type {ResetPlan} from './reset-plan.js'

/** ms since the epoch → `2026-12-01T10:00:00Z` (UTC, whole seconds); `-` for none. */
function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !(ms > 0)) return '-'
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** 1500 → "1.5s", 90000 → "1m30s", 250 → "250ms". */
function formatIdle(ms: number): string {
  if (ms < 1000) return `${ms}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)}s`
  const m = Math.floor(ms / 60_000)
  const s = Math.floor((ms % 60_000) / 1000)
  return m >= 60 ? `${Math.floor(m / 60)}h${m % 60}m` : `${m}m${s}s`
}

const num = (n: number | null): Cell => (n === null ? '-' : n)
const count = (n: number | null): Cell => (n === null ? '-' : formatCount(n))

/**
 * The column names every table uses for a partition's position (docs/cli.md): COMMITTED,
 * LOG-START, LOG-END (byte offsets), LAG (messages, as Kafka's tools count it) and LAG-BYTES.
 */
const LAG_HEADERS = ['COMMITTED', 'LOG-START', 'LOG-END', 'LAG', 'LAG-BYTES'] as const

function lagCells(r: PartitionLag): Cell[] {
  return [num(r.committed), r.logStart, r.logEnd, count(r.lagMessages), num(r.lagBytes)]
}

/** `meta offset show`. */
export function renderOffsets(rows: readonly PartitionLag[]): string {
  return renderTable(
    ['TOPIC', 'PARTITION', ...LAG_HEADERS, 'COMMITTED-AT'],
    rows.map((r) => [r.topic, r.partition, ...lagCells(r), formatTime(r.committedAtMs)]),
    {align: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left']},
  )
}

/** `meta group list`. */
export function renderGroups(groups: readonly GroupSummary[]): string {
  return renderTable(
    ['GROUP', 'MEMBERS', 'GENERATION', 'TOPICS'],
    groups.map((g) => [g.group, g.members, g.generation, g.topics.length > 0 ? g.topics.join(',') : '-']),
    {align: ['left', 'right', 'right', 'left']},
  )
}

/** A describe row: the lag plus who owns the partition. */
export interface OwnedLag extends PartitionLag {
  owner: string | null
}

/** `meta group describe`: a summary, the members, then one row per partition. */
export function renderGroupDescription(group: Omit<GroupDescription, 'offsets'>, rows: readonly OwnedLag[]): string {
  const summary = renderTable(['GROUP', 'GENERATION', 'MEMBERS'], [[group.group, group.generation, group.members.length]], {
    align: ['left', 'right', 'right'],
  })
  const parts = [summary]
  if (group.members.length > 0) {
    parts.push(
      renderTable(
        ['MEMBER', 'HOST', 'IDLE', 'SESSION-TIMEOUT', 'TOPICS', 'PARTITIONS'],
        group.members.map((m) => [
          m.id,
          m.host,
          formatIdle(m.idleMs),
          formatIdle(m.sessionTimeoutMs),
          m.topics.join(','),
          m.owned.length === 0 ? '-' : m.owned.map((o) => `${o.topic}:${o.partition}`).join(','),
        ]),
        // Always pass the alignments: renderTable hands cli-table3 `colAligns: undefined`, which it cannot read.
        {align: ['left', 'left', 'right', 'right', 'left', 'left']},
      ),
    )
  }
  parts.push(
    rows.length === 0
      ? 'no partitions: the group has no committed offsets and no subscribed topics'
      : renderTable(
          ['TOPIC', 'PARTITION', ...LAG_HEADERS, 'OWNER'],
          rows.map((r) => [r.topic, r.partition, ...lagCells(r), r.owner ?? '-']),
          {align: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left']},
        ),
  )
  return parts.join('\n\n')
}

/** `meta offset reset`: the plan. */
export function renderPlan(plan: ResetPlan): string {
  return renderTable(
    ['GROUP', 'TOPIC', 'PARTITION', 'CURRENT', 'NEW'],
    plan.partitions.map((r) => [plan.group, r.topic, r.partition, num(r.current), r.new]),
    {align: ['left', 'left', 'right', 'right', 'right']},
  )
}

/** One line of `meta topic list`. */
export interface TopicSummary {
  topic: string
  /** A count: `partitions` is an array wherever a command prints it. */
  partitionCount: number
  messageCount: number
  sizeBytes: number
}

/** `meta topic list`. */
export function renderTopics(topics: readonly TopicSummary[]): string {
  return renderTable(
    ['TOPIC', 'PARTITIONS', 'MESSAGES', 'SIZE'],
    topics.map((t) => [t.topic, t.partitionCount, formatCount(t.messageCount), formatBytes(t.sizeBytes)]),
    {align: ['left', 'right', 'right', 'right']},
  )
}

/** `meta topic describe`. */
export function renderTopicPartitions(partitions: readonly PartitionStats[]): string {
  const opt = (n: number | undefined, f: (n: number) => Cell): Cell => (n === undefined || Number.isNaN(n) ? '-' : f(n))
  // A STATE column only when a partition is closed (meta partitions close), so the usual table stays as it was.
  const state = partitions.some((p) => p.closed === true)
  const head = ['PARTITION', 'LOG-START', 'LOG-END', 'MESSAGES', 'SIZE', 'SEGMENTS', 'LAST-APPEND', ...(state ? ['STATE'] : [])]
  return renderTable(
    head,
    partitions.map((p) => [
      p.brokerId === undefined ? p.partition : `${p.brokerId}-${p.partition}`,
      p.minOffset,
      p.maxOffset,
      opt(p.messageCount, formatCount),
      opt(p.sizeBytes, formatBytes),
      opt(p.segments, (n) => n),
      formatTime(p.lastAppendMs),
      ...(state ? [p.closed === true ? 'closed' : 'open'] : []),
    ]),
    {align: ['right', 'right', 'right', 'right', 'right', 'right', 'left', ...(state ? (['left'] as const) : [])]},
  )
}

// Defined here rather than in views.ts (which builds it) so that the two files do not
// import each other.
/** `meta topic describe T -p N --json`: one partition and the groups that committed offsets on it. */
export interface PartitionDetail {
  topic: string
  /** The partition's number as the CLI counts (in a cluster: 0..n-1 over all brokers). */
  partition: number
  /** Its broker's stats (`partition` there is the broker's own number). */
  stats: PartitionStats
  groups: Array<{group: string; committed: number; lagMessages: number | null; lagBytes: number | null; committedAtMs: number | null}>
}

/** `meta topic describe T -p N`: the partition as key/value lines, then its groups. */
export function renderPartitionDetail(d: PartitionDetail): string {
  const p = d.stats
  const opt = (n: number | undefined, f: (n: number) => Cell = (x) => x): Cell => (n === undefined || Number.isNaN(n) ? '-' : f(n))
  const rows: Cell[][] = [
    ['TOPIC', d.topic],
    ['PARTITION', p.brokerId === undefined ? d.partition : `${d.partition} (broker ${p.brokerId}, partition ${p.partition})`],
    ['LOG-START', p.minOffset],
    ['LOG-END', p.maxOffset],
    ['MESSAGES', opt(p.messageCount, formatCount)],
    ['SIZE', opt(p.sizeBytes, formatBytes)],
    ['SEGMENTS', opt(p.segments)],
    ['UNFLUSHED', opt(p.unflushed)],
    ['LAST-APPEND', formatTime(p.lastAppendMs)],
    ...(p.closed === true ? [['STATE', 'closed (meta partitions open reopens it)']] : []),
  ]
  const summary = renderRows(rows)
  const groups =
    d.groups.length === 0
      ? 'no consumer group has committed an offset on this partition'
      : renderTable(
          ['GROUP', 'COMMITTED', 'LAG', 'LAG-BYTES', 'COMMITTED-AT'],
          d.groups.map((g) => [g.group, g.committed, count(g.lagMessages), num(g.lagBytes), formatTime(g.committedAtMs)]),
          {align: ['left', 'right', 'right', 'right', 'left']},
        )
  return `${summary}\n\n${groups}`
}
