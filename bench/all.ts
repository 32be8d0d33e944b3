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
 * The last two columns are CPU time per message of the load generator and of the broker
 * (steadier than msg/s when other work shares the machine).
 */
import {spawn} from 'node:child_process'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import type {BenchSummary} from '../src/cli/bench/index.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SECONDS = process.env.BENCH_SECONDS ?? '10'
const ONLY = process.env.BENCH_ONLY
const REPEAT = Math.max(1, Number(process.env.BENCH_REPEAT ?? 1))

interface Scenario {
  name: string
  args: string[]
}

const SCENARIOS: Scenario[] = [
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
}
process.stdout.write(
  [
    '',
    `| Scenario | Command | msg/s | MB/s | latency | p50 ms | p99 ms | p99.9 ms | client µs/msg | broker µs/msg |${REPEAT > 1 ? ' all runs |' : ''}`,
    `|---|---|---:|---:|---|---:|---:|---:|---:|---:|${REPEAT > 1 ? '---|' : ''}`,
    ...rows,
    '',
  ].join('\n'),
)
