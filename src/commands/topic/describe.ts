import {Args, Flags} from '@oclif/core'
import type {PartitionDetail, TopicDetail} from '../../cli/admin/views.js'
import {ClientCommand} from '../../cli/client-command.js'
import type {AdminClient} from '../../client/admin.js'
import {adminFlags, topicNameFlag} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {validateTopicName} from '../../protocol/names.js'

/** The topic's overlay section on this broker; undefined when it has none or cannot say. */
async function onlineSettings(admin: AdminClient, topic: string): Promise<Record<string, string> | undefined> {
  if (admin.conn.capabilities.topicAdmin !== true) return undefined
  try {
    return (await admin.topicAdmin('show', topic)).overlay ?? undefined
  } catch {
    return undefined // a broker without the topic (cluster mode): no overlay there
  }
}

export default class TopicDescribe extends ClientCommand<typeof TopicDescribe> {
  static override summary = "Describe a topic's partitions: offsets, messages, size, segments; -p for one partition in detail."

  static override description = `One row per partition: the first and the end byte offset of its log (LOG-START, LOG-END), its messages, the bytes stored, its segment files and when a message was last appended (UTC). A topic configured in server.ini without data yet shows empty partitions; an unknown topic is an error naming close topic names (exit 1).

-p N shows one partition in detail: its broker, log bounds, messages, size, segments, unflushed messages and last append, then every consumer group with a committed offset there and its lag (LAG in messages, LAG-BYTES).

In a cluster (--zk) partitions are numbered 0..n-1 in MetaQ's order (broker id, then partition) and the table shows each as broker-partition (1-0 = broker 1, partition 0); -p takes the number.`

  static override examples = [
    {description: 'Partitions of a topic', command: '<%= config.bin %> <%= command.id %> orders'},
    {description: 'Partition 0 in detail, with the groups reading it', command: '<%= config.bin %> <%= command.id %> orders -p 0'},
    {
      description: 'Messages per partition, as JSON',
      command: "<%= config.bin %> <%= command.id %> orders --json | jq '.partitions[] | [.partition, .messageCount]'",
    },
  ]

  static override enableJsonFlag = true

  static override args = {
    topic: Args.string({description: 'Topic name (or -t/--topic).'}),
  }

  static override flags = {
    ...adminFlags,
    topic: topicNameFlag,
    partition: Flags.integer({char: 'p', summary: 'One partition in detail, with the groups that read it.', min: 0}),
  }

  async run(): Promise<(TopicDetail & {overlay?: Record<string, string>}) | PartitionDetail | undefined> {
    const topic = this.requiredArgOrFlag('topic')
    usageErrors(() => validateTopicName(topic))
    const views = await import('../../cli/admin/views.js')
    const target = await this.target()
    const cluster = target.zk !== undefined
    const perBroker = await this.withEachBroker(async (admin, brokerId) => {
      const partitions = await views.topicPartitions(admin, topic, cluster)
      return partitions.map((p) => ({...p, brokerId}))
    })
    const detail = await views.topicDetailOf(topic, perBroker.flat(), target)
    const render = await import('../../cli/admin/render.js')
    if (this.flags.partition === undefined) {
      // Settings set online (meta topic create|alter), from each broker's topic overlay.
      const overlays = (await this.withEachBroker((admin) => onlineSettings(admin, topic))).filter((o) => o !== undefined)
      if (this.jsonEnabled()) return overlays.length === 0 ? detail : {...detail, overlay: overlays[0]}
      process.stdout.write(`${render.renderTopicPartitions(detail.partitions)}\n`)
      const {shownSettings} = await import('../../cli/admin/operations.js')
      for (const overlay of overlays) {
        process.stdout.write(`set online (topic overlay): ${shownSettings(overlay)}\n`)
      }
      return undefined
    }
    const index = this.flags.partition
    const one = await this.withGroupAdmin((admin) => views.partitionDetail(admin, detail, index))
    if (this.jsonEnabled()) return one
    process.stdout.write(`${render.renderPartitionDetail(one)}\n`)
    return undefined
  }
}
