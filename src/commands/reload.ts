import {Flags} from '@oclif/core'
import type {BrokerAnswer} from '../cli/admin/operations.js'
import {ClientCommand} from '../cli/client-command.js'
import {connectionFlags, timeoutFlag} from '../cli/client-flags.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'

export default class Reload extends ClientCommand<typeof Reload> {
  static override summary = 'Make a running broker re-read its server.ini and apply what changed.'

  static override description = `The broker reads the file it was started with (meta serve -c FILE) and applies, without a restart: every [topic=…] section (new topics are accepted at once, removed ones refuse puts, changed flush, retention, partition count, acceptPublish/acceptSubscribe and stat settings take effect) and the [system] keys topics inherit. Retention jobs are rescheduled, ZooKeeper registration and master_config_checksum are updated. Anything else that changed (the port, dataPath, brokerId, [zookeeper], …) is listed as needing a restart and keeps its running value.

A file with an error is refused whole, with the file, line and key named, and the broker keeps its running configuration (exit 1). So is a file that lowers numPartitions below a partition that holds data.

Prints one line per change: "+" a section added, "-" removed, "~" a value applied, "!" a value that waits for a restart. --dry-run asks the broker what would change without applying it. SIGHUP to the broker process does the same as this command; meta serve --watch-config reloads whenever the file changes.`

  static override examples = [
    {description: 'Apply an edited server.ini', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8123'},
    {description: 'Only show what would change', command: '<%= config.bin %> <%= command.id %> --dry-run'},
    {description: 'Every broker of a cluster, as JSON', command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --json'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    ...connectionFlags,
    'broker-id': Flags.integer({summary: 'With --zk: only this broker.', min: 0, max: 1023, dependsOn: ['zk']}),
    'dry-run': Flags.boolean({summary: 'Report what would change; apply nothing.'}),
    timeout: timeoutFlag,
  }

  async run(): Promise<Array<{brokerId: number | undefined; broker: string} & ReloadReport> | undefined> {
    const {flags} = this
    const {onBrokers, renderReload} = await import('../cli/admin/operations.js')
    const answers: Array<BrokerAnswer<ReloadReport>> = await onBrokers(this.adminContext(), {brokerId: flags['broker-id']}, (admin) =>
      admin.reload(flags['dry-run'] ? 'check' : 'apply'),
    )
    if (this.jsonEnabled()) return answers.map((a) => ({brokerId: a.brokerId, broker: a.broker, ...a.result}))
    for (const answer of answers) process.stdout.write(renderReload(answer))
    return undefined
  }
}
