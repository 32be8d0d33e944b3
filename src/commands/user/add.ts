import {BaseCommand} from '../../cli/base-command.js'
import {readNewPassword, userNameArg, usersFileFlag} from '../../cli/users-flag.js'

export default class UserAdd extends BaseCommand<typeof UserAdd> {
  static override summary = 'Add a user to a users file, or set a new password for one.'

  static override description = `The password is asked on the terminal (twice, not echoed), or read as the first line of stdin. Only SCRAM-SHA-256 keys derived from it are stored (never the password). Creates the file (mode 0600) if needed; the user starts with no rights (meta user grant). A running broker sees the change after meta reload or SIGHUP.`

  static override examples = [
    {description: 'Add alice (prompts for the password)', command: '<%= config.bin %> <%= command.id %> alice --users conf/users.json'},
    {description: 'From a script', command: 'printf "%s\\n" "$PW" | <%= config.bin %> <%= command.id %> alice --users conf/users.json'},
  ]

  static override args = {name: userNameArg}
  static override flags = {users: usersFileFlag}

  async run(): Promise<void> {
    const {addUser} = await import('../../broker/index.js')
    const password = await readNewPassword(this.args.name)
    const added = addUser(this.flags.users, this.args.name, password)
    process.stderr.write(`${added ? 'added user' : 'new password for user'} "${this.args.name}" in ${this.flags.users}\n`)
  }
}
