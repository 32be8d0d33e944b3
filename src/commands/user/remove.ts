import {BaseCommand} from '../../cli/base-command.js'
import {userNameArg, usersFileFlag} from '../../cli/users-flag.js'

export default class UserRemove extends BaseCommand<typeof UserRemove> {
  static override summary = 'Remove a user from a users file.'

  static override description = `After meta reload or SIGHUP, connections logged in as the user have no rights left (each request is refused with 403) and new logins fail.`

  static override examples = [{description: 'Remove bob', command: '<%= config.bin %> <%= command.id %> bob --users conf/users.json'}]

  static override args = {name: userNameArg}
  static override flags = {users: usersFileFlag}

  async run(): Promise<void> {
    const {removeUser} = await import('../../broker/index.js')
    removeUser(this.flags.users, this.args.name)
    process.stderr.write(`removed user "${this.args.name}"\n`)
  }
}
