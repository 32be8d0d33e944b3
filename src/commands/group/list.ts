import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {renderGroups} from '../../cli/admin/render.js'
import {connectGroupAdmin, type GroupSummary} from '../../client/group-admin.js'

export default class GroupList extends BaseCommand<typeof GroupList> {
  static override summary = 'List consumer groups.'

  static override description = `Every group the broker knows: groups with live members, and groups with committed offsets (kept after their members leave). GENERATION counts membership changes since the broker started (0: no members since then); TOPICS are the topics the group committed offsets for or subscribes to.`

  static override examples = [
    {description: 'Groups on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Groups with live members, as JSON', command: "<%= config.bin %> <%= command.id %> -b 10.0.0.5:8123 --json | jq '.[] | select(.members > 0) | .group'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    timeout: timeoutFlag,
  }

  async run(): Promise<GroupSummary[] | undefined> {
    const admin = await connectGroupAdmin({...connectionTarget(this.flags), timeoutMs: this.flags.timeout, logger: this.logger})
    try {
      const groups = await admin.listGroups()
      if (this.jsonEnabled()) return groups
      process.stdout.write(groups.length === 0 ? 'no groups\n' : `${renderGroups(groups)}\n`)
      return undefined
    } finally {
      await admin.close()
    }
  }
}
