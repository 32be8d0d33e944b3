import {BaseCommand} from '../../cli/base-command.js'
import {offlineFlags, partitionRange} from '../../cli/admin/partition-flags.js'
import type {OfflineResult} from '../../cli/admin/offline-plan.js'

export default class PartitionsDelete extends BaseCommand<typeof PartitionsDelete> {
  static override summary = 'Delete partition directories of a topic from a data directory (offline; a dry run unless --execute).'

  static override description = `MetaQ's delete-partitions: removes <topic>-<i> with every segment, index and archive in it for every partition i from --start to --end. Refused while a broker (or another meta command) holds the data directory (its <dir>/.meta.lock names the process): stop the broker first. To shrink a topic: close the partitions (meta partitions close), let consumers finish them, stop the broker, delete them, lower numPartitions, start it again.

Prints the plan and changes nothing unless --execute is given. On a terminal --execute asks for confirmation (--yes skips it, as MetaQ's -f does); without a terminal --execute alone applies. Closed-partition marks of the deleted partitions are dropped. Committed offsets of consumer groups are kept (a group that reads the partition again starts from its log start).`

  static override examples = [
    {description: 'Preview deleting partitions 4..7', command: '<%= config.bin %> <%= command.id %> -d /var/lib/meta -t orders --start 4 --end 7'},
    {
      description: 'Delete them without a question',
      command: '<%= config.bin %> <%= command.id %> -d /var/lib/meta -t orders --start 4 --end 7 --execute --yes',
    },
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...offlineFlags,
  }

  async run(): Promise<OfflineResult | undefined> {
    const {flags} = this
    const {start, end} = partitionRange(flags, true)
    const [{planDeletePartitions}, {runOfflinePlan}] = await Promise.all([import('../../broker/index.js'), import('../../cli/admin/offline-plan.js')])
    const plan = await planDeletePartitions({dataDir: flags['data-dir'], topic: flags.topic, start: start!, end: end!})
    const result = await runOfflinePlan(plan, {
      execute: flags.execute,
      yes: flags.yes,
      json: this.jsonEnabled(),
      command: 'meta partitions delete',
      question: `Delete ${plan.steps.length} partition directories of "${flags.topic}" and all their messages?`,
    })
    return this.jsonEnabled() ? result : undefined
  }
}
