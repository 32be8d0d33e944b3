import type {GroupSummary} from '../../client/group-admin.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'

export default class GroupList extends ClientCommand<typeof GroupList> {
  static override summary = 'List consumer groups.'

  static override description = `Every group the broker knows: groups with live members, and groups with committed offsets (kept after their members leave). GENERATION counts membership changes since the broker started (0: no members since then); TOPICS are the topics the group committed offsets for or subscribes to. With --zk: the groups in the cluster's ZooKeeper.`

  static override examples = [
    {description: 'Groups on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Groups with live members, as JSON', command: "<%= config.bin %> <%= command.id %> -b 10.0.0.5:8123 --json | jq '.[] | select(.members > 0) | .group'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
  }

  async run(): Promise<GroupSummary[] | undefined> {
    const groups = await this.withGroupAdmin((admin) => admin.listGroups())
    if (this.jsonEnabled()) return groups
    const {renderGroups} = await import('../../cli/admin/render.js')
    process.stdout.write(groups.length === 0 ? 'no groups\n' : `${renderGroups(groups)}\n`)
    return undefined
  }
}
