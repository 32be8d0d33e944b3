/**
 * Instructions per line of `meta tail -o beginning -e > /dev/null` (and `-J`), counted by
 * callgrind over the whole CLI process, start included: stable when other work shares the
 * machine, where lines/s are not. An embedded broker (not under valgrind) is filled with
 * `seq 1 N | meta send`; each variant then runs once under `valgrind --tool=callgrind`, and
 * its output is checked: N lines (-J: N JSON lines).
 *
 *   node --import tsx bench/tail-callgrind.ts                (TCG_LINES=200000)
 *   TCG_VARIANTS="-e;-e -J" TCG_NODE_OPTIONS="--max-semi-space-size=32" …
 *   BENCH_BIN=/other/checkout/bin/run.js …                   (A/B: another build's CLI)
 *
 * Slow (valgrind runs the CLI ~30–50× slower): keep the line count modest. The per-line
 * figure includes the start (a fixed cost of some 10^9 instructions, divided by N).
 */
import {execSync, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, readdirSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'

const SELF = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const BIN = process.env.BENCH_BIN ?? SELF
const LINES = Number(process.env.TCG_LINES ?? 200_000)
const VARIANTS = (process.env.TCG_VARIANTS ?? '-e;-e -J').split(';')
const NODE_OPTIONS = process.env.TCG_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []

const broker = await startEmbeddedBroker({self: [SELF], flush: 'threshold'})
try {
  execSync(`seq 1 ${LINES} | "${process.execPath}" "${SELF}" send -q -t x -b ${broker.address}`, {stdio: ['ignore', 'ignore', 'inherit']})
  process.stdout.write(
    `\n| \`meta tail -t x -o beginning …\`, ${LINES.toLocaleString('en-US')} lines, under callgrind (${BIN}) | Ir total | Ir per line |\n|---|---:|---:|\n`,
  )
  for (const variant of VARIANTS) {
    const dir = mkdtempSync(join(tmpdir(), 'meta-tcg-'))
    try {
      const r = spawnSync(
        'valgrind',
        [
          '--tool=callgrind',
          `--callgrind-out-file=${join(dir, 'cg.%p')}`,
          process.execPath,
          ...NODE_OPTIONS,
          BIN,
          'tail',
          '-t',
          'x',
          '-b',
          broker.address,
          '-o',
          'beginning',
          '-q',
          ...variant.split(' '),
        ],
        {encoding: 'latin1', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'pipe']},
      )
      if (r.status !== 0) throw new Error(`meta tail ${variant} under callgrind failed (${r.status}): ${r.stderr.slice(-800)}`)
      const lines = r.stdout.split('\n').length - 1
      if (lines !== LINES) throw new Error(`meta tail ${variant} wrote ${lines} lines, expected ${LINES}`)
      let ir = 0
      for (const f of readdirSync(dir)) {
        const m = /^summary:\s+(\d+)/m.exec(readFileSync(join(dir, f), 'latin1')) ?? /^totals:\s+(\d+)/m.exec(readFileSync(join(dir, f), 'latin1'))
        if (m) ir += Number(m[1])
      }
      process.stdout.write(`| \`${variant}\` ${NODE_OPTIONS.join(' ')} | ${ir.toLocaleString('en-US')} | ${Math.round(ir / LINES).toLocaleString('en-US')} |\n`)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  }
  process.stdout.write(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (instruction counts do not depend on it)\n`,
  )
} finally {
  await broker.stop()
}
