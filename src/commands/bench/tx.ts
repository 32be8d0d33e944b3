import {Flags} from '@oclif/core'
import {parseSize} from '../../cli/bench/flags.js'
import type {TxBenchSummary} from '../../cli/bench/tx.js'
import {brokerFlag, durationFlag, profileFlag} from '../../cli/client-flags.js'
import {ClientCommand} from '../../cli/client-command.js'
import {usageErrors} from '../../cli/usage.js'
import {MetaError} from '../../protocol/errors.js'

export default class BenchTx extends ClientCommand<typeof BenchTx> {
  static override summary = 'Measure committed local transactions per second.'
  static override description = `For each count of --per-tx (default 1,10,100 messages per transaction), --connections producers run begin → N sends → commit in a loop for --duration; a transaction counts once its commit is acknowledged (its messages are appended and visible). Prints transactions/s, messages/s and the begin → commit-acknowledged latency.

Against the broker at -b, or --embedded: a throwaway \`meta serve\` in a child process with --flush. The journal is fdatasynced at every commit (flushTxLogAtCommit=1, the default).`

  static override examples = [
    {description: 'Against a throwaway broker', command: '<%= config.bin %> <%= command.id %> --embedded'},
    {description: '4 producers, 1 KiB messages, as JSON', command: '<%= config.bin %> <%= command.id %> --embedded --connections 4 --size 1KiB --json'},
  ]

  static override enableJsonFlag = true
  static override flags = {
    broker: brokerFlag,
    profile: profileFlag,
    embedded: Flags.boolean({summary: 'Start a throwaway broker (meta serve, temp data dir) in a child process; stop it afterwards.', helpGroup: 'BROKER'}),
    flush: Flags.option({
      options: ['threshold', 'group-commit'] as const,
      summary: "The embedded broker's flush policy (default threshold).",
      dependsOn: ['embedded'],
      helpGroup: 'BROKER',
    })(),
    topic: Flags.string({char: 't', summary: 'Topic to use (default: a fresh one per run).'}),
    size: Flags.custom<number>({char: 's', summary: 'Payload bytes per message (100, 1KiB, …).', default: 100, parse: async (input) => parseSize(input)})(),
    'per-tx': Flags.string({summary: 'Messages per transaction, comma-separated: one run each.', default: '1,10,100'}),
    duration: durationFlag({summary: 'How long each run lasts (default 5s; 100ms to 1d).', legacyUnit: 's', minMs: 100, maxMs: 86_400_000}),
    connections: Flags.integer({summary: 'Producers, each with its own transactions.', default: 1, min: 1, max: 64}),
    quiet: Flags.boolean({char: 'q', summary: 'No status lines on stderr.'}),
  }

  async run(): Promise<TxBenchSummary> {
    const perTx = usageErrors(() => {
      const values = this.flags['per-tx'].split(',').map((v) => Number(v.trim()))
      if (values.some((v) => !Number.isInteger(v) || v < 1 || v > 100_000)) {
        throw MetaError.invalidArgument(`invalid --per-tx "${this.flags['per-tx']}": expected comma-separated counts 1..100000, e.g. 1,10,100`)
      }
      return values
    })
    const {renderTxBench, runTxBench} = await import('../../cli/bench/tx.js')
    const broker = this.flags.embedded ? undefined : (await this.target()).broker
    const summary = await runTxBench({
      broker,
      embedded: this.flags.embedded,
      flush: this.flags.flush,
      root: this.config.root,
      topic: this.flags.topic,
      messageBytes: this.flags.size,
      perTx,
      durationMs: this.flags.duration ?? 5000,
      connections: this.flags.connections,
      status: (line) => {
        if (!this.flags.quiet) process.stderr.write(`${line}\n`)
      },
      logger: this.logger,
    })
    if (!this.jsonEnabled()) process.stdout.write(renderTxBench(summary))
    return summary
  }
}
