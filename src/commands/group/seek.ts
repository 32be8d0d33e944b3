import type {ResetResult} from '../../cli/admin/reset-run.js'
import {resolveSeekFlags} from '../../cli/admin/seek-options.js'
import {ClientCommand} from '../../cli/client-command.js'
import {offsetMoveFlags} from '../../cli/admin/move-flags.js'
import {groupArg} from '../../cli/client-flags.js'

export default class GroupSeek extends ClientCommand<typeof GroupSeek> {
  static override summary = "Move a group's committed offsets, in rpk's words (a dry run unless --execute)."

  static override description = `The same operation as 'meta offset reset', with the same flags and the same dry-run rule; rpk's spellings: --to start (the log start), --to end (the log end), --to <time> (the first message stored at or after a point in time: @-1h, @2026-12-01T10:00:00Z, @<Unix ms>, or a bare Unix time in seconds or milliseconds, or an ISO 8601 time), or --to-file F (topic,partition,offset CSV, as --export writes it). Kafka's --to-earliest, --to-offset, --shift-by, --to-datetime, --by-duration and --from-file work too.

GROUP or -g names the group. Without --topic, every topic the group has committed offsets for (offset reset asks for --all-topics instead). A topic the broker (or cluster) does not have is an error naming the close topic names (exit 1), unless --allow-missing-topic. Nothing changes without --execute; --execute refuses while the group has live members (--force overrides) and asks for confirmation on a terminal (--yes skips it).`

  static override examples = [
    {description: 'Preview moving group billing to the start of everything it reads', command: '<%= config.bin %> <%= command.id %> billing --to start'},
    {description: 'Skip to the end of topic orders', command: '<%= config.bin %> <%= command.id %> billing --to end -t orders --execute'},
    {description: 'Replay from a point in time', command: '<%= config.bin %> <%= command.id %> billing --to @2026-12-01T10:00:00Z --execute'},
    {description: 'Replay the last hour', command: '<%= config.bin %> <%= command.id %> billing --to @-1h --execute'},
    {description: 'Restore saved offsets', command: '<%= config.bin %> <%= command.id %> billing --to-file billing.csv --execute'},
  ]

  static override enableJsonFlag = true

  static override args = {
    group: groupArg,
  }

  static override flags = offsetMoveFlags

  async run(): Promise<ResetResult | undefined> {
    const {flags} = this
    const json = this.jsonEnabled()
    const group = await this.groupOf(this.argOrFlag('group'))
    const request = resolveSeekFlags({...flags, group, json})
    const {offsetsFileOf, runReset} = await import('../../cli/admin/reset-run.js')
    const lines = await offsetsFileOf(request)
    const result = await this.withGroupAdmin((admin, target) =>
      runReset(admin, request, lines, {json, force: flags.force, yes: flags.yes, target, allowMissingTopic: flags['allow-missing-topic']}),
    )
    return json ? result : undefined
  }
}
