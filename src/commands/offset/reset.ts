import {readFile} from 'node:fs/promises'
import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {confirmOnTty, declined} from '../../cli/admin/confirm.js'
import {formatOffsetsCsv, parseOffsetsCsv, type OffsetLine} from '../../cli/admin/parse.js'
import {renderPlan} from '../../cli/admin/render.js'
import {resolveResetFlags} from '../../cli/admin/reset-options.js'
import {activeGroupError, applyPlan, buildPlan, changedRows, type PlanRow, type ResetPlan} from '../../cli/admin/reset-plan.js'
import {connectGroupAdmin} from '../../client/group-admin.js'
import {MetaError} from '../../protocol/errors.js'

/** `meta offset reset --json`. */
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

export default class OffsetReset extends BaseCommand<typeof OffsetReset> {
  static override summary = "Reset a consumer group's committed offsets (a dry run unless --execute)."

  static override description = `Computes new committed offsets for a group and prints the plan (GROUP TOPIC PARTITION CURRENT NEW). Nothing changes unless --execute is given.

Scope: --topic T (every partition of T), --topic T:0,2 or T:0-3 (some partitions; repeatable), or --all-topics (every topic the group has committed offsets for). --from-file takes its scope from the file.

Strategies (exactly one):
--to-earliest: the log start
--to-latest: the log end (skip everything not consumed yet)
--to-current: the committed offsets, unchanged (with --export: a backup)
--to-offset N: byte offset N, clamped to the log; inside a message: the next
--shift-by ±N: N messages forward, or back (-N), from the committed offset
--to-datetime T: the first message stored at or after time T
--by-duration D: the first message of the last D: 30m, 1h, 2d, PT1H, P1DT2H
--from-file CSV: topic,partition,offset lines as --export writes (- = stdin)

Times: 2026-12-01T10:00:00Z and 2026-12-01T12:00:00+02:00 are exact; without a zone (2026-12-01T10:00, 2026-12-01 10:00:00, 2026-12-01) a time is local to this machine (the TZ environment variable).

Offsets are byte positions in the partition log, as in MetaQ; message counts (--shift-by) are translated with the broker's side index.

Safety: --execute refuses while the group has live members, because they keep their own positions and overwrite the reset at their next commit; stop them first, or pass --force. On a terminal --execute asks for confirmation (skip it with --yes). Without a terminal nothing is ever asked: --execute is the confirmation, so scripts need no --yes (it is accepted anyway).

--export prints the plan as CSV (topic,partition,offset) instead of a table; --json prints the plan and the outcome as an object. Notes (clamped offsets, skipped partitions) go to stderr.`

  static override examples = [
    {description: 'Preview rewinding a group to the start of a topic', command: '<%= config.bin %> <%= command.id %> --group billing --topic orders --to-earliest'},
    {description: 'Apply it', command: '<%= config.bin %> <%= command.id %> --group billing --topic orders --to-earliest --execute'},
    {
      description: 'After an incident: replay everything stored since 10:00 UTC, from a script',
      command: '<%= config.bin %> <%= command.id %> -g billing --all-topics --to-datetime 2026-12-01T10:00:00Z --execute',
    },
    {description: 'Replay the last hour of partitions 0 and 1', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:0,1 --by-duration 1h'},
    {description: 'Skip the next 100 messages of partition 3', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:3 --shift-by 100 --execute'},
    {description: 'Save the current offsets to a file', command: '<%= config.bin %> <%= command.id %> -g billing --all-topics --to-current --export > billing.csv'},
    {description: 'Restore them later', command: '<%= config.bin %> <%= command.id %> -g billing --from-file billing.csv --execute'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    timeout: timeoutFlag,
    group: Flags.string({char: 'g', summary: 'Consumer group whose offsets to reset.', required: true, helpGroup: 'SCOPE'}),
    topic: Flags.string({
      char: 't',
      summary: 'Topic, optionally with partitions: orders, orders:0,2, orders:0-3. Repeatable.',
      multiple: true,
      helpValue: '<topic>[:<partitions>]',
      helpGroup: 'SCOPE',
    }),
    'all-topics': Flags.boolean({summary: 'Every topic the group has committed offsets for.', helpGroup: 'SCOPE'}),
    'to-earliest': Flags.boolean({summary: 'Reset to the log start.', helpGroup: 'STRATEGY'}),
    'to-latest': Flags.boolean({summary: 'Reset to the log end.', helpGroup: 'STRATEGY'}),
    'to-current': Flags.boolean({summary: 'Keep the committed offsets (use with --export).', helpGroup: 'STRATEGY'}),
    'to-offset': Flags.string({summary: 'Reset to byte offset N (clamped; moved to the next message boundary).', helpValue: '<N>', helpGroup: 'STRATEGY'}),
    'shift-by': Flags.string({
      summary: 'Move N messages from the committed offset: negative = back.',
      helpValue: '<±N>',
      helpGroup: 'STRATEGY',
    }),
    'to-datetime': Flags.string({summary: 'Reset to the first message at or after an ISO 8601 time (local without a zone).', helpValue: '<time>', helpGroup: 'STRATEGY'}),
    'by-duration': Flags.string({summary: 'Reset to the first message of the last duration (30m, 1h, PT1H).', helpValue: '<duration>', helpGroup: 'STRATEGY'}),
    'from-file': Flags.string({summary: 'Reset to the offsets of a topic,partition,offset CSV file (- = stdin).', helpValue: '<file>', helpGroup: 'STRATEGY'}),
    execute: Flags.boolean({summary: 'Commit the new offsets (without it, only the plan is printed).'}),
    export: Flags.boolean({summary: 'Print the plan as topic,partition,offset CSV (what --from-file reads).'}),
    force: Flags.boolean({summary: 'Reset even while the group has live members.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<ResetResult | undefined> {
    const {flags} = this
    const json = this.jsonEnabled()
    const request = resolveResetFlags({...flags, json})
    const lines = request.strategy.kind === 'file' ? await readOffsetsFile(request.strategy.path) : undefined
    const admin = await connectGroupAdmin({...connectionTarget(flags), timeoutMs: flags.timeout, logger: this.logger})
    try {
      const plan = await buildPlan(admin, request, lines)
      const changed = changedRows(plan)
      const note = (line: string) => {
        if (!json) process.stderr.write(`${line}\n`)
      }
      for (const row of plan.partitions) if (row.note !== undefined) note(`note: ${row.topic}:${row.partition}: ${row.note}`)
      for (const s of plan.skipped) note(`note: ${s.topic}:${s.partition}: skipped, ${s.reason}`)
      if (request.execute && plan.members.length > 0 && !flags.force) throw activeGroupError(plan)

      if (!json) process.stdout.write(`${request.export ? formatOffsetsCsv(plan.partitions.map(toLine)) : `${renderPlan(plan)}\n`}`)
      let executed = false
      if (!request.execute) {
        if (plan.members.length > 0 && !flags.force) note(`warning: ${activeGroupError(plan).message}; --execute will refuse unless --force`)
        note(`dry run: nothing was changed (${changed.length} of ${plan.partitions.length} offsets would change); add --execute to commit this plan`)
      } else if (changed.length === 0) {
        note(`nothing to change: every offset of group "${plan.group}" in scope is already where the plan puts it`)
      } else {
        if (plan.members.length > 0) note(`warning: --force: resetting group "${plan.group}" while it has live members; they may overwrite these offsets`)
        const ok = await confirmOnTty(`Commit ${changed.length} new offset${changed.length === 1 ? '' : 's'} for group "${plan.group}"?`, {yes: flags.yes})
        if (!ok) throw declined(`resetting the offsets of group "${plan.group}"`)
        await applyPlan(admin, plan)
        executed = true
        note(`committed ${changed.length} offset${changed.length === 1 ? '' : 's'} for group "${plan.group}"`)
      }
      return json
        ? {
            group: plan.group,
            strategy: plan.strategy,
            executed,
            changed: changed.length,
            partitions: plan.partitions,
            skipped: plan.skipped,
            members: plan.members.map((m) => m.id),
          }
        : undefined
    } finally {
      await admin.close()
    }
  }
}

function toLine(row: PlanRow): OffsetLine {
  return {topic: row.topic, partition: row.partition, offset: row.new}
}

/** Read and parse the --from-file CSV (`-` = stdin). */
async function readOffsetsFile(path: string): Promise<OffsetLine[]> {
  let text: string
  try {
    text = path === '-' ? await readStdin() : await readFile(path, 'utf8')
  } catch (error) {
    throw new MetaError('INVALID_ARGUMENT', `cannot read --from-file "${path}": ${(error as Error).message}`, {cause: error})
  }
  return parseOffsetsCsv(text, path === '-' ? 'stdin' : path)
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}
