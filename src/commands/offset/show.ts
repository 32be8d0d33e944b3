import {Flags} from '@oclif/core'
import {mergeTopicSpecs, parseTopicSpec} from '../../cli/admin/parse.js'
import type {GroupOffsets} from '../../cli/admin/views.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {validateGroupName} from '../../protocol/names.js'

export default class OffsetShow extends ClientCommand<typeof OffsetShow> {
  static override summary = "Show a consumer group's committed offsets and lag."

  static override description = `One row per partition: the committed offset (the next byte the group will read; - when the group has committed nothing there), the log start and end, the lag in messages (LAG) and in bytes (LAG-BYTES), and when the offset was committed (UTC).

Without --topic: every partition of the topics the group has committed offsets for or subscribes to (an unknown group is an error). With --topic: exactly the partitions named, committed or not; a topic the broker does not have and the group has no offsets for is an error naming the close topic names.

Offsets are byte positions, as in MetaQ; the lag in messages is counted by the broker's side index.`

  static override examples = [
    {description: "A group's offsets and lag", command: '<%= config.bin %> <%= command.id %> --group billing'},
    {description: 'Two partitions of one topic', command: '<%= config.bin %> <%= command.id %> -g billing -t orders:0,1'},
    {
      description: 'Total lag in messages, for a health check',
      command: "<%= config.bin %> <%= command.id %> -g billing --json | jq '[.partitions[].lagMessages] | add'",
    },
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
    group: Flags.string({char: 'g', summary: "Consumer group (default: the profile's group)."}),
    topic: Flags.string({
      char: 't',
      summary: 'Only this topic, optionally with partitions: orders, orders:0,2, orders:0-3. Repeatable.',
      multiple: true,
      helpValue: '<topic>[:<partitions>]',
    }),
  }

  async run(): Promise<GroupOffsets | undefined> {
    const group = await this.groupOf(this.flags.group)
    usageErrors(() => validateGroupName(group))
    const topics = mergeTopicSpecs((this.flags.topic ?? []).map((t) => usageErrors(() => parseTopicSpec(t))))
    const {groupOffsets} = await import('../../cli/admin/views.js')
    const result = await this.withGroupAdmin((admin, target) => groupOffsets(admin, group, topics, target))
    if (this.jsonEnabled()) return result
    const {renderOffsets} = await import('../../cli/admin/render.js')
    process.stdout.write(`${renderOffsets(result.partitions)}\n`)
    return undefined
  }
}
