import type {TopicSummary} from '../../cli/admin/render.js'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags} from '../../cli/client-flags.js'

export default class TopicList extends ClientCommand<typeof TopicList> {
  static override summary = 'List topics with their partition count, messages and size.'

  static override description = `Every topic the broker holds data for or has a [topic=…] section for in server.ini (from MetaQ's \`stats topics\` and meta's \`stats partitions\`). SIZE is the bytes stored in the partition logs. With --zk: every broker of the cluster, added up per topic.`

  static override examples = [
    {description: 'Topics on the local broker', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Topic names only', command: "<%= config.bin %> <%= command.id %> --json | jq -r '.[].topic'"},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...adminFlags,
  }

  async run(): Promise<TopicSummary[] | undefined> {
    const {mergeTopicSummaries, topicSummaries} = await import('../../cli/admin/views.js')
    const topics = mergeTopicSummaries(await this.withEachBroker((admin) => topicSummaries(admin)))
    if (this.jsonEnabled()) return topics
    const {renderTopics} = await import('../../cli/admin/render.js')
    process.stdout.write(topics.length === 0 ? 'no topics\n' : `${renderTopics(topics)}\n`)
    return undefined
  }
}
