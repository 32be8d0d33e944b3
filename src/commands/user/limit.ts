import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {userNameArg, usersFileFlag} from '../../cli/users-flag.js'
import type {Limits} from '../../broker/index.js'

const countFlag = (summary: string) => Flags.string({summary: `${summary} ("none" removes the limit).`, helpValue: 'N'})
const rateFlag = (summary: string) => Flags.string({summary: `${summary}, a size per second such as 10MiB ("none" removes the limit).`, helpValue: 'SIZE'})

export default class UserLimit extends BaseCommand<typeof UserLimit> {
  static override summary = "Set a user's quotas: connections, consumer groups, partitions, produce and fetch byte rates."

  static override description = `Counts are refused past their limit with an error naming it (a login past --connections, a group-join that would start one group too many, a put that would create one partition too many); usage counts the groups and partitions whose names the user's group and put grants match. Byte rates are not refused: past them the broker delays the user's answers and stops reading its connections for as long as it takes to come back under the rate (as Kafka's quotas do), summed over all of its connections. The broker-wide caps (maxPartitions, the group cap) stay the outer bound. A running broker applies it after meta reload or SIGHUP; meta stats meta-principals and /metrics show each user's usage.`

  static override examples = [
    {
      description: 'Let bob hold at most 50 partitions and 20 groups, and produce 10 MiB/s',
      command: '<%= config.bin %> <%= command.id %> bob --partitions 50 --groups 20 --produce-byte-rate 10MiB --users conf/users.json',
    },
    {description: "Drop bob's produce rate limit", command: '<%= config.bin %> <%= command.id %> bob --produce-byte-rate none --users conf/users.json'},
  ]

  static override args = {name: userNameArg}
  static override flags = {
    users: usersFileFlag,
    connections: countFlag('Connections the user may hold at once'),
    groups: countFlag('Consumer groups matching its group grants that may exist at once'),
    partitions: countFlag('Partitions of topics matching its put grants that may exist'),
    'produce-byte-rate': rateFlag('Bytes per second its puts may bring, over all its connections'),
    'fetch-byte-rate': rateFlag('Bytes per second its gets may take, over all its connections'),
  }

  async run(): Promise<Limits> {
    const {setLimits} = await import('../../broker/index.js')
    const {parseSize} = await import('../../cli/bench/flags.js')
    const {MetaError} = await import('../../protocol/errors.js')
    const flags = this.flags
    const count = (flag: string, value: string | undefined) => {
      if (value === undefined) return undefined
      if (value === 'none') return null
      if (!/^\d+$/.test(value)) throw MetaError.invalidArgument(`invalid --${flag} ${JSON.stringify(value)}: expected a count or "none"`)
      return Number(value)
    }
    const rate = (value: string | undefined) => (value === undefined ? undefined : value === 'none' ? null : parseSize(value))
    const changes = {
      connections: count('connections', flags.connections),
      groups: count('groups', flags.groups),
      partitions: count('partitions', flags.partitions),
      produceByteRate: rate(flags['produce-byte-rate']),
      fetchByteRate: rate(flags['fetch-byte-rate']),
    }
    if (Object.values(changes).every((v) => v === undefined)) {
      this.error('nothing to set: give at least one of --connections, --groups, --partitions, --produce-byte-rate, --fetch-byte-rate', {exit: 2})
    }
    const limits = setLimits(flags.users, this.args.name, changes)
    const {formatLimits} = await import('../../cli/users-flag.js')
    if (!this.jsonEnabled()) process.stderr.write(`limits of "${this.args.name}": ${formatLimits(limits)}\n`)
    return limits
  }

  static override enableJsonFlag = true
}
