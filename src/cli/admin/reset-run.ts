/**
 * `meta offset reset` and `meta group seek` (the same operation in rpk's words): build the
 * plan, print it, and — with --execute — refuse while members are live (unless --force),
 * confirm on a terminal (unless --yes), and commit.
 */
import {readFile} from 'node:fs/promises'
import type {GroupOffsetsAdmin} from '../../client/group-admin.js'
import {MetaError} from '../../protocol/errors.js'
import type {ConnectionTarget} from '../connection.js'
import {withSpinner} from '../spinner.js'
import {confirmOnTty, declined} from './confirm.js'
import {formatOffsetsCsv, parseOffsetsCsv, type OffsetLine} from './parse.js'
import {renderPlan} from './render.js'
import type {ResetRequest} from './reset-options.js'
import {activeGroupError, applyPlan, buildPlan, changedRows, type PlanRow, type ResetPlan} from './reset-plan.js'
import {requireTopics} from './topic-check.js'

/** `meta offset reset --json` and `meta group seek --json`. */
export interface ResetResult {
  group: string
  strategy: string
  /** False for a dry run. */
  executed: boolean
  /** Partitions whose offset the plan changes (committed when executed). */
  changed: number
  partitions: PlanRow[]
  skipped: ResetPlan['skipped']
  /** Ids of the group's live members when the plan was made. */
  members: string[]
}

interface ResetRunOptions {
  json: boolean
  force: boolean
  yes: boolean
  /** Where the command connected: a topic named that it does not have is an error (topic-check.ts)… */
  target: ConnectionTarget
  /** … unless this is set (--allow-missing-topic). */
  allowMissingTopic?: boolean
}

/** Read and parse the --from-file CSV (`-` = stdin) for `request`, if it asks for one. */
export async function offsetsFileOf(request: ResetRequest): Promise<OffsetLine[] | undefined> {
  if (request.strategy.kind !== 'file') return undefined
  const path = request.strategy.path
  let text: string
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8')
  } catch (error) {
    throw new MetaError('INVALID_ARGUMENT', `cannot read --from-file "${path}": ${(error as Error).message}`, {cause: error})
  }
  return parseOffsetsCsv(text, path === '-' ? 'stdin' : path)
}

/** Plan, print, and (with --execute) commit. Returns the --json result. */
export async function runReset(
  admin: GroupOffsetsAdmin,
  request: ResetRequest,
  lines: OffsetLine[] | undefined,
  options: ResetRunOptions,
): Promise<ResetResult> {
  const {json} = options
  if (!options.allowMissingTopic) {
    const named = request.scope.kind === 'topics' ? request.scope.topics.map((t) => t.topic) : (lines ?? []).map((l) => l.topic)
    await requireTopics(admin, named, options.target)
  }
  const plan = await buildPlan(admin, request, lines)
  const changed = changedRows(plan)
  const note = (line: string) => {
    if (!json) process.stderr.write(`${line}\n`)
  }
  for (const row of plan.partitions) if (row.note !== undefined) note(`note: ${row.topic}:${row.partition}: ${row.note}`)
  for (const s of plan.skipped) note(`note: ${s.topic}:${s.partition}: skipped, ${s.reason}`)
  if (request.execute && plan.members.length > 0 && !options.force) throw activeGroupError(plan)

  if (!json) process.stdout.write(`${request.export ? formatOffsetsCsv(plan.partitions.map(toLine)) : `${renderPlan(plan)}\n`}`)
  let executed = false
  if (!request.execute) {
    if (plan.members.length > 0 && !options.force) note(`warning: ${activeGroupError(plan).message}; --execute will refuse unless --force`)
    note(`dry run: nothing was changed (${changed.length} of ${plan.partitions.length} offsets would change); add --execute to commit this plan`)
  } else if (changed.length === 0) {
    note(`nothing to change: every offset of group "${plan.group}" in scope is already where the plan puts it`)
  } else {
    if (plan.members.length > 0) note(`warning: --force: resetting group "${plan.group}" while it has live members; they may overwrite these offsets`)
    const what = `${changed.length} new offset${changed.length === 1 ? '' : 's'} for group "${plan.group}"`
    const ok = await confirmOnTty(`Commit ${what}?`, {yes: options.yes})
    if (!ok) throw declined(`resetting the offsets of group "${plan.group}"`)
    await withSpinner(`committing ${what}`, () => applyPlan(admin, plan), {disabled: json})
    executed = true
    note(`committed ${changed.length} offset${changed.length === 1 ? '' : 's'} for group "${plan.group}"`)
  }
  return {
    group: plan.group,
    strategy: plan.strategy,
    executed,
    changed: changed.length,
    partitions: plan.partitions,
    skipped: plan.skipped,
    members: plan.members.map((m) => m.id),
  }
}

function toLine(row: PlanRow): OffsetLine {
  return {topic: row.topic, partition: row.partition, offset: row.new}
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
