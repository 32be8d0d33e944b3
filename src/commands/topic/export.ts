import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'
import {brokerIdFlag} from '../../cli/admin/topic-admin.js'

export default class TopicExport extends ClientCommand<typeof TopicExport> {
  static override summary = "Print a broker's effective configuration as a server.ini, with the topics created or changed online folded in."

  static override description = `The topics created or changed with meta topic create|alter live in the broker's topic overlay (<dataPath>/__meta_state/topic-overlay.json), on top of its server.ini. This prints one server.ini holding both: every [system] and [zookeeper] value, and each topic section with the overlay's keys over the file's. Use it to make the online changes part of the file (the overlay can stay: its keys equal the file's then). With --json: the overlay itself and the file text.

In a cluster give --zk with --broker-id.`

  static override examples = [
    {description: 'Write the file', command: '<%= config.bin %> <%= command.id %> > server.ini.new'},
    {description: 'The overlay only', command: "<%= config.bin %> <%= command.id %> --json | jq '.overlays'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
    'broker-id': brokerIdFlag,
  }

  async run(): Promise<{overlays: Record<string, Record<string, string>>; serverIni: string} | undefined> {
    if (this.flags.zk !== undefined && this.flags['broker-id'] === undefined)
      this.error('--zk needs --broker-id: each broker has its own configuration', {exit: 2})
    const {topicAdmin} = await import('../../cli/admin/topic-admin.js')
    const [answer] = await topicAdmin(this.adminContext(), this.flags['broker-id'], 'show', '-', {})
    const result = {overlays: answer?.overlays ?? {}, serverIni: answer?.serverIni ?? ''}
    if (this.jsonEnabled()) return result
    process.stdout.write(result.serverIni)
    return undefined
  }
}
