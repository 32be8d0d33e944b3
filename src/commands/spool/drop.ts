import {Args, Flags} from '@oclif/core'
import {BaseCommand} from '../../cli/base-command.js'
import {spoolDirFlag} from '../../cli/send-spool.js'
import type {SpoolDropResult} from '../../cli/spool-admin.js'

export default class SpoolDrop extends BaseCommand<typeof SpoolDrop> {
  static override summary = 'Discard spools and the messages in them (a dry run unless --execute).'

  static override description = `Shows the spools of the TOPICs given (all spools without any), and with --execute deletes them: their messages are never sent. On a terminal --execute asks for confirmation (skip it with --yes); without a terminal nothing is asked. A spool in use by a running 'meta send' is refused; a TOPIC without a spool is an error (exit 1).`

  static override examples = [
    {description: 'What would be discarded', command: '<%= config.bin %> <%= command.id %> app-logs'},
    {description: 'Discard it', command: '<%= config.bin %> <%= command.id %> app-logs --execute'},
  ]

  static override strict = false
  static override enableJsonFlag = true
  static override args = {topic: Args.string({description: 'Topics whose spools to drop (default: all).'})}

  static override flags = {
    topic: Flags.string({char: 't', summary: 'A topic whose spool to drop (the same as a TOPIC argument). Repeatable.', multiple: true, helpValue: '<topic>'}),
    spool: spoolDirFlag,
    execute: Flags.boolean({summary: 'Delete (without it, only what would be deleted is printed).'}),
    yes: Flags.boolean({char: 'y', summary: 'Do not ask for confirmation on a terminal.'}),
  }

  async run(): Promise<SpoolDropResult | undefined> {
    const [{defaultSpoolRoot}, {dropSpools}] = await Promise.all([import('../../client/spool/index.js'), import('../../cli/spool-admin.js')])
    const json = this.jsonEnabled()
    const result = await dropSpools(this.flags.spool ?? defaultSpoolRoot(), [...this.positional, ...(this.flags.topic ?? [])], {
      execute: this.flags.execute,
      yes: this.flags.yes,
      json,
    })
    return json ? result : undefined
  }
}
