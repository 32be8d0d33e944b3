import {Flags} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {connectionFlags, timeoutFlag} from '../../cli/client-flags.js'
import {partitionRange, rangeFlags} from '../../cli/admin/partition-flags.js'
import {allowMissingTopicFlag} from '../../cli/admin/topic-check-flag.js'
import type {PartitionsStateReply} from '../../protocol/commands/broker-admin.js'

export default class PartitionsClose extends ClientCommand<typeof PartitionsClose> {
  static override summary = 'Close partitions of a topic: put and get answer 403 until they are reopened.'

  static override description = `Online, on a running broker (MetaQ's close-partitions). Closed partitions answer every put and get with 403 ("Partition[<brokerId>-<p>] has been closed"), as MetaQ does; meta's producers then send to the topic's other partitions. Use it to drain a partition before moving or deleting it, or to stop writes to a broker's partitions during maintenance.

Without --start/--end every partition of the topic is closed. A topic the broker (or cluster) does not have is an error naming the close topic names (exit 1), unless --allow-missing-topic. Beyond MetaQ, the state survives a restart of the broker (it is kept in <dataPath>/__meta_state/closed-partitions.json); reopen with meta partitions open.

With --zk the command goes to every broker that has the topic (partition numbers are each broker's own), or only to --broker-id.`

  static override examples = [
    {description: 'Partitions 2 and 3 of a topic', command: '<%= config.bin %> <%= command.id %> -t orders --start 2 --end 3 -b 127.0.0.1:8123'},
    {description: 'Every partition of the topic', command: '<%= config.bin %> <%= command.id %> -t orders'},
    {description: 'On broker 1 of a cluster', command: '<%= config.bin %> <%= command.id %> -t orders --zk 127.0.0.1:2181 --broker-id 1'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    ...rangeFlags,
    'allow-missing-topic': allowMissingTopicFlag,
    'broker-id': Flags.integer({summary: 'With --zk: only this broker.', min: 0, max: 1023, dependsOn: ['zk']}),
    timeout: timeoutFlag,
  }

  async run(): Promise<Array<{broker: string} & PartitionsStateReply> | undefined> {
    const {start, end} = partitionRange(this.flags)
    const {changePartitionState} = await import('../../cli/admin/operations.js')
    return changePartitionState('close', this.adminContext(), {...this.flags, start, end}, {json: this.jsonEnabled()})
  }
}
