import type {BenchSummary} from '../../cli/bench/types.js'
import {benchFlags} from '../../cli/bench/flags.js'
import {ClientCommand} from '../../cli/client-command.js'

export default class BenchConsume extends ClientCommand<typeof BenchConsume> {
  static override summary = 'Measure replay throughput: read a topic from its first message.'
  static override description = `Reads --topic from the earliest offset to its end with one consumer (all partitions, one connection): one pass, or passes until --duration is over, or until --count messages were read. A topic holding fewer messages than needed (--count, or 1,000,000 when it is empty) is filled first with messages of --size bytes; the fill is not measured.

Against the broker at -b, or --embedded: a throwaway \`meta serve\` in a child process. MB = 10^6 payload bytes.`

  static override examples = [
    {description: 'Fill a fresh topic with 1,000,000 messages of 100 B, then replay it', command: '<%= config.bin %> <%= command.id %> --embedded'},
    {description: 'Replay an existing topic for 20 s', command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8123 --topic orders --duration 20s'},
  ]

  static override enableJsonFlag = true
  static override flags = benchFlags

  async run(): Promise<BenchSummary> {
    const {renderSummary, runBench} = await import('../../cli/bench/command.js')
    const broker = this.flags.embedded ? undefined : (await this.target()).broker
    const summary = await runBench(
      'consume',
      {...this.flags, broker},
      {root: this.config.root, logger: this.logger, status: (line) => process.stderr.write(`${line}\n`), json: this.jsonEnabled()},
    )
    if (!this.jsonEnabled()) process.stdout.write(renderSummary(summary))
    return summary
  }
}
