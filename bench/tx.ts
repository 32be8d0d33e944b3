/**
 * Committed transactions per second (`npm run bench:tx`): `meta bench tx --embedded` with 1,
 * 10 and 100 messages per transaction, for 1 and 4 producers, printed as the markdown table
 * of docs/benchmarks.md.
 *
 *   BENCH_SECONDS   length of each run (default 5)
 */
import {spawn} from 'node:child_process'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import type {TxBenchSummary} from '../src/cli/bench/tx.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SECONDS = process.env.BENCH_SECONDS ?? '5'

function run(connections: number): Promise<TxBenchSummary> {
  const args = ['bench', 'tx', '--embedded', '--duration', `${SECONDS}s`, '--per-tx', '1,10,100', '--connections', String(connections), '--json']
  process.stderr.write(`== meta ${args.join(' ')}\n`)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {stdio: ['ignore', 'pipe', 'inherit'], env: {...process.env, NO_COLOR: '1'}})
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(stdout) as TxBenchSummary) : reject(new Error(`exited with ${code}: ${stdout}`))))
  })
}

const before = loadavg()[0]
const one = await run(1)
const four = await run(4)
const after = loadavg()[0]
const fmt = (n: number) => n.toLocaleString('en-US')
const rows = one.runs.map((r, i) => {
  const f = four.runs[i]
  return `| ${r.messagesPerTx} | ${fmt(r.txPerSec)} | ${fmt(r.msgsPerSec)} | ${r.latency.p50.toFixed(2)} / ${r.latency.p99.toFixed(1)} | ${fmt(f.txPerSec)} | ${fmt(f.msgsPerSec)} | ${f.latency.p50.toFixed(2)} / ${f.latency.p99.toFixed(1)} |`
})
process.stdout.write(
  [
    '',
    `load average ${before.toFixed(1)} before, ${after.toFixed(1)} after`,
    '',
    '| Messages per transaction | 1 producer: tx/s | msg/s | commit p50 / p99 ms | 4 producers: tx/s | msg/s | commit p50 / p99 ms |',
    '|---:|---:|---:|---|---:|---:|---|',
    ...rows,
    '',
  ].join('\n'),
)
