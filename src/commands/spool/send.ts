import {Args} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {ackTimeoutFlag, connectionFlags} from '../../cli/client-flags.js'
import {maxOutageFlag, spoolDirFlag} from '../../cli/send-spool.js'
import type {SpoolSendResult} from '../../cli/spool-admin.js'

export default class SpoolSend extends ClientCommand<typeof SpoolSend> {
  static override summary = "Send what spools hold (what 'meta send' could not send), in order, and remove it once acknowledged."

  static override description = `Sends the spools of the TOPICs given (all spools without any) to the broker, in the order they were written, and waits for every acknowledgement. 'meta send' to the same topic with the same spool directory does this by itself before sending new input.

Exit status: 0 when every message was acknowledged; 1 otherwise (the rest stays in the spool).`

  static override examples = [
    {description: 'Send every spool', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8123'},
    {description: 'One topic, giving up after 10 minutes without a broker', command: '<%= config.bin %> <%= command.id %> app-logs -b 127.0.0.1:8123 --max-outage 10m'},
  ]

  static override strict = false
  static override enableJsonFlag = true
  static override args = {topic: Args.string({description: 'Topics whose spools to send (default: all).'})}

  static override flags = {
    ...connectionFlags,
    spool: spoolDirFlag,
    'max-outage': maxOutageFlag('Give up (exit 1, spool kept) when the broker is away this long (1s..30d; default: wait as long as it takes).'),
    'ack-timeout': ackTimeoutFlag,
  }

  async run(): Promise<SpoolSendResult | undefined> {
    const [{defaultSpoolRoot}, {sendSpools}, {formatCount}] = await Promise.all([
      import('../../client/spool/index.js'),
      import('../../cli/spool-admin.js'),
      import('../../cli/format.js'),
    ])
    const target = await this.target()
    const json = this.jsonEnabled()
    const result = await sendSpools({
      root: this.flags.spool ?? defaultSpoolRoot(),
      topics: this.positional,
      broker: target.broker,
      zk: target.zk,
      zkRoot: target.zkRoot,
      maxOutageMs: this.flags['max-outage'],
      ackTimeoutMs: this.flags['ack-timeout'],
      notify: (line) => process.stderr.write(`${line}\n`),
    })
    if (!json) {
      const topics = Object.entries(result.sent)
      const total = topics.reduce((n, [, c]) => n + c, 0)
      process.stderr.write(topics.length === 0 ? 'no spools to send\n' : `sent ${formatCount(total)} message${total === 1 ? '' : 's'} from ${topics.map(([t, c]) => `${t} (${formatCount(c)})`).join(', ')}${result.pending > 0 ? `; ${formatCount(result.pending)} left in the spool` : ''}\n`)
      if (result.error !== undefined) process.stderr.write(`error [${result.error.code}]: ${result.error.message}\n`)
    }
    process.exitCode = result.pending > 0 || result.error !== undefined ? 1 : 0
    return json ? result : undefined
  }
}
