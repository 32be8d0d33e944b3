/**
 * `meta offset reset`: the plan (current → new offset per partition) for a scope and a
 * strategy, and applying it. Computing a plan reads only; `applyPlan` commits.
 *
 * Where each strategy lands (offsets are byte positions; counts are messages):
 *   earliest / latest   the log start / end
 *   current             the committed offset, unchanged (partitions without one are skipped)
 *   offset N, file      N clamped to [log start, log end]; an N inside a record moves to the
 *                       next record boundary (what a consumer does with such an offset)
 *   shift ±N            N messages from the committed offset (side index), clamped to the log;
 *                       a partition without a committed offset is an error
 *   time                the first message stored at or after the time; the log end when none
 */
import type {GroupOffsetsAdmin, MemberDescription, CommittedOffset} from '../../client/group-admin.js'
import {MetaError, isMetaError} from '../../protocol/errors.js'
import {checkPartition, compareRefs, expandTopics, mapLimit, MAX_IN_FLIGHT, tpKey, type TopicPartitionRef} from './offset-rows.js'
import type {OffsetLine} from './parse.js'
import type {ResetRequest, ResetStrategy} from './reset-options.js'

/** One partition of the plan. */
export interface PlanRow {
  topic: string
  brokerId?: number
  partition: number
  /** The committed offset now; null when the group has none for the partition. */
  current: number | null
  /** The offset the reset commits. */
  new: number
  logStart: number
  logEnd: number
  /** Why `new` differs from what was asked (clamped, moved to a record boundary). */
  note?: string
}

export interface ResetPlan {
  group: string
  strategy: string
  /** Live members when the plan was made (a reset is refused while there are any, unless forced). */
  members: MemberDescription[]
  partitions: PlanRow[]
  /** Partitions in scope that the plan leaves alone, and why. */
  skipped: Array<{topic: string; partition: number; reason: string}>
}

/** Partitions whose offset the plan changes (what --execute commits). */
export function changedRows(plan: ResetPlan): PlanRow[] {
  return plan.partitions.filter((r) => r.current !== r.new)
}

/** Compute the plan. `fileLines` are the parsed --from-file lines (strategy 'file'). */
export async function buildPlan(admin: GroupOffsetsAdmin, request: ResetRequest, fileLines?: OffsetLine[]): Promise<ResetPlan> {
  const {group} = request
  const members = await liveMembers(admin, group)
  const committed = await admin.fetchOffsets(group)
  const byKey = new Map(committed.map((c) => [tpKey(c.topic, c.partition), c]))
  const targets = await scopeOf(admin, request, committed, fileLines)
  const plan: ResetPlan = {group, strategy: request.strategyText, members, partitions: [], skipped: []}
  const rows = await mapLimit(targets, MAX_IN_FLIGHT, (t) => planRow(admin, request.strategy, t, byKey.get(tpKey(t.topic, t.partition))))
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]
    if (row === undefined) plan.skipped.push({...targets[i], reason: 'no committed offset to keep'})
    else plan.partitions.push(row)
  }
  return plan
}

/** Members of the group; none for a group the broker does not know (offsets may be set for a new group). */
async function liveMembers(admin: GroupOffsetsAdmin, group: string): Promise<MemberDescription[]> {
  try {
    return (await admin.describeGroup(group)).members
  } catch (error) {
    if (isMetaError(error, 'NOT_FOUND')) return []
    throw error
  }
}

interface Target extends TopicPartitionRef {
  /** --from-file: the offset asked for this partition. */
  offset?: number
}

async function scopeOf(admin: GroupOffsetsAdmin, request: ResetRequest, committed: CommittedOffset[], fileLines?: OffsetLine[]): Promise<Target[]> {
  const {scope, group} = request
  if (scope.kind === 'topics') return expandTopics(admin, scope.topics)
  if (scope.kind === 'file') {
    const lines = fileLines ?? []
    const known = new Map<string, number[]>()
    for (const line of lines) {
      let all = known.get(line.topic)
      if (all === undefined) known.set(line.topic, (all = await admin.partitions(line.topic)))
      checkPartition(line.topic, line.partition, all)
    }
    return lines.map((l) => ({topic: l.topic, partition: l.partition, offset: l.offset}))
  }
  const topics = [...new Set(committed.map((c) => c.topic))].sort()
  if (topics.length === 0) {
    throw new MetaError('NOT_FOUND', `group "${group}" has no committed offsets, so '--all-topics' names nothing: name topics with '--topic'`)
  }
  const refs = await expandTopics(
    admin,
    topics.map((topic) => ({topic})),
  )
  // Keep committed partitions a topic no longer has, so they are reset too.
  const seen = new Set(refs.map((r) => tpKey(r.topic, r.partition)))
  for (const c of committed) if (!seen.has(tpKey(c.topic, c.partition))) refs.push({topic: c.topic, partition: c.partition})
  return refs.sort(compareRefs)
}

async function planRow(admin: GroupOffsetsAdmin, strategy: ResetStrategy, target: Target, committed?: CommittedOffset): Promise<PlanRow | undefined> {
  const {topic, partition} = target
  const current = committed?.offset ?? null
  if (strategy.kind === 'current' && current === null) return undefined
  const {start, end} = await admin.bounds(topic, partition)
  const row: PlanRow = {topic, brokerId: admin.brokerIdOf(topic, partition), partition, current, new: 0, logStart: start, logEnd: end}
  switch (strategy.kind) {
    case 'earliest':
      row.new = start
      break
    case 'latest':
      row.new = end
      break
    case 'current':
      row.new = current as number
      break
    case 'offset':
    case 'file':
      await toOffset(admin, row, strategy.kind === 'offset' ? strategy.offset : (target.offset as number))
      break
    case 'shift':
      await shiftBy(admin, row, strategy.delta)
      break
    case 'time':
      row.new = await admin.seekTime(topic, partition, strategy.ms)
      if (row.new === end && end > start) row.note = `no message at or after ${new Date(strategy.ms).toISOString()}: the log end`
      break
  }
  return row
}

/** `offset` clamped to the log and moved to the next record boundary, with a note saying so. */
async function toOffset(admin: GroupOffsetsAdmin, row: PlanRow, offset: number): Promise<void> {
  if (offset < row.logStart) {
    row.new = row.logStart
    row.note = `${offset} is below the log start: clamped to ${row.logStart}`
  } else if (offset > row.logEnd) {
    row.new = row.logEnd
    row.note = `${offset} is past the log end: clamped to ${row.logEnd}`
  } else {
    row.new = offset === row.logEnd ? offset : await admin.shift(row.topic, row.partition, offset, 0)
    if (row.new !== offset) row.note = `${offset} is inside a message: moved to the next message at ${row.new}`
  }
}

async function shiftBy(admin: GroupOffsetsAdmin, row: PlanRow, delta: number): Promise<void> {
  if (row.current === null) {
    throw new MetaError(
      'INVALID_ARGUMENT',
      `cannot shift partition "${row.topic}:${row.partition}": group has no committed offset there; leave it out with '--topic ${row.topic}:<partitions>' or use another strategy`,
    )
  }
  const from = Math.min(Math.max(row.current, row.logStart), row.logEnd)
  row.new = await admin.shift(row.topic, row.partition, from, delta)
  if (delta === 0) return
  const moved = await admin.count(row.topic, row.partition, Math.min(from, row.new), Math.max(from, row.new))
  if (moved !== Math.abs(delta)) {
    row.note = `only ${moved} message${moved === 1 ? '' : 's'} ${delta < 0 ? 'before' : 'after'} the committed offset: clamped to the log ${delta < 0 ? 'start' : 'end'}`
  }
}

/** Commit the changed rows. Resolves once they are durable. Returns what was committed. */
export async function applyPlan(admin: GroupOffsetsAdmin, plan: ResetPlan): Promise<CommittedOffset[]> {
  const offsets = changedRows(plan).map((r) => ({topic: r.topic, partition: r.partition, offset: r.new, msgId: '-1'}))
  if (offsets.length > 0) await admin.commitOffsets(plan.group, offsets)
  return offsets
}

/** The refusal for a group with live members: names them and the way out. */
export function activeGroupError(plan: ResetPlan): MetaError {
  const names = plan.members.map((m) => `"${m.id}" (${m.host})`)
  const shown = names.length > 5 ? [...names.slice(0, 5), `and ${names.length - 5} more`] : names
  const error = new MetaError(
    'GROUP_ERROR',
    `group "${plan.group}" has ${plan.members.length} live member${plan.members.length === 1 ? '' : 's'}: ${shown.join(', ')}; stop them before resetting its offsets`,
    {details: {group: plan.group, members: plan.members.map((m) => m.id)}},
  ) as MetaError & {hint?: string}
  error.hint = "live members keep their own positions and overwrite these offsets at their next commit; '--force' resets anyway"
  return error
}
