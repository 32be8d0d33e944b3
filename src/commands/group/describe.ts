import type {GroupDetail} from '../../cli/admin/views.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags, groupArg, groupNameFlag} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {validateGroupName} from '../../protocol/names.js'

export default class GroupDescribe extends ClientCommand<typeof GroupDescribe> {
  static override summary = 'Describe a consumer group: members, ownership and lag per partition.'

  static override description = `First the group (generation, member count) and its live members (host they connect from, time since their last heartbeat, session timeout, partitions they own), then one row per partition of the topics the group committed offsets for or subscribes to: committed offset (- when none), log start and end, lag in messages (LAG) and in bytes (LAG-BYTES), and the member that owns it (- when none).

Offsets are byte positions, as in MetaQ. An unknown group (no members and no committed offsets) is an error (exit 1). Without GROUP: the profile's group.`

  static override examples = [
    {description: 'A group at a glance', command: '<%= config.bin %> <%= command.id %> billing'},
    {
      description: 'Partitions nobody owns, as JSON',
      command: "<%= config.bin %> <%= command.id %> billing --json | jq '.partitions[] | select(.owner == null)'",
    },
    {description: 'In a cluster', command: '<%= config.bin %> <%= command.id %> billing --zk 127.0.0.1:2181'},
  ]

  static override enableJsonFlag = true

  static override args = {
    group: groupArg,
  }

  static override flags = {
    ...adminFlags,
    group: groupNameFlag,
  }

  async run(): Promise<GroupDetail | undefined> {
    const group = await this.groupOf(this.argOrFlag('group'))
    usageErrors(() => validateGroupName(group))
    const {groupDetail} = await import('../../cli/admin/views.js')
    const detail = await this.withGroupAdmin((admin) => groupDetail(admin, group))
    if (this.jsonEnabled()) return detail
    const {renderGroupDescription} = await import('../../cli/admin/render.js')
    process.stdout.write(`${renderGroupDescription(detail, detail.partitions)}\n`)
    return undefined
  }
}
