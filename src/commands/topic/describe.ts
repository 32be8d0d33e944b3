import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {brokerFlag, timeoutFlag} from '../../cli/client-flags.js'
import {renderTopicPartitions} from '../../cli/admin/render.js'
import {usage} from '../../cli/admin/reset-options.js'
import {topicDetail, type TopicDetail} from '../../cli/admin/views.js'
import {connectAdmin} from '../../client/index.js'
import {validateTopicName} from '../../protocol/names.js'

export default class TopicDescribe extends BaseCommand<typeof TopicDescribe> {
  static override summary = "Describe a topic's partitions: offsets, messages, size, segments."

  static override description = `One row per partition: the first and the end byte offset of its log (MIN-OFFSET, MAX-OFFSET), its messages, the bytes stored, its segment files and when a message was last appended (UTC). A topic configured in server.ini without data yet shows empty partitions; an unknown topic is an error (exit 1).`

  static override examples = [
    {description: 'Partitions of a topic', command: '<%= config.bin %> <%= command.id %> orders'},
    {description: 'Messages per partition, as JSON', command: "<%= config.bin %> <%= command.id %> orders --json | jq '.partitions[] | [.partition, .messageCount]'"},
  ]

  static override enableJsonFlag = true

  static override args = {
    topic: Args.string({description: 'Topic name.', required: true}),
  }

  static override flags = {
    broker: brokerFlag,
    timeout: timeoutFlag,
  }

  async run(): Promise<TopicDetail | undefined> {
    const topic = this.args.topic
    usage(() => validateTopicName(topic))
    const admin = await connectAdmin({broker: this.flags.broker, timeoutMs: this.flags.timeout, logger: this.logger})
    try {
      const detail = await topicDetail(admin, topic)
      if (this.jsonEnabled()) return detail
      process.stdout.write(`${renderTopicPartitions(detail.partitions)}\n`)
      return undefined
    } finally {
      admin.close()
    }
  }
}
