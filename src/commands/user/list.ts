import {BaseCommand} from '../../cli/base-command.js'
import {formatLimits, usersFileFlag} from '../../cli/users-flag.js'
import type {UserSummary} from '../../broker/index.js'

export default class UserList extends BaseCommand<typeof UserList> {
  static override summary = 'List the users of a users file and their rights.'

  static override description = `One line per user: its name, each grant as RIGHT PATTERN, then its limits (meta user limit) when it has any. Keys and salts are never shown.`

  static override examples = [{description: 'Who may do what', command: '<%= config.bin %> <%= command.id %> --users conf/users.json'}]

  static override enableJsonFlag = true
  static override flags = {users: usersFileFlag}

  async run(): Promise<UserSummary[]> {
    const {listUsers} = await import('../../broker/index.js')
    const users = listUsers(this.flags.users)
    if (!this.jsonEnabled()) {
      for (const user of users) {
        const limits = Object.keys(user.limits).length === 0 ? '' : `\tlimits: ${formatLimits(user.limits)}`
        process.stdout.write(`${user.name}\t${user.grants.map((g) => `${g.right} ${g.pattern}`).join(', ') || '(no rights)'}${limits}\n`)
      }
    }
    return users
  }
}
