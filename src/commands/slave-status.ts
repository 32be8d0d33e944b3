import {Flags} from '@oclif/core'
import {ClientCommand} from '../cli/client-command.js'
import {brokerFlag, timeoutFlag, tlsFlags, zkFlag, zkRootFlag} from '../cli/client-flags.js'
import type {SlaveStatusReport} from '../protocol/commands/replication.js'

type Answer = SlaveStatusReport & {healthy: boolean; problem?: string; address: string}

export default class SlaveStatus extends ClientCommand<typeof SlaveStatus> {
  static override summary = 'Is an asynchronous slave replicating, and how far behind its master is it.'

  static override description = `Asks the slave at -b (meta serve --slave-id N …) — or, with --zk, every slave registered in ZooKeeper (ids/<id>/slave<N>; --broker-id for one broker id's) — for its replication state: MetaQ's slave-status lines (Subscriber handler, Replicate partitions, per-topic counts, Replicate requests, Replicate runner, Replicate status: yes|no), then one row per partition: the master's end offset, the slave's end, the lag in bytes and messages, and the time since the last answer from the master.

Exit status: 0 healthy (the master answers, every partition replicates, none lags more than --max-lag messages; with --zk: every slave found); 1 lagging beyond --max-lag, not replicating, the address is not a slave, or no slave registered (one line on stderr says which); 2 usage error. --json prints the report (with --zk a list of them), each with a "healthy" field.`

  static override examples = [
    {description: 'Check the slave on port 8124', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8124'},
    {
      description: 'In a script: fail when more than 10000 messages behind',
      command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8124 --max-lag 10000 --json',
    },
    {description: 'Every slave of broker 0 in a cluster', command: '<%= config.bin %> <%= command.id %> --zk 127.0.0.1:2181 --broker-id 0'},
  ]

  static override enableJsonFlag = true

  static override flags = {
    broker: brokerFlag,
    zk: zkFlag,
    'zk-root': zkRootFlag,
    ...tlsFlags,
    'broker-id': Flags.integer({summary: 'With --zk: only the slaves of this broker id.', min: 0, max: 1023, dependsOn: ['zk']}),
    'max-lag': Flags.integer({summary: 'Most messages a partition may be behind and still count as healthy.', default: 1000, min: 0}),
    timeout: timeoutFlag,
  }

  async run(): Promise<Answer | Answer[] | undefined> {
    const {flags} = this
    const {slaveHealth, renderSlaveStatus} = await import('../cli/admin/slave-status.js')
    const target = await this.target()
    const addresses = target.zk === undefined ? [target.broker!] : await this.slavesInZk(target.zk, target.zkRoot, flags['broker-id'])
    const {connectAdmin} = await import('../client/admin.js')
    const answers: Answer[] = []
    for (const address of addresses) {
      const admin = await connectAdmin({broker: address, timeoutMs: flags.timeout, logger: this.logger})
      try {
        const report = await admin.slaveStatus()
        answers.push({address, ...report, ...slaveHealth(report, flags['max-lag'])})
      } finally {
        admin.close()
      }
    }
    const unhealthy = answers.filter((a) => !a.healthy)
    if (unhealthy.length > 0) process.exitCode = 1
    if (this.jsonEnabled()) return target.zk === undefined ? answers[0] : answers
    for (const answer of answers) {
      if (target.zk !== undefined) process.stdout.write(`== slave ${answer.slaveId} of broker ${answer.brokerId} at ${answer.address}\n`)
      process.stdout.write(renderSlaveStatus(answer, answer))
    }
    for (const answer of unhealthy) process.stderr.write(`slave-status: ${target.zk !== undefined ? `${answer.address}: ` : ''}${answer.problem}\n`)
    return undefined
  }

  /** `host:port` of every slave registered in ZooKeeper (of one broker id); NOT_FOUND when there is none. */
  private async slavesInZk(zk: string, zkRoot: string | undefined, brokerId: number | undefined): Promise<string[]> {
    const {ZkSession} = await import('../cluster/zk-session.js')
    const {ZkPaths, parseBrokerUrl} = await import('../cluster/paths.js')
    const {readSlaves} = await import('../cluster/discovery.js')
    const {MetaError} = await import('../protocol/errors.js')
    const paths = new ZkPaths(zkRoot)
    const session = await ZkSession.connect({connect: zk, logger: this.logger})
    try {
      const slaves = await readSlaves(session, paths, brokerId)
      if (slaves.length === 0) {
        throw new MetaError('NOT_FOUND', `no slave registered in ZooKeeper at ${zk}${paths.root}${brokerId !== undefined ? ` for broker id ${brokerId}` : ''}`)
      }
      return slaves.map((s) => {
        const address = parseBrokerUrl(s.url)!
        return `${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`
      })
    } finally {
      session.close()
    }
  }
}
