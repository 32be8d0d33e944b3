/**
 * `meta autocomplete script <shell>`: the line the shell's rc file sources. oclif's version
 * points at setup files in the cache that only `meta autocomplete` writes, so a fresh HOME
 * that followed the documented `printf "$(meta autocomplete script bash)" >> ~/.bashrc` got no
 * completion until `meta autocomplete` had run once. This writes the files first when they
 * are missing (the same files `meta autocomplete --refresh-cache` writes).
 *
 * plugin-autocomplete exports no subpaths, so src/commands.ts reaches its command classes by
 * path and hands them in.
 */
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import type {Command, Config} from '@oclif/core'

interface ScriptCommand extends Command {
  readonly autocompleteCacheDir: string
  readonly cliBin: string
  run(): Promise<unknown>
}
type ScriptClass = (new (argv: string[], config: Config) => ScriptCommand) & Pick<Command.Class, 'args' | 'description' | 'hidden'>
type CreateClass = new (argv: string[], config: Config) => {run(): Promise<unknown>}

export function autocompleteScript(Script: ScriptClass, Create: CreateClass): Command.Class {
  // The class oclif runs: plugin-autocomplete's, writing the files it points at first.
  return class AutocompleteScript extends Script {
    static override args = Script.args
    static override description = Script.description
    static override hidden = Script.hidden

    override async run(): Promise<unknown> {
      const {args} = await this.parse({args: Script.args} as never)
      const shell = (args as {shell?: string}).shell ?? this.config.shell
      const setup =
        shell === 'powershell'
          ? join(this.autocompleteCacheDir, 'functions', 'powershell', `${this.cliBin}.ps1`)
          : join(this.autocompleteCacheDir, `${shell}_setup`)
      if (!existsSync(setup)) await new Create([], this.config).run()
      return super.run()
    }
  } as unknown as Command.Class
}
