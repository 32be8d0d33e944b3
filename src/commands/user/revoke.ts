import {BaseCommand} from '../../cli/base-command.js'
import {patternArg, rightArg, userNameArg, usersFileFlag} from '../../cli/users-flag.js'

export default class UserRevoke extends BaseCommand<typeof UserRevoke> {
  static override summary = 'Take a right back from a user.'

  static override description = `Removes exactly the grant RIGHT PATTERN (as meta user list shows it). A running broker applies it after meta reload or SIGHUP, to connected clients at their next request.`

  static override examples = [
    {description: "Stop alice producing to 'a-*'", command: "<%= config.bin %> <%= command.id %> alice put 'a-*' --users conf/users.json"},
  ]

  static override args = {name: userNameArg, right: rightArg, pattern: patternArg}
  static override flags = {users: usersFileFlag}

  async run(): Promise<void> {
    const {revokeRight} = await import('../../broker/index.js')
    const {name, right, pattern} = this.args
    const changed = revokeRight(this.flags.users, name, right, pattern)
    if (!changed) this.error(`"${name}" has no grant ${right} ${pattern} (meta user list --users ${this.flags.users})`, {exit: 1})
    process.stderr.write(`revoked ${right} ${pattern} from "${name}"\n`)
  }
}
