import {Flags} from '@oclif/core'
import type {ResetResult} from '../../cli/admin/reset-run.js'
import {resolveSeekFlags} from '../../cli/admin/seek-options.js'
import {ClientCommand} from '../../cli/client-command.js'
import {allowMissingTopicFlag} from '../../cli/admin/topic-check-flag.js'
import {adminFlags, groupArg} from '../../cli/client-flags.js'

export default class GroupSeek extends ClientCommand<typeof GroupSeek> {
  static override summary = "Move a group's committed offsets, in rpk's words (a dry run unless --execute)."

  static override description = `The same operation as 'meta offset reset', with rpk's flags: --to start (the log start), --to end (the log end), --to <time> (the first message stored at or after a Unix time in seconds or milliseconds, or an ISO 8601 time), or --to-file F (topic,partition,offset CSV, as 'meta offset reset --export' writes it).

Without --topic, every topic the group has committed offsets for. A topic the broker (or cluster) does not have is an error naming the close topic names (exit 1), unless --allow-missing-topic. Nothing changes without --execute; --execute refuses while the group has live members (--force overrides) and asks for confirmation on a terminal (--yes skips it). For byte offsets and message counts use 'meta offset reset --to-offset / --shift-by'.`

  static override examples = [
    {description: 'Preview moving group billing to the start of everything it reads', command: '<%= config.bin %> <%= command.id %> billing --to start'},
    {description: 'Skip to the end of topic orders', command: '<%= config.bin %> <%= command.id %> billing --to end -t orders --execute'},
    {description: 'Replay from a point in time', command: '<%= config.bin %> <%= command.id %> billing --to 2026-12-01T10:00:00Z --execute'},
    {description: 'Restore saved offsets', command: '<%= config.bin %> <%= command.id %> billing --to-file billing.csv --execute'},
  ]

  static override enableJsonFlag = true

  static override args = {
    group: groupArg,
  }

  static override flags = {
    ...adminFlags,
    to: Flags.string({summary: 'start, end, a Unix time (s or ms) or an ISO 8601 time.', helpValue: 'start|end|<time>'}),
    'to-file': Flags.string({summary: 'Offsets from a topic,partition,offset CSV file (- = stdin).', helpValue: '<file>'}),
    topic: Flags.string({
      char: 't',
      summary: 'Only this topic, optionally with partitions: orders, orders:0,2. Repeatable (default: every topic the group has offsets for).',
      multiple: true,
      helpValue: '<topic>[:<partitions>]',
    }),
    execute: Flags.boolean({summary: 'Commit the new offsets (without it, only the plan is printed).'}),
    export: Flags.boolean({summary: 'Print the plan as topic,partition,offset CSV.'}),
    'allow-missing-topic': allowMissingTopicFlag,
    force: Flags.boolean({summary: 'Move offsets even while the group has live members.'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<ResetResult | undefined> {
    const {flags} = this
    const json = this.jsonEnabled()
    const group = await this.groupOf(this.args.group)
    const request = resolveSeekFlags({...flags, group, json})
    const {offsetsFileOf, runReset} = await import('../../cli/admin/reset-run.js')
    const lines = await offsetsFileOf(request)
    const result = await this.withGroupAdmin((admin, target) =>
      runReset(admin, request, lines, {json, force: flags.force, yes: flags.yes, target, allowMissingTopic: flags['allow-missing-topic']}),
    )
    return json ? result : undefined
  }
}
