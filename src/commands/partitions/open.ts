import {Flags} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {connectionFlags, timeoutFlag} from '../../cli/client-flags.js'
import {partitionRange, rangeFlags} from '../../cli/admin/partition-flags.js'
import type {PartitionsStateReply} from '../../protocol/commands/broker-admin.js'

export default class PartitionsOpen extends ClientCommand<typeof PartitionsOpen> {
  static override summary = 'Reopen closed partitions of a topic.'

  static override description = `Online, on a running broker (MetaQ's open-partitions). Without --start/--end every closed partition of the topic is reopened; with them, only those in the range. Parked consumers and producers use them again at once.

With --zk the command goes to every broker that has the topic, or only to --broker-id.`

  static override examples = [
    {description: 'Partitions 2 and 3 of a topic', command: '<%= config.bin %> <%= command.id %> -t orders --start 2 --end 3 -b 127.0.0.1:8123'},
    {description: 'Every partition of the topic', command: '<%= config.bin %> <%= command.id %> -t orders'},
    {description: 'On broker 1 of a cluster', command: '<%= config.bin %> <%= command.id %> -t orders --zk 127.0.0.1:2181 --broker-id 1'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    ...rangeFlags,
    'broker-id': Flags.integer({summary: 'With --zk: only this broker.', min: 0, max: 1023, dependsOn: ['zk']}),
    timeout: timeoutFlag,
  }

  async run(): Promise<Array<{broker: string} & PartitionsStateReply> | undefined> {
    const {start, end} = partitionRange(this.flags)
    const {changePartitionState} = await import('../../cli/admin/operations.js')
    return changePartitionState('open', this.adminContext(), {...this.flags, start, end}, {json: this.jsonEnabled()})
  }
}
