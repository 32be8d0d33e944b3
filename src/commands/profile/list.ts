import {BaseCommand} from '../../cli/base-command.js'
import type {Profile} from '../../cli/profiles.js'

export default class ProfileList extends BaseCommand<typeof ProfileList> {
  static override summary = 'List connection profiles; * marks the one in use.'

  static override description = `The profile in use is the one --profile or $META_PROFILE names, else the current one (meta profile use).`

  static override examples = [{description: 'Profiles', command: '<%= config.bin %> <%= command.id %>'}]

  static override enableJsonFlag = true

  async run(): Promise<{current: string | null; profiles: Array<Profile & {name: string}>} | undefined> {
    const {readProfiles, selectedProfileName} = await import('../../cli/profiles.js')
    const file = await readProfiles(this.config.configDir)
    const selected = selectedProfileName(file, undefined)
    const profiles = Object.entries(file.profiles)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, p]) => ({name, ...p}))
    if (this.jsonEnabled()) return {current: selected ?? null, profiles}
    if (profiles.length === 0) {
      process.stdout.write('no profiles (create one with: meta profile create NAME -b HOST:PORT)\n')
      return undefined
    }
    const {renderTable} = await import('../../cli/output.js')
    const rows = profiles.map((p) => [
      p.name === selected ? '*' : '',
      p.name,
      p.broker ?? '-',
      p.zk === undefined ? '-' : `${p.zk}${p.zkRoot ? ` (root ${p.zkRoot})` : ''}`,
      p.group ?? '-',
    ])
    process.stdout.write(`${renderTable(['', 'NAME', 'BROKER', 'ZOOKEEPER', 'GROUP'], rows, {align: ['left', 'left', 'left', 'left', 'left']})}\n`)
    return undefined
  }
}
