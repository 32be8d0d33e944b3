import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {offlineFlags, partitionRange} from '../../cli/admin/partition-flags.js'
import type {OfflineResult} from '../../cli/admin/offline-plan.js'

export default class PartitionsMove extends BaseCommand<typeof PartitionsMove> {
  static override summary = 'Renumber partition directories of a topic in a data directory (offline; a dry run unless --execute).'

  static override description = `MetaQ's move-partitions: renames <topic>-<i> to <topic>-<i+offset> for every partition i from --start to --end, in an order that never renames onto a directory that is still to be moved. Refused when a target directory outside the range exists, when start + offset < 0, and while a broker (or another meta command) holds the data directory (its <dir>/.meta.lock names the process): stop the broker first.

Prints the plan (one row per directory) and changes nothing unless --execute is given. On a terminal --execute asks for confirmation (--yes skips it); without a terminal --execute alone applies. The directory is locked while the files change, so no broker can start on it meanwhile. Closed-partition marks move with their partitions. Committed offsets of consumer groups are not rewritten: reset them for the moved partitions (meta offset reset) if a group read them.`

  static override examples = [
    {
      description: 'Preview moving partitions 0..3 up by 4',
      command: '<%= config.bin %> <%= command.id %> -d /var/lib/meta -t orders --start 0 --end 3 --offset 4',
    },
    {description: 'Apply it from a script', command: '<%= config.bin %> <%= command.id %> -d /var/lib/meta -t orders --start 0 --end 3 --offset 4 --execute'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...offlineFlags,
    offset: Flags.integer({summary: 'How far to move: partition i becomes i + offset (may be negative).', required: true}),
  }

  async run(): Promise<OfflineResult | undefined> {
    const {flags} = this
    const {start, end} = partitionRange(flags, true)
    const [{planMovePartitions}, {runOfflinePlan}] = await Promise.all([import('../../broker/index.js'), import('../../cli/admin/offline-plan.js')])
    const plan = await planMovePartitions({dataDir: flags['data-dir'], topic: flags.topic, start: start!, end: end!, offset: flags.offset})
    const result = await runOfflinePlan(plan, {
      execute: flags.execute,
      yes: flags.yes,
      json: this.jsonEnabled(),
      command: 'meta partitions move',
      question: `Rename ${plan.steps.length} partition directories of "${flags.topic}"?`,
    })
    return this.jsonEnabled() ? result : undefined
  }
}
