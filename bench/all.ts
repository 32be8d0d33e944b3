/**
 * The standard `meta bench` set (`npm run bench`), each run through the built CLI with an
 * embedded broker (a child `meta serve`), so the load generator and the broker are separate
 * processes, as in production. Prints each run's progress on stderr and a markdown table of
 * the results on stdout.
 *
 *   BENCH_SECONDS   length of each timed run (default 10)
 *   BENCH_ONLY      run only scenarios whose name contains this text
 *   BENCH_REPEAT    runs per scenario (default 1); the table shows the best run (highest
 *                   msg/s; lowest p99 for the rate-limited e2e) and lists every run's figure
 *
 *   PLAIN_COUNT     messages of the plain-put runs at 100 B (default 1,000,000; 1 KiB: 30 %)
 *   CLI_LINES       lines of the CLI runs (default 1,000,000)
 *
 * The last two columns are CPU time per message of the load generator and of the broker
 * (steadier than msg/s when other work shares the machine). The plain-put rows are issue
 * 14's: MetaQ's 7-token put with checksum, one connection, window 1000, every message read
 * back and checked afterwards (`--verify`; the read-back is the row below each, a replay that
 * checks every CRC and payload). The CLI rows (bench/cli-throughput.ts) time whole
 * processes, start included: the client column is then the CLI's CPU per line.
 */
import {spawn} from 'node:child_process'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import type {BenchSummary} from '../src/cli/bench/index.js'
import {runCliThroughput} from './cli-throughput.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SECONDS = process.env.BENCH_SECONDS ?? '10'
const ONLY = process.env.BENCH_ONLY
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1))
const PLAIN_COUNT = Math.max(1, Number(process.env.PLAIN_COUNT ?? 1_000_000))
const PLAIN = ['--plain-put', '--max-in-flight', '1000', '--verify']

interface Scenario {
  name: string
  args: string[]
}

const SCENARIOS: Scenario[] = [
  {name: 'plain put 100 B, threshold flush', args: ['bench', 'produce', '--embedded', '--size', '100', ...PLAIN, '--count', `${PLAIN_COUNT}`]},
  {
    name: 'plain put 100 B, group commit',
    args: ['bench', 'produce', '--embedded', '--size', '100', '--flush', 'group-commit', ...PLAIN, '--count', `${PLAIN_COUNT}`],
  },
  {
    name: 'plain put 1 KiB, threshold flush',
    args: ['bench', 'produce', '--embedded', '--size', '1KiB', ...PLAIN, '--count', `${Math.ceil(PLAIN_COUNT * 0.3)}`],
  },
  {
    name: 'plain put 1 KiB, group commit',
    args: ['bench', 'produce', '--embedded', '--size', '1KiB', '--flush', 'group-commit', ...PLAIN, '--count', `${Math.ceil(PLAIN_COUNT * 0.3)}`],
  },
  {name: 'produce 100 B, threshold flush', args: ['bench', 'produce', '--embedded', '--size', '100', '--duration', `${SECONDS}s`]},
  {name: 'produce 100 B, group commit', args: ['bench', 'produce', '--embedded', '--size', '100', '--flush', 'group-commit', '--duration', `${SECONDS}s`]},
  {name: 'produce 1 KiB, threshold flush', args: ['bench', 'produce', '--embedded', '--size', '1KiB', '--duration', `${SECONDS}s`]},
  {name: 'consume (replay) 100 B', args: ['bench', 'consume', '--embedded', '--size', '100', '--duration', `${SECONDS}s`]},
  {name: 'e2e 100 B at 10,000 msg/s', args: ['bench', 'e2e', '--embedded', '--size', '100', '--rate', '10000', '--duration', `${SECONDS}s`]},
]

function run(args: string[]): Promise<BenchSummary> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args, '--json'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true'},
    })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`meta ${args.join(' ')} exited with ${code}: ${stdout}`))
      resolve(JSON.parse(stdout) as BenchSummary)
    })
  })
}

function ms(value: number | undefined): string {
  return value === undefined ? '–' : value.toFixed(2)
}

const [load1] = loadavg()
if (load1 > 0.7) process.stderr.write(`warning: load average ${load1.toFixed(2)}: other processes use the CPU, figures will be low\n`)
const loadAtStart = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ')

const rows: string[] = []
for (const scenario of SCENARIOS) {
  if (ONLY !== undefined && !scenario.name.includes(ONLY)) continue
  process.stderr.write(`\n== ${scenario.name}: meta ${scenario.args.join(' ')}\n`)
  const runs: BenchSummary[] = []
  for (let i = 0; i < REPEAT; i++) runs.push(await run(scenario.args))
  const rateLimited = scenario.args.includes('--rate')
  const figure = (r: BenchSummary) => (rateLimited ? (r.latency?.p99 ?? Number.POSITIVE_INFINITY) : -r.msgsPerSec)
  const s = runs.reduce((best, r) => (figure(r) < figure(best) ? r : best))
  const all = runs.map((r) => (rateLimited ? `p99 ${ms(r.latency?.p99)}` : r.msgsPerSec.toLocaleString('en-US'))).join('; ')
  const latency = s.latency === null ? '–' : s.latency.kind
  const cpu = (v: number | null) => (v === null ? '–' : v.toFixed(2))
  rows.push(
    `| ${scenario.name} | \`meta ${scenario.args.join(' ')}\` | ${s.msgsPerSec.toLocaleString('en-US')} | ${s.mbPerSec.toFixed(1)} | ${latency} | ${ms(s.latency?.p50)} | ${ms(s.latency?.p99)} | ${ms(s.latency?.p999)} | ${cpu(s.cpu.clientUsPerMsg)} | ${cpu(s.cpu.brokerUsPerMsg)} |${REPEAT > 1 ? ` ${all} |` : ''}`,
  )
  if (s.verify !== null) {
    const v = s.verify
    rows.push(
      `| ↳ its read-back, ${v.messages.toLocaleString('en-US')} checked | (same run) | ${v.msgsPerSec.toLocaleString('en-US')} | ${v.mbPerSec.toFixed(1)} | – | – | – | – | ${cpu(v.cpu.clientUsPerMsg)} | ${cpu(v.cpu.brokerUsPerMsg)} |${REPEAT > 1 ? ` ${runs.map((r) => r.verify?.msgsPerSec.toLocaleString('en-US')).join('; ')} |` : ''}`,
    )
  }
}
if (ONLY === undefined || ONLY.toLowerCase().startsWith('cli')) {
  process.stderr.write(`\n== CLI: bench/cli-throughput.ts\n`)
  for (const r of await runCliThroughput()) {
    rows.push(
      `| ${r.name} | \`${r.command.replaceAll('|', '\\|')}\` | ${r.linesPerSec.toLocaleString('en-US')} | – | – | – | – | – | ${r.cliUsPerLine.toFixed(2)} | ${r.brokerUsPerLine?.toFixed(2) ?? '–'} |${REPEAT > 1 ? ' (one run) |' : ''}`,
    )
  }
}
process.stdout.write(
  [
    '',
    `| Scenario | Command | msg/s | MB/s | latency | p50 ms | p99 ms | p99.9 ms | client µs/msg | broker µs/msg |${REPEAT > 1 ? ' all runs |' : ''}`,
    `|---|---|---:|---:|---|---:|---:|---:|---:|---:|${REPEAT > 1 ? '---|' : ''}`,
    ...rows,
    '',
    `load average at start ${loadAtStart}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
  ].join('\n'),
)
