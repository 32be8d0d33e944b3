import {Flags} from '@oclif/core'
import {ClientCommand} from '../cli/client-command.js'
import {brokerFlag, timeoutFlag} from '../cli/client-flags.js'
import type {SlaveStatusReport} from '../protocol/commands/replication.js'

export default class SlaveStatus extends ClientCommand<typeof SlaveStatus> {
  static override summary = 'Is an asynchronous slave replicating, and how far behind its master is it.'

  static override description = `Asks the slave at -b (meta serve --slave-id N --slave-of MASTER) for its replication state: MetaQ's slave-status lines (Subscriber handler, Replicate partitions, per-topic counts, Replicate requests, Replicate runner, Replicate status: yes|no), then one row per partition: the master's end offset, the slave's end, the lag in bytes and messages, and the time since the last answer from the master.

Exit status: 0 healthy (the master answers, every partition replicates, none lags more than --max-lag messages); 1 lagging beyond --max-lag, not replicating, or the address is not a slave (one line on stderr says which); 2 usage error. --json prints the report with a "healthy" field.`

  static override examples = [
    {description: 'Check the slave on port 8124', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8124'},
    {description: 'In a script: fail when more than 10000 messages behind', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8124 --max-lag 10000 --json'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    broker: brokerFlag,
    'max-lag': Flags.integer({summary: 'Most messages a partition may be behind and still count as healthy.', default: 1000, min: 0}),
    timeout: timeoutFlag,
  }

  async run(): Promise<(SlaveStatusReport & {healthy: boolean; problem?: string}) | undefined> {
    const {flags} = this
    const {slaveHealth, renderSlaveStatus} = await import('../cli/admin/slave-status.js')
    const target = await this.target()
    if (target.zk !== undefined) this.error(`the profile points at ZooKeeper ${target.zk}: give the slave's address with -b HOST:PORT (slave-status over ZooKeeper is not built yet)`, {exit: 2})
    const [report] = await this.withEachBroker((admin) => admin.slaveStatus())
    const health = slaveHealth(report, flags['max-lag'])
    if (!health.healthy) process.exitCode = 1
    if (this.jsonEnabled()) return {...report, ...health}
    process.stdout.write(renderSlaveStatus(report, health))
    if (health.problem !== undefined) process.stderr.write(`slave-status: ${health.problem}\n`)
    return undefined
  }
}
