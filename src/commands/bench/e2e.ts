import type {BenchSummary} from '../../cli/bench/types.js'
import {benchFlags} from '../../cli/bench/flags.js'
import {ClientCommand} from '../../cli/client-command.js'
import {durationFlag} from '../../cli/client-flags.js'

export default class BenchE2e extends ClientCommand<typeof BenchE2e> {
  static override summary = 'Measure end-to-end latency: put sent → message received by a consumer.'
  static override description = `A producer and a long-polling consumer in this process: each payload starts with its send time, and the consumer records receive − send for every message. Sends at --rate messages per second (default 10,000) for --duration (default 10s) or --count messages, after a --warmup (default 1s, not recorded). The run ends when every acknowledged message has arrived (or 10 s after the last acknowledgement; the rest count as failed).

Against the broker at -b, or --embedded: a throwaway \`meta serve\` in a child process. MB = 10^6 payload bytes.`

  static override examples = [
    {description: 'Latency at 10,000 msg/s', command: '<%= config.bin %> <%= command.id %> --embedded'},
    {
      description: 'Latency at 50,000 msg/s of 1 KiB with group commit',
      command: '<%= config.bin %> <%= command.id %> --embedded --flush group-commit --rate 50000 --size 1KiB',
    },
  ]

  static override enableJsonFlag = true
  static override flags = {
    ...benchFlags,
    warmup: durationFlag({summary: 'Send (unrecorded) for this long first (up to 1h).', default: 1000, allowZero: true, maxMs: 3_600_000}),
  }

  async run(): Promise<BenchSummary> {
    const {renderSummary, runBench} = await import('../../cli/bench/command.js')
    const broker = this.flags.embedded ? undefined : (await this.target()).broker
    const summary = await runBench(
      'e2e',
      {...this.flags, broker},
      {root: this.config.root, logger: this.logger, status: (line) => process.stderr.write(`${line}\n`), json: this.jsonEnabled()},
    )
    if (!this.jsonEnabled()) process.stdout.write(renderSummary(summary))
    return summary
  }
}
