import {BaseCommand} from '../../cli/base-command.js'
import {spoolDirFlag} from '../../cli/send-spool.js'
import type {SpoolInfo} from '../../cli/spool-admin.js'

export default class SpoolList extends BaseCommand<typeof SpoolList> {
  static override summary = "List the spools 'meta send' left: messages a broker has not acknowledged yet."

  static override description = `One spool per topic under the spool directory ($META_STATE_DIR/spool, else $XDG_STATE_HOME/meta/spool, else ~/.local/state/meta/spool; --spool to choose), with its unsent messages, the broker or cluster it is for, and its damage: damaged ranges (bytes of which segment file, and why; the next send skips them) and what earlier sends kept in its quarantine directory. Spools are read without their locks: one in use by a running 'meta send' is counted too, and shown with its pid.`

  static override examples = [
    {description: 'The spools in the default directory', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'Those of another spool directory, as JSON', command: '<%= config.bin %> <%= command.id %> --spool /var/spool/meta --json'},
  ]

  static override enableJsonFlag = true

  static override flags = {spool: spoolDirFlag}

  async run(): Promise<{dir: string; spools: SpoolInfo[]} | undefined> {
    const [{defaultSpoolRoot}, {renderSpools, spoolInfos}] = await Promise.all([import('../../client/spool/index.js'), import('../../cli/spool-admin.js')])
    const dir = this.flags.spool ?? defaultSpoolRoot()
    const spools = spoolInfos(dir)
    if (this.jsonEnabled()) return {dir, spools}
    process.stdout.write(renderSpools(dir, spools))
    return undefined
  }
}
