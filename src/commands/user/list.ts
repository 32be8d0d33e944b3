import {BaseCommand} from '../../cli/base-command.js'
import {formatLimits, usersFileFlag} from '../../cli/users-flag.js'
import type {UserSummary} from '../../broker/index.js'

export default class UserList extends BaseCommand<typeof UserList> {
  static override summary = 'List the users of a users file and their rights.'

  static override description = `A table with a row per user: its name, its grants (RIGHT PATTERN, comma-separated) and its limits (meta user limit; - for none). --json gives the same as objects. Keys and salts are never shown.`

  static override examples = [{description: 'Who may do what', command: '<%= config.bin %> <%= command.id %> --users conf/users.json'}]

  static override enableJsonFlag = true
  static override flags = {users: usersFileFlag}

  async run(): Promise<UserSummary[]> {
    const {listUsers} = await import('../../broker/index.js')
    const users = listUsers(this.flags.users)
    if (!this.jsonEnabled()) {
      if (users.length === 0) {
        process.stdout.write(`no users in ${this.flags.users} (add one with: meta user add NAME --users ${this.flags.users})\n`)
        return users
      }
      const {renderTable} = await import('../../cli/output.js')
      const rows = users.map((user) => [
        user.name,
        user.grants.map((g) => `${g.right} ${g.pattern}`).join(', ') || '(no rights)',
        Object.keys(user.limits).length === 0 ? '-' : formatLimits(user.limits),
      ])
      process.stdout.write(`${renderTable(['USER', 'RIGHTS', 'LIMITS'], rows)}\n`)
    }
    return users
  }
}
