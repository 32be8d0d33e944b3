import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {profileSettingFlags} from '../../cli/profile-flags.js'
import {usageErrors} from '../../cli/usage.js'

export default class ProfileCreate extends BaseCommand<typeof ProfileCreate> {
  static override summary = 'Save a connection profile: a broker or a cluster, and a default group.'

  static override description = `A profile saves -b (or --zk and --zk-root) and a default -g under a name, so other commands need not repeat them (as rpk profiles and nats contexts do). Select one with 'meta profile use NAME', --profile NAME or $META_PROFILE. Flags and $META_BROKER/$META_ZK always override the profile.

A profile may name a user (--user) and TLS settings (--tls, --ca, --cert, --key: file paths). It never holds a password: --password-file names a file with one, which must be readable by its owner only; $META_PASSWORD wins over it.

Profiles are kept in profiles.json in meta's config directory ($META_CONFIG_DIR, else $XDG_CONFIG_HOME/meta, else ~/.config/meta). Creating a profile that exists replaces it (--force is needed for that). The first profile created becomes the current one; --use makes any new one current.`

  static override examples = [
    {description: 'A local broker', command: '<%= config.bin %> <%= command.id %> local -b 127.0.0.1:8123 --use'},
    {description: 'A cluster, with a default group', command: '<%= config.bin %> <%= command.id %> prod --zk zk1:2181,zk2:2181 -g billing'},
    {
      description: "A broker's TLS port, as user alice (the password: $META_PASSWORD, a prompt, or an owner-only file)",
      command: '<%= config.bin %> <%= command.id %> secure -b broker1:8443 --tls --ca ca.pem --user alice --password-file ~/.config/meta/alice.pw',
    },
  ]

  static override enableJsonFlag = true

  static override args = {
    name: Args.string({description: 'Profile name (letters, digits, ".", "_", "-").', required: true}),
  }

  static override flags = {
    ...profileSettingFlags,
    use: Flags.boolean({summary: 'Make it the current profile.'}),
    force: Flags.boolean({summary: 'Replace a profile of the same name.'}),
  }

  async run(): Promise<{name: string; current: boolean; path: string} | undefined> {
    const {readProfiles, validateProfileName, writeProfiles} = await import('../../cli/profiles.js')
    const {flags} = this
    const name = usageErrors(() => validateProfileName(this.args.name))
    if (flags.broker === undefined && flags.zk === undefined && flags.group === undefined && flags.user === undefined) {
      this.error('nothing to save: give -b HOST:PORT or --zk CONNECT (and optionally -g GROUP)', {exit: 2})
    }
    const file = await readProfiles(this.config.configDir)
    if (file.profiles[name] !== undefined && !flags.force) {
      this.error(`profile "${name}" exists: add --force to replace it, or delete it first (meta profile delete ${name})`, {exit: 1})
    }
    file.profiles[name] = {
      ...(flags.broker === undefined ? {} : {broker: flags.broker}),
      ...(flags.zk === undefined ? {} : {zk: flags.zk}),
      ...(flags['zk-root'] === undefined ? {} : {zkRoot: flags['zk-root']}),
      ...(flags.group === undefined ? {} : {group: flags.group}),
      ...(flags.user === undefined ? {} : {user: flags.user}),
      ...(flags['password-file'] === undefined ? {} : {passwordFile: flags['password-file']}),
      ...(flags.tls ? {tls: true} : {}),
      ...(flags.ca === undefined ? {} : {ca: flags.ca}),
      ...(flags.cert === undefined ? {} : {cert: flags.cert, key: flags.key}),
    }
    if (flags.use || file.current === undefined) file.current = name
    const path = await writeProfiles(this.config.configDir, file)
    const current = file.current === name
    if (!this.jsonEnabled()) process.stderr.write(`saved profile "${name}"${current ? ' (current)' : ''} in ${path}\n`)
    return this.jsonEnabled() ? {name, current, path} : undefined
  }
}
