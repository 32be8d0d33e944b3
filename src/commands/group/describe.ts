import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {renderGroupDescription} from '../../cli/admin/render.js'
import {usage} from '../../cli/admin/reset-options.js'
import {groupDetail, type GroupDetail} from '../../cli/admin/views.js'
import {connectGroupAdmin} from '../../client/group-admin.js'
import {validateGroupName} from '../../protocol/names.js'

export default class GroupDescribe extends BaseCommand<typeof GroupDescribe> {
  static override summary = 'Describe a consumer group: members, ownership and lag per partition.'

  static override description = `First the group (generation, member count) and its live members (host they connect from, time since their last heartbeat, session timeout, partitions they own), then one row per partition of the topics the group committed offsets for or subscribes to: committed offset (- when none), log start and end, lag in bytes (LAG) and in messages (LAG-MSGS), and the member that owns it (- when none).

Offsets are byte positions, as in MetaQ. An unknown group (no members and no committed offsets) is an error (exit 1).`

  static override examples = [
    {description: 'A group at a glance', command: '<%= config.bin %> <%= command.id %> billing'},
    {description: 'Partitions nobody owns, as JSON', command: "<%= config.bin %> <%= command.id %> billing --json | jq '.partitions[] | select(.owner == null)'"},
  ]

  static override enableJsonFlag = true

  static override args = {
    group: Args.string({description: 'Consumer group name.', required: true}),
  }

  static override flags = {
    ...connectionFlags,
    timeout: timeoutFlag,
  }

  async run(): Promise<GroupDetail | undefined> {
    const group = this.args.group
    usage(() => validateGroupName(group))
    const admin = await connectGroupAdmin({...connectionTarget(this.flags), timeoutMs: this.flags.timeout, logger: this.logger})
    try {
      const detail = await groupDetail(admin, group)
      if (this.jsonEnabled()) return detail
      process.stdout.write(`${renderGroupDescription(detail, detail.partitions)}\n`)
      return undefined
    } finally {
      await admin.close()
    }
  }
}
