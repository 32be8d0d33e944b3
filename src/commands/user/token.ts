import {Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {userNameArg, usersFileFlag} from '../../cli/users-flag.js'

export default class UserToken extends BaseCommand<typeof UserToken> {
  static override summary = "Make an HTTP token for a user (the broker's --http server), or revoke them."

  static override description = `Prints a new random token once, on stdout; the users file keeps only its SHA-256, so it cannot be shown again. An HTTP request that sends "Authorization: Bearer <token>" has the user's rights. --revoke drops every token of the user instead. A running broker applies it after meta reload or SIGHUP.`

  static override examples = [
    {description: 'A token for the dashboard user', command: '<%= config.bin %> <%= command.id %> dash --users conf/users.json'},
    {description: "Revoke dash's tokens", command: '<%= config.bin %> <%= command.id %> dash --revoke --users conf/users.json'},
  ]

  static override args = {name: userNameArg}
  static override flags = {
    users: usersFileFlag,
    revoke: Flags.boolean({summary: 'Drop every HTTP token of the user instead of making one.', default: false}),
  }

  async run(): Promise<void> {
    const {addToken, revokeTokens} = await import('../../broker/index.js')
    const {name} = this.args
    if (this.flags.revoke) {
      const count = revokeTokens(this.flags.users, name)
      process.stderr.write(`revoked ${count} token(s) of "${name}"\n`)
      return
    }
    process.stdout.write(`${addToken(this.flags.users, name)}\n`)
    process.stderr.write(`made an HTTP token for "${name}" (shown once: the users file keeps only its SHA-256)\n`)
  }
}
