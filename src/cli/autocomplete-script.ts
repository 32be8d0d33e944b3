/**
 * `meta autocomplete script <shell>`: the line the shell's rc file sources. oclif's version
 * points at setup files in the cache that only `meta autocomplete` writes, so a fresh HOME
 * that followed the documented `printf "$(meta autocomplete script bash)" >> ~/.bashrc` got no
 * completion until `meta autocomplete` had run once. This writes the files first when they
 * are missing (the same files `meta autocomplete --refresh-cache` writes).
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'
// plugin-autocomplete exports no subpaths, so its command classes are reached by path.
import Create from '../../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/create.js'
import Script from '../../node_modules/@oclif/plugin-autocomplete/lib/commands/autocomplete/script.js'

export default class AutocompleteScript extends Script {
  static override args = Script.args
  static override description = Script.description
  static override hidden = Script.hidden

  override async run(): Promise<void> {
    const {args} = await this.parse(AutocompleteScript)
    const shell = args.shell ?? this.config.shell
    const setup = shell === 'powershell' ? join(this.autocompleteCacheDir, 'functions', 'powershell', `${this.cliBin}.ps1`) : join(this.autocompleteCacheDir, `${shell}_setup`)
    if (!existsSync(setup)) await new Create([], this.config).run()
    await super.run()
  }
}
