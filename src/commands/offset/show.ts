import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {mergeTopicSpecs, parseTopicSpec} from '../../cli/admin/parse.js'
import {renderOffsets} from '../../cli/admin/render.js'
import {usage} from '../../cli/admin/reset-options.js'
import {groupOffsets, type GroupOffsets} from '../../cli/admin/views.js'
import {connectGroupAdmin} from '../../client/group-admin.js'
import {validateGroupName} from '../../protocol/names.js'

export default class OffsetShow extends BaseCommand<typeof OffsetShow> {
  static override summary = "Show a consumer group's committed offsets and lag."

  static override description = `One row per partition: the committed offset (the next byte the group will read; - when the group has committed nothing there), the log start and end, the lag in bytes and in messages, and when the offset was committed (UTC).

Without --topic: every partition of the topics the group has committed offsets for or subscribes to (an unknown group is an error). With --topic: exactly the partitions named, committed or not.

Offsets are byte positions, as in MetaQ; the lag in messages is counted by the broker's side index.`

  static override examples = [
    {description: "A group's offsets and lag", command: '<%= config.bin %> <%= command.id %> --group billing'},
    {description: 'Two partitions of one topic', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:0,1'},
    {description: 'Total lag in messages, for a health check', command: "<%= config.bin %> <%= command.id %> -g billing --json | jq '[.partitions[].lagMessages] | add'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    timeout: timeoutFlag,
    group: Flags.string({char: 'g', summary: 'Consumer group.', required: true}),
    topic: Flags.string({
      char: 't',
      summary: 'Only this topic, optionally with partitions: orders, orders:0,2, orders:0-3. Repeatable.',
      multiple: true,
      helpValue: '<topic>[:<partitions>]',
    }),
  }

  async run(): Promise<GroupOffsets | undefined> {
    const {flags} = this
    usage(() => validateGroupName(flags.group))
    const topics = mergeTopicSpecs((flags.topic ?? []).map((t) => usage(() => parseTopicSpec(t))))
    const admin = await connectGroupAdmin({...connectionTarget(flags), timeoutMs: flags.timeout, logger: this.logger})
    try {
      const result = await groupOffsets(admin, flags.group, topics)
      if (this.jsonEnabled()) return result
      process.stdout.write(`${renderOffsets(result.partitions)}\n`)
      return undefined
    } finally {
      await admin.close()
    }
  }
}
