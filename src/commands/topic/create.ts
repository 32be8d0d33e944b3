import {ClientCommand} from '../../cli/client-command.js'
import {usageErrors} from '../../cli/usage.js'
import {checkTarget, settingsOf, topicChangeArgs, topicChangeFlags, type TopicAnswer} from '../../cli/admin/topic-admin.js'

export default class TopicCreate extends ClientCommand<typeof TopicCreate> {
  static override summary = 'Create a topic on a running broker, with its partition count and [topic=…] settings.'

  static override description = `The broker adds a [topic=<name>] section to its configuration at once and keeps it across restarts in <dataPath>/__meta_state/topic-overlay.json, an overlay of server.ini (shown by meta reload --dry-run, meta topic describe and meta topic export). Each --set key=value is any key of a [topic=…] section, checked as server.ini checks it; without --partitions the topic gets [system] numPartitions. A partition's files are made at its first put. Refused for a topic that already exists (a section in server.ini, created online, or data on the broker) and beyond the broker's partition limit.

In a cluster give --zk with --broker-id: a topic is created on one broker.`

  static override examples = [
    {description: 'Four partitions', command: '<%= config.bin %> <%= command.id %> orders --partitions 4'},
    {description: 'With settings', command: '<%= config.bin %> <%= command.id %> audit --partitions 2 --set unflushThreshold=1 --set deletePolicy=delete,72h'},
    {description: 'On broker 1 of a cluster', command: '<%= config.bin %> <%= command.id %> orders --partitions 4 --zk 127.0.0.1:2181 --broker-id 1'},
  ]

  static override enableJsonFlag = true

  static override args = topicChangeArgs

  static override flags = topicChangeFlags

  async run(): Promise<TopicAnswer[] | undefined> {
    const topic = this.requiredArgOrFlag('topic')
    const settings = usageErrors(() => {
      checkTarget(topic, this.flags)
      return settingsOf(this.flags)
    })
    const {changeTopic} = await import('../../cli/admin/topic-admin.js')
    return changeTopic({context: this.adminContext(), brokerId: this.flags['broker-id'], json: this.jsonEnabled()}, 'create', topic, settings)
  }
}
