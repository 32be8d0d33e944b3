import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {renderTopics, type TopicSummary} from '../../cli/admin/render.js'
import {acrossBrokers, mergeTopicSummaries, topicSummaries} from '../../cli/admin/views.js'

export default class TopicList extends BaseCommand<typeof TopicList> {
  static override summary = 'List topics with their partition count, messages and size.'

  static override description = `Every topic the broker holds data for or has a [topic=…] section for in server.ini (from MetaQ's \`stats topics\` and meta's \`stats partitions\`). SIZE is the bytes stored in the partition logs.`

  static override examples = [
    {description: 'Topics on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Topic names only', command: "<%= config.bin %> <%= command.id %> --json | jq -r '.[].topic'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    timeout: timeoutFlag,
  }

  async run(): Promise<TopicSummary[] | undefined> {
    const perBroker = await acrossBrokers(connectionTarget(this.flags), {timeoutMs: this.flags.timeout, logger: this.logger}, (admin) =>
      topicSummaries(admin),
    )
    const topics = mergeTopicSummaries(perBroker)
    if (this.jsonEnabled()) return topics
    process.stdout.write(topics.length === 0 ? 'no topics\n' : `${renderTopics(topics)}\n`)
    return undefined
  }
}
