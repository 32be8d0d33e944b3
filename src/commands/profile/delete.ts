import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'

export default class ProfileDelete extends BaseCommand<typeof ProfileDelete> {
  static override summary = 'Delete a connection profile.'

  static override description = `Removes the profile from profiles.json in meta's config directory; when it was the current one, no profile is current afterwards.`

  static override examples = [{description: 'Forget the profile "old"', command: '<%= config.bin %> <%= command.id %> old'}]

  static override args = {
    name: Args.string({description: 'Profile name.', required: true}),
  }

  async run(): Promise<void> {
    const {readProfiles, writeProfiles} = await import('../../cli/profiles.js')
    const file = await readProfiles(this.config.configDir)
    const name = this.args.name
    if (file.profiles[name] === undefined) this.error(`unknown profile "${name}" (meta profile list)`, {exit: 1})
    delete file.profiles[name]
    if (file.current === name) delete file.current
    await writeProfiles(this.config.configDir, file)
    process.stderr.write(`deleted profile "${name}"${file.current === undefined ? '; no profile is current now' : ''}\n`)
  }
}
