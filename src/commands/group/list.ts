import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'

/** One group of `meta group list --json`. */
interface GroupListEntry {
  group: string
  generation: number
  memberCount: number
  topics: string[]
}

export default class GroupList extends ClientCommand<typeof GroupList> {
  static override summary = 'List consumer groups.'

  static override description = `Every group the broker knows: groups with live members, and groups with committed offsets (kept after their members leave). GENERATION counts membership changes since the broker started (0: no members since then); TOPICS are the topics the group committed offsets for or subscribes to. With --zk: the groups in the cluster's ZooKeeper.`

  static override examples = [
    {description: 'Groups on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {
      description: 'Groups with live members, as JSON',
      command: "<%= config.bin %> <%= command.id %> -b 10.0.0.5:8123 --json | jq '.[] | select(.memberCount > 0) | .group'",
    },
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
  }

  async run(): Promise<GroupListEntry[] | undefined> {
    const groups = await this.withGroupAdmin((admin) => admin.listGroups())
    // `members` is an array wherever a command prints it (group describe, offset reset): a count is memberCount.
    if (this.jsonEnabled()) return groups.map((g) => ({group: g.group, generation: g.generation, memberCount: g.members, topics: g.topics}))
    const {renderGroups} = await import('../../cli/admin/render.js')
    process.stdout.write(groups.length === 0 ? 'no groups\n' : `${renderGroups(groups)}\n`)
    return undefined
  }
}
