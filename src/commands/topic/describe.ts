import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {renderTopicPartitions} from '../../cli/admin/render.js'
import {usage} from '../../cli/admin/reset-options.js'
import {acrossBrokers, topicDetail, type TopicDetail} from '../../cli/admin/views.js'
import {MetaError, isMetaError} from '../../protocol/errors.js'
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
    ...connectionFlags,
    timeout: timeoutFlag,
  }

  async run(): Promise<TopicDetail | undefined> {
    const topic = this.args.topic
    usage(() => validateTopicName(topic))
    const target = connectionTarget(this.flags)
    const perBroker = await acrossBrokers(target, {timeoutMs: this.flags.timeout, logger: this.logger}, async (admin, brokerId) => {
      try {
        return (await topicDetail(admin, topic)).partitions.map((p) => ({...p, brokerId}))
      } catch (error) {
        // In a cluster a topic lives on some brokers only.
        if (target.zk !== undefined && isMetaError(error, 'NOT_FOUND')) return []
        throw error
      }
    })
    const partitions = perBroker.flat()
    if (partitions.length === 0) throw new MetaError('NOT_FOUND', `unknown topic "${topic}": no broker of the cluster has it`)
    const detail: TopicDetail = {topic, partitions}
    if (this.jsonEnabled()) return detail
    process.stdout.write(`${renderTopicPartitions(detail.partitions)}\n`)
    return undefined
  }
}
