import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {connectionFlags, connectionTarget, timeoutFlag} from '../../cli/client-flags.js'
import {onBrokers, renderPartitionsState} from '../../cli/admin/operations.js'
import {endFlag, partitionRange, startFlag, topicFlag} from '../../cli/admin/partition-flags.js'
import {isMetaError} from '../../protocol/errors.js'
import type {PartitionsStateReply} from '../../protocol/commands/broker-admin.js'

export default class PartitionsOpen extends BaseCommand<typeof PartitionsOpen> {
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
    topic: topicFlag,
    start: startFlag,
    end: endFlag,
    'broker-id': Flags.integer({summary: 'With --zk: only this broker.', min: 0, max: 1023, dependsOn: ['zk']}),
    timeout: timeoutFlag,
  }

  async run(): Promise<Array<{broker: string} & PartitionsStateReply> | undefined> {
    const {flags} = this
    const {start, end} = partitionRange(flags)
    const answers = await onBrokers(
      connectionTarget(flags),
      {
        timeoutMs: flags.timeout,
        logger: this.logger,
        brokerId: flags['broker-id'],
        // In a cluster a topic lives on some brokers only.
        skip: (error) => isMetaError(error, 'INVALID_ARGUMENT') && /does not accept/.test(error.message),
      },
      (admin) => admin.openPartitions(flags.topic, start, end),
    )
    if (this.jsonEnabled()) return answers.map((a) => ({broker: a.broker, ...a.result}))
    process.stdout.write(renderPartitionsState(answers, 'opened'))
    return undefined
  }
}
