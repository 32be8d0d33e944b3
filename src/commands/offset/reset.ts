import type {ResetResult} from '../../cli/admin/reset-run.js'
import {offsetMoveFlags} from '../../cli/admin/move-flags.js'
import {resolveSeekFlags} from '../../cli/admin/seek-options.js'
import {ClientCommand} from '../../cli/client-command.js'

export type {ResetResult} from '../../cli/admin/reset-run.js'

export default class OffsetReset extends ClientCommand<typeof OffsetReset> {
  static override summary = "Reset a consumer group's committed offsets (a dry run unless --execute)."

  static override description = `Computes new committed offsets for a group and prints the plan (GROUP TOPIC PARTITION CURRENT NEW). Nothing changes unless --execute is given. 'meta group seek' is the same operation with the same flags (rpk's --to and --to-file work here too).

Scope: --topic T (every partition of T), --topic T:0,2 or T:0-3 (some partitions; repeatable), or --all-topics (every topic the group has committed offsets for). --from-file takes its scope from the file. A topic the broker (or cluster) does not have is an error naming the close topic names (exit 1), so a typo commits nothing; --allow-missing-topic goes ahead on purpose.

Strategies (exactly one):
--to-earliest: the log start
--to-latest: the log end (skip everything not consumed yet)
--to-current: the committed offsets, unchanged (with --export: a backup)
--to-offset N: byte offset N, clamped to the log; inside a message: the next
--shift-by ±N: N messages forward, or back (-N), from the committed offset
--to-datetime T: the first message stored at or after time T (also @-1h, @<ISO time>, @<Unix ms>)
--by-duration D: the first message of the last D: 30m, 1h, 2d, PT1H, P1DT2H (also @-1h)
--from-file CSV: topic,partition,offset lines as --export writes (- = stdin)

Times: 2026-12-01T10:00:00Z and 2026-12-01T12:00:00+02:00 are exact; without a zone (2026-12-01T10:00, 2026-12-01 10:00:00, 2026-12-01) a time is local to this machine (the TZ environment variable).

Offsets are byte positions in the partition log, as in MetaQ; message counts (--shift-by) are translated with the broker's side index.

Safety: --execute refuses while the group has live members, because they keep their own positions and overwrite the reset at their next commit; stop them first, or pass --force. On a terminal --execute asks for confirmation (skip it with --yes). Without a terminal nothing is ever asked: --execute is the confirmation, so scripts need no --yes (it is accepted anyway).

--export prints the plan as CSV (topic,partition,offset) instead of a table; --json prints the plan and the outcome as an object. Notes (clamped offsets, skipped partitions) go to stderr.`

  static override examples = [
    {
      description: 'Preview rewinding a group to the start of a topic',
      command: '<%= config.bin %> <%= command.id %> --group billing --topic orders --to-earliest',
    },
    {description: 'Apply it', command: '<%= config.bin %> <%= command.id %> --group billing --topic orders --to-earliest --execute'},
    {
      description: 'After an incident: replay everything stored since 10:00 UTC, from a script',
      command: '<%= config.bin %> <%= command.id %> -g billing --all-topics --to-datetime 2026-12-01T10:00:00Z --execute',
    },
    {description: 'Replay the last hour of partitions 0 and 1', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:0,1 --by-duration 1h'},
    {description: 'Skip the next 100 messages of partition 3', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:3 --shift-by 100 --execute'},
    {
      description: 'Save the current offsets to a file',
      command: '<%= config.bin %> <%= command.id %> -g billing --all-topics --to-current --export > billing.csv',
    },
    {description: 'Restore them later', command: '<%= config.bin %> <%= command.id %> -g billing --from-file billing.csv --execute'},
  ]

  static override enableJsonFlag = true

  static override flags = offsetMoveFlags

  async run(): Promise<ResetResult | undefined> {
    const {flags} = this
    const json = this.jsonEnabled()
    const group = await this.groupOf(flags.group)
    const request = resolveSeekFlags({...flags, group, json}, Date.now(), 'reset')
    const {offsetsFileOf, runReset} = await import('../../cli/admin/reset-run.js')
    const lines = await offsetsFileOf(request)
    const result = await this.withGroupAdmin((admin, target) =>
      runReset(admin, request, lines, {json, force: flags.force, yes: flags.yes, target, allowMissingTopic: flags['allow-missing-topic']}),
    )
    return json ? result : undefined
  }
}
