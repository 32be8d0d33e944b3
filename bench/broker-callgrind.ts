/**
 * Instructions the broker executes per message, counted by callgrind (stable when other work
 * shares the machine, where wall time and even CPU time are not). The broker (`meta serve`)
 * runs under `valgrind --tool=callgrind` with instrumentation off; a load generator outside
 * valgrind (`meta bench produce -b … -q --json`) warms it up, then counting is switched on
 * (`callgrind_control -i on`) for the measured run only and dumped; instructions / messages
 * is printed per scenario. Every measured run of a produce scenario is then read back and
 * checked (`--verify`). The replay scenario (`meta bench consume`) counts a second read of
 * the topic its warm-up filled and read.
 *
 *   node --import tsx bench/broker-callgrind.ts                 (all scenarios)
 *   CG_ONLY="plain put 100 B,put-batch 100 B" CG_COUNT=50000 node --import tsx bench/broker-callgrind.ts
 *   BENCH_BIN=/other/checkout/bin/run.js …                      (A/B: another build's broker)
 *   CG_KEEP=/tmp/cg …                                           (keep the dumps for callgrind_annotate)
 *
 * Slow (valgrind runs the broker ~30–50× slower): keep counts modest. Ir = instructions.
 */
import {spawn, spawnSync} from 'node:child_process'
import {copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

const BIN = process.env.BENCH_BIN ?? fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SELF = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.CG_COUNT ?? 200_000)
const WARMUP = Number(process.env.CG_WARMUP ?? 300_000)
/** Copy each scenario's callgrind dump here (for callgrind_annotate). */
const KEEP = process.env.CG_KEEP
const ONLY = process.env.CG_ONLY

interface Scenario {
  name: string
  args: string[]
  groupCommit?: boolean
  /** The measured run reads the warm-up's topic (replay: the warm-up filled it). */
  replay?: boolean
}

const SCENARIOS: Scenario[] = [
  {name: 'plain put 100 B', args: ['produce', '--plain-put', '--max-in-flight', '1000', '--size', '100']},
  {name: 'plain put 1 KiB', args: ['produce', '--plain-put', '--max-in-flight', '1000', '--size', '1KiB']},
  {name: 'put-batch 100 B', args: ['produce', '--size', '100']},
  {name: 'put-batch 1 KiB', args: ['produce', '--size', '1KiB']},
  // Produce and consume at once (e2e's default rate, 10,000 msg/s; one consumer reading the
  // tail): 1 KiB. Noisy (idle-time work counts per message): compare several runs.
  {name: 'e2e 1 KiB', args: ['e2e', '--size', '1KiB', '--warmup', '0s']},
  {name: 'plain put 100 B, group commit', args: ['produce', '--plain-put', '--max-in-flight', '1000', '--size', '100'], groupCommit: true},
  // Replay from the tail cache: the warm-up fills the topic and reads it once, the measured run
  // reads its first CG_COUNT messages again (1 MiB gets, nearly all spanning two cache blocks).
  {name: 'consume 100 B', args: ['consume', '--size', '100'], replay: true},
]

function meta(args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, [SELF, 'bench', ...args, '--quiet', '--json'], {encoding: 'utf8', env: {...process.env, NO_COLOR: '1'}})
  if (r.status !== 0) throw new Error(`meta bench ${args.join(' ')} failed: ${r.stderr}`)
  return JSON.parse(r.stdout) as Record<string, unknown>
}

function control(option: string, value: string | undefined, pid: number): void {
  const r = spawnSync('callgrind_control', [option, ...(value === undefined ? [] : [value]), String(pid)], {encoding: 'utf8'})
  if (r.status !== 0 || !/OK/.test(r.stdout)) throw new Error(`callgrind_control ${option} ${value ?? ''} ${pid}: ${r.stdout} ${r.stderr}`)
}

async function measure(s: Scenario): Promise<{ir: number; perMessage: number}> {
  const dir = mkdtempSync(join(tmpdir(), 'meta-cg-'))
  const out = join(dir, 'callgrind.out')
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${out}.%p`,
      process.execPath,
      ...(process.env.CG_NODE_OPTIONS?.split(' ').filter(Boolean) ?? []),
      BIN,
      'serve',
      '--port',
      '0',
      '--data-dir',
      join(dir, 'data'),
      '--log-format',
      'json',
      ...(s.groupCommit ? ['--group-commit'] : []),
    ],
    {stdio: ['ignore', 'ignore', 'pipe']},
  )
  let stderr = ''
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  try {
    const address = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`broker did not start: ${stderr.slice(-500)}`)), 120_000)
      child.stderr!.on('data', () => {
        const m = /listening on ([^"\s]+):(\d+)/.exec(stderr)
        if (m) {
          clearTimeout(timer)
          resolve(`${m[1]}:${m[2]}`)
        }
      })
      child.once('exit', (code) => reject(new Error(`broker exited with ${code}: ${stderr.slice(-500)}`)))
    })
    const topic = `cg-${Date.now().toString(36)}`
    const warmTopic = s.replay ? topic : `${topic}-warm`
    meta([...s.args, '-b', address, '--topic', warmTopic, '--count', String(WARMUP)])
    control('-i', 'on', child.pid!)
    const run = meta([...s.args, '-b', address, '--topic', topic, '--count', String(COUNT)])
    control('-d', undefined, child.pid!)
    if (run.messages !== COUNT || run.failed !== 0) throw new Error(`measured run: ${JSON.stringify(run)}`)
    if (s.args[0] === 'produce') {
      // Read back and check what was measured (not counted: instrumentation is off).
      const v = meta([...s.args, '-b', address, '--topic', topic, '--count', '1', '--verify']).verify as {messages: number}
      if (v.messages !== 1) throw new Error('verify run failed')
    }
    let ir = 0
    for (const f of readdirSync(dir).filter((n) => n.startsWith('callgrind.out'))) {
      const text = readFileSync(join(dir, f), 'utf8')
      const m = /^summary:\s+(\d+)/m.exec(text) ?? /^totals:\s+(\d+)/m.exec(text)
      if (m) ir += Number(m[1])
      if (KEEP !== undefined) copyFileSync(join(dir, f), join(KEEP, `${s.name.replace(/[^\w]+/g, '-')}.${f}`))
    }
    // V8's perf map (CG_NODE_OPTIONS=--perf-basic-prof…) names the JIT code in the dumps
    // (bench/callgrind-functions.ts); /tmp is shared, so a copy goes with them.
    const perfMap = `/tmp/perf-${child.pid}.map`
    if (KEEP !== undefined && existsSync(perfMap)) copyFileSync(perfMap, join(KEEP, `perf-${child.pid}.map`))
    return {ir, perMessage: ir / COUNT}
  } finally {
    child.kill('SIGTERM')
    await new Promise((resolve) => child.once('exit', resolve))
    rmSync(dir, {recursive: true, force: true})
  }
}

process.stdout.write(
  `\n| Scenario (broker under callgrind, ${COUNT.toLocaleString('en-US')} messages after ${WARMUP.toLocaleString('en-US')} of warm-up) | Ir per message |\n|---|---:|\n`,
)
for (const s of SCENARIOS) {
  if (ONLY !== undefined && !ONLY.split(',').includes(s.name)) continue
  const r = await measure(s)
  process.stdout.write(`| ${s.name} | ${Math.round(r.perMessage).toLocaleString('en-US')} |\n`)
}
