import {BaseCommand} from '../../cli/base-command.js'
import {patternArg, rightArg, userNameArg, usersFileFlag} from '../../cli/users-flag.js'

export default class UserGrant extends BaseCommand<typeof UserGrant> {
  static override summary = 'Give a user a right on a topic or group pattern.'

  static override description = `Rights: put and get (topics matching PATTERN), group (consumer groups matching PATTERN: offsets, membership, seek/reset/delete), admin, replicate and tx (PATTERN '*'; tx: finish and recover other principals' transactions), describe (see matching topics and groups in stats, /metrics and the dashboard, e.g. for a Prometheus scrape user). A running broker applies it after meta reload or SIGHUP.`

  static override examples = [
    {
      description: "Let alice produce to and consume from topics starting with 'a-'",
      command:
        "<%= config.bin %> <%= command.id %> alice put 'a-*' --users conf/users.json && <%= config.bin %> <%= command.id %> alice get 'a-*' --users conf/users.json",
    },
  ]

  static override args = {name: userNameArg, right: rightArg, pattern: patternArg}
  static override flags = {users: usersFileFlag}

  async run(): Promise<void> {
    const {grantRight} = await import('../../broker/index.js')
    const {name, right, pattern} = this.args
    const changed = grantRight(this.flags.users, name, right, pattern)
    process.stderr.write(changed ? `granted ${right} ${pattern} to "${name}"\n` : `"${name}" already has ${right} ${pattern}\n`)
  }
}
