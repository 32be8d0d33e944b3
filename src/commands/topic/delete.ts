import {Args, Flags} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {adminFlags, topicNameFlag} from '../../cli/client-flags.js'
import {usageErrors} from '../../cli/usage.js'
import {brokerIdFlag, checkTarget, type TopicAnswer} from '../../cli/admin/topic-admin.js'

export default class TopicDelete extends ClientCommand<typeof TopicDelete> {
  static override summary = 'Delete a topic from a running broker: its data, closed-partition marks and group offsets (a dry run unless --execute).'

  static override description = `Shows what would go — the partition count and the partitions with data, their messages and bytes, the closed partitions and the consumer groups with offsets there — and with --execute deletes it: the topic's section in the broker's topic overlay, every partition directory, its closed-partition marks and the group offsets the broker stores for it. In a cluster it also removes the consumer offsets kept in ZooKeeper for the topic's partitions on that broker (consumers/<group>/offsets/<topic>/<brokerId>-<p>), and the broker drops the topic's ZooKeeper registration unless its server.ini still names the topic. On a terminal --execute asks for confirmation (skip it with --yes); without a terminal nothing is asked.

A topic still named in server.ini (or accepted by a wildcard section, or by a broker without topic sections) stays accepted: its next put creates it again, empty; remove it from server.ini and reload to refuse it.

In a cluster give --zk with --broker-id: a topic is deleted on one broker.`

  static override examples = [
    {description: 'What would be deleted', command: '<%= config.bin %> <%= command.id %> orders'},
    {description: 'Delete it from a script', command: '<%= config.bin %> <%= command.id %> orders --execute --yes'},
  ]

  static override enableJsonFlag = true

  static override args = {
    topic: Args.string({description: 'Topic name (or -t/--topic).'}),
  }

  static override flags = {
    ...adminFlags,
    topic: topicNameFlag,
    'broker-id': brokerIdFlag,
    execute: Flags.boolean({summary: 'Delete (without it, only what would be deleted is printed).'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<TopicAnswer[] | undefined> {
    const topic = this.requiredArgOrFlag('topic')
    usageErrors(() => checkTarget(topic, this.flags))
    const {runTopicDelete} = await import('../../cli/admin/topic-admin.js')
    const answers = await runTopicDelete(this.adminContext(), topic, this.flags, this.jsonEnabled())
    return this.jsonEnabled() ? answers : undefined
  }
}
