import {Args} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'

export default class ProfileUse extends BaseCommand<typeof ProfileUse> {
  static override summary = 'Make a profile the current one (used when no --profile or $META_PROFILE is given).'

  static override description = `The current profile is the one commands use when neither --profile nor $META_PROFILE names another; flags and $META_BROKER/$META_ZK still override it.`

  static override examples = [{description: 'Work against the cluster saved as "prod"', command: '<%= config.bin %> <%= command.id %> prod'}]

  static override args = {
    name: Args.string({description: 'Profile name.', required: true}),
  }

  async run(): Promise<void> {
    const {readProfiles, writeProfiles} = await import('../../cli/profiles.js')
    const {closeNames, quoteList} = await import('../../cli/suggest.js')
    const file = await readProfiles(this.config.configDir)
    const name = this.args.name
    if (file.profiles[name] === undefined) {
      const close = closeNames(name, Object.keys(file.profiles))
      this.error(`unknown profile "${name}"${close.length > 0 ? `; did you mean ${quoteList(close)}?` : ''} (meta profile list)`, {exit: 1})
    }
    file.current = name
    await writeProfiles(this.config.configDir, file)
    process.stderr.write(`current profile: ${name}\n`)
  }
}
