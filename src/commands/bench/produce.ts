import type {BenchSummary} from '../../cli/bench/types.js'
import {benchFlags, verifyFlag} from '../../cli/bench/flags.js'
import {ClientCommand} from '../../cli/client-command.js'

export default class BenchProduce extends ClientCommand<typeof BenchProduce> {
  static override summary = 'Measure put throughput and acknowledgement latency.'
  static override description = `Sends messages of --size bytes as fast as acknowledgements allow (a window of --max-in-flight puts per connection), or at --rate messages per second, for --duration (default 10s) or --count messages. A progress line every --interval on stderr (msg/s, MB/s and the window's p99 ack latency), then a summary with msg/s, MB/s and ack latency percentiles (put sent → result received).

Against the broker at -b, or --embedded: a throwaway \`meta serve\` in a child process (its own core, as in production) with --flush and --partitions. MB = 10^6 payload bytes.`

  static override examples = [
    {description: '100-byte messages for 10 s against a throwaway broker', command: '<%= config.bin %> <%= command.id %> --embedded'},
    {description: 'The same with group commit (acknowledged after fdatasync)', command: '<%= config.bin %> <%= command.id %> --embedded --flush group-commit'},
    {
      description: '1 KiB messages, one million of them, summary as JSON',
      command: '<%= config.bin %> <%= command.id %> --embedded --size 1KiB --count 1000000 --json',
    },
    {
      description: "MetaQ's plain put, window 1000, every message read back and checked",
      command: '<%= config.bin %> <%= command.id %> --embedded --plain-put --max-in-flight 1000 --count 1000000 --verify',
    },
    {
      description: 'Against a running broker, 4 partitions of topic load',
      command: '<%= config.bin %> <%= command.id %> -b 127.0.0.1:8123 --topic load --duration 30s',
    },
  ]

  static override enableJsonFlag = true
  static override flags = {...benchFlags, verify: verifyFlag}

  async run(): Promise<BenchSummary> {
    const {renderSummary, runBench} = await import('../../cli/bench/command.js')
    const broker = this.flags.embedded ? undefined : (await this.target()).broker
    const summary = await runBench(
      'produce',
      {...this.flags, broker},
      {root: this.config.root, logger: this.logger, status: (line) => process.stderr.write(`${line}\n`), json: this.jsonEnabled()},
    )
    if (!this.jsonEnabled()) process.stdout.write(renderSummary(summary))
    return summary
  }
}
