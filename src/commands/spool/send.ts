import {Args, Flags} from '@oclif/core'
import {ClientCommand} from '../../cli/client-command.js'
import {ackTimeoutFlag, connectionFlags} from '../../cli/client-flags.js'
import {maxOutageFlag, spoolDirFlag} from '../../cli/send-spool.js'
import type {SpoolSendResult} from '../../cli/spool-admin.js'

export default class SpoolSend extends ClientCommand<typeof SpoolSend> {
  static override summary = "Send what spools hold (what 'meta send' could not send), in order, and remove it once acknowledged."

  static override description = `Sends the spools of the TOPICs given (all spools without any), in the order they were written, and waits for every acknowledgement. 'meta send' to the same topic, destination and spool directory does this by itself before sending new input.

A spool is sent only to the destination it was written for (the broker or cluster 'meta spool list' shows). Without -b or --zk each spool goes to its own; a spool that records none (written by an older meta) goes to the default broker (or $META_BROKER, $META_ZK, the profile's) and records it from then on. With -b or --zk only the spools for that destination are sent; the others are named with the way to send them, and --retarget sends them there on purpose.

A damaged spool loses only what is damaged: every whole record is sent, each damaged range is reported (bytes of which segment file, and why) and its bytes are kept in the spool's quarantine directory.

Exit status: 0 when every message was acknowledged; 1 otherwise (the rest stays in the spool), when a damaged range was skipped, or when a TOPIC given waits for another destination.`

  static override examples = [
    {description: 'Send every spool', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8123'},
    {description: 'One topic, giving up after 10 minutes without a broker', command: '<%= config.bin %> <%= command.id %> app-logs --max-outage 10m'},
    {description: 'Each spool to the broker or cluster it was written for', command: '<%= config.bin %> <%= command.id %>'},
    {
      description: 'A spool written for another broker, sent to this one on purpose',
      command: '<%= config.bin %> <%= command.id %> app-logs -b 10.0.0.7:8123 --retarget',
    },
  ]

  static override strict = false
  static override enableJsonFlag = true
  static override args = {topic: Args.string({description: 'Topics whose spools to send (default: all).'})}

  static override flags = {
    ...connectionFlags,
    topic: Flags.string({char: 't', summary: 'A topic whose spool to send (the same as a TOPIC argument). Repeatable.', multiple: true, helpValue: '<topic>'}),
    spool: spoolDirFlag,
    'max-outage': maxOutageFlag('Give up (exit 1, spool kept) when the broker is away this long (1s..30d; default: wait as long as it takes).'),
    'ack-timeout': ackTimeoutFlag,
    retarget: Flags.boolean({
      summary: 'Send spools written for another destination to -b/--zk, and record it in them (on purpose: their messages were meant for elsewhere).',
    }),
  }

  async run(): Promise<SpoolSendResult | undefined> {
    const [{defaultSpoolRoot}, {sendSpools}, {formatBytes, formatCount}] = await Promise.all([
      import('../../client/spool/index.js'),
      import('../../cli/spool-admin.js'),
      import('../../cli/format.js'),
    ])
    const named = [...this.positional, ...(this.flags.topic ?? [])]
    const target = await this.target()
    const json = this.jsonEnabled()
    const root = this.flags.spool ?? defaultSpoolRoot()
    const explicit = this.given.has('broker') || this.given.has('zk')
    if (this.flags.retarget && !explicit) this.error('--retarget needs -b or --zk: the destination the spools go to instead of their own', {exit: 2})
    const result = await sendSpools({
      root,
      topics: named,
      target: {broker: target.broker, zk: target.zk, zkRoot: target.zkRoot},
      explicit,
      retarget: this.flags.retarget,
      maxOutageMs: this.flags['max-outage'],
      ackTimeoutMs: this.flags['ack-timeout'],
      spoolFlag: this.flags.spool === undefined ? '' : ` --spool ${root}`,
      notify: (line) => process.stderr.write(`${line}\n`),
    })
    const waitingNamed = result.waiting.some((w) => named.includes(w.topic))
    if (!json) {
      const topics = Object.entries(result.sent)
      const total = topics.reduce((n, [, c]) => n + c, 0)
      const skippedBytes = result.skipped.reduce((n, s) => n + s.bytes, 0)
      const extras = [
        ...(result.pending > 0 ? [`${formatCount(result.pending)} left in the spool`] : []),
        ...(result.skipped.length > 0
          ? [
              `skipped ${formatCount(result.skipped.length)} damaged range${result.skipped.length === 1 ? '' : 's'} (${formatBytes(skippedBytes)}, kept in quarantine)`,
            ]
          : []),
        ...(result.waiting.length > 0
          ? [`${formatCount(result.waiting.length)} spool${result.waiting.length === 1 ? '' : 's'} left for another destination`]
          : []),
      ]
      const line =
        topics.length === 0
          ? 'no spools to send'
          : `sent ${formatCount(total)} message${total === 1 ? '' : 's'} from ${topics.map(([t, c]) => `${t} (${formatCount(c)})`).join(', ')}`
      process.stderr.write(`${[line, ...extras].join('; ')}\n`)
      if (result.error !== undefined) process.stderr.write(`error [${result.error.code}]: ${result.error.message}\n`)
    }
    process.exitCode = result.pending > 0 || result.error !== undefined || result.skipped.length > 0 || waitingNamed ? 1 : 0
    return json ? result : undefined
  }
}
