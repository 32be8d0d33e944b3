/**
 * The CLI's throughput: `seq 1 N | meta send -t x` and `meta tail -t x -o
 * beginning -e > /dev/null`, each timed as a whole process (spawn to exit, start included)
 * against an embedded broker (a child `meta serve`). Then the tail runs again into a pipe
 * read here, and its output is checked byte for byte against `seq 1 N`: every line sent came
 * back, in order. CPU per line of the CLI process (GNU time's user + system) and of the
 * broker (/proc) is printed next to lines/s.
 *
 * Then `meta send` with its spool (the default) and with `--no-spool` runs in alternating
 * pairs into another topic, and the medians of each side are printed (with a healthy broker the
 * spool should cost nothing; a single run on a shared machine cannot show that).
 *
 * Then `meta send --follow --from-beginning -c N` reads a file of `seq 1 N` lines (a fresh
 * registry each run) CLI_FOLLOW_RUNS times, into a topic of its own. With BENCH_BASE_BIN (the
 * bin/run.js of another build) the runs alternate between that build and this one, and the
 * medians of each are printed: a before/after of the followed-file line path from one run.
 *
 *   npm run bench:cli                      (CLI_LINES=1000000, CLI_TAIL_RUNS=3, CLI_SEND_PAIRS=3, CLI_FOLLOW_RUNS=3 by default)
 *   node --import tsx bench/cli-throughput.ts
 *   CLI_ONLY=follow BENCH_BASE_BIN=../base/bin/run.js node --import tsx bench/cli-throughput.ts
 */
import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker, type EmbeddedBroker} from '../src/cli/bench/embedded.js'

const BIN = process.env.BENCH_BIN ?? fileURLToPath(new URL('../bin/run.js', import.meta.url))
const LINES = envCount('CLI_LINES', 1_000_000, 1, 100_000_000)
const TOPIC = 'x'
/** Runs of the two tail rows (`meta tail -e`, `meta tail -e -J`), each timed start to exit. */
const TAIL_RUNS = envCount('CLI_TAIL_RUNS', 3, 1, 20)
/** Alternating pairs of `meta send` with and without the spool (0: none). */
const SEND_PAIRS = envCount('CLI_SEND_PAIRS', 3, 0, 20)
/** Runs of `meta send --follow` per build (0: none). */
const FOLLOW_RUNS = envCount('CLI_FOLLOW_RUNS', 3, 0, 20)
/** Another build's bin/run.js: the follow runs alternate between it and BIN. */
const BASE_BIN = process.env.BENCH_BASE_BIN
/** `follow`: only the follow rows (the send and tail rows are skipped). */
const ONLY = process.env.CLI_ONLY
if (ONLY !== undefined && ONLY !== 'follow') {
  console.error(`CLI_ONLY=${JSON.stringify(ONLY)}: expected follow`)
  process.exit(2)
}

/** An integer from the environment within [min, max]; anything else ends the run, naming it. */
function envCount(name: string, fallback: number, min: number, max: number): number {
  const text = process.env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`${name}=${JSON.stringify(text)}: expected an integer from ${min} to ${max}`)
    process.exit(2)
  }
  return value
}
/** The topic of those pairs (not TOPIC: the tail rows check it holds seq 1 N once). */
const PAIRS_TOPIC = 'pairs'

export interface CliRow {
  name: string
  command: string
  linesPerSec: number
  seconds: number
  cliUsPerLine: number
  brokerUsPerLine: number | null
}

interface Timed {
  seconds: number
  cpuMs: number
  code: number
}

/** Run `sh -c script` under GNU time; the script's stdout goes to `onStdout` (or nowhere). */
function timed(script: string, onStdout?: (chunk: Buffer) => void, env: NodeJS.ProcessEnv = {}): Promise<Timed> {
  const dir = mkdtempSync(join(tmpdir(), 'meta-cli-bench-'))
  const timeFile = join(dir, 'time')
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, 'sh', '-c', script], {
      stdio: ['ignore', onStdout === undefined ? 'ignore' : 'pipe', 'inherit'],
      env: {...process.env, NO_COLOR: '1', ...env},
    })
    if (onStdout !== undefined) child.stdout!.on('data', onStdout)
    child.on('error', reject)
    child.on('close', (code) => {
      const seconds = (performance.now() - started) / 1000
      try {
        const [user, system] = readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number)
        resolve({seconds, cpuMs: (user + system) * 1000, code: code ?? 1})
      } finally {
        rmSync(dir, {recursive: true, force: true})
      }
    })
  })
}

function row(name: string, command: string, t: Timed, brokerMs: number | undefined): CliRow {
  if (t.code !== 0) throw new Error(`${command} exited with ${t.code}`)
  return {
    name,
    command,
    linesPerSec: Math.round(LINES / t.seconds),
    seconds: Math.round(t.seconds * 1000) / 1000,
    cliUsPerLine: Math.round((t.cpuMs * 1000 * 100) / LINES) / 100,
    brokerUsPerLine: brokerMs === undefined ? null : Math.round((brokerMs * 1000 * 100) / LINES) / 100,
  }
}

function expectedDigest(): string {
  const hash = createHash('sha256')
  const parts: string[] = []
  for (let i = 1; i <= LINES; i++) {
    parts.push(`${i}\n`)
    if (parts.length === 10_000) {
      hash.update(parts.join(''))
      parts.length = 0
    }
  }
  hash.update(parts.join(''))
  return hash.digest('hex')
}

async function measured(broker: EmbeddedBroker, run: () => Promise<Timed>): Promise<{t: Timed; brokerMs: number | undefined}> {
  const before = broker.cpuMs()
  const t = await run()
  const after = broker.cpuMs()
  return {t, brokerMs: before === undefined || after === undefined ? undefined : after - before}
}

/**
 * `seq 1 N | meta send` with the spool and with --no-spool, SEND_PAIRS alternating pairs (which
 * goes first alternates too); a row per run, then the median of each side. The spool's state
 * directory is a temp dir (a healthy run writes nothing there; a failing one must not leave a
 * spool in the user's).
 */
async function sendPairs(broker: EmbeddedBroker, meta: string): Promise<CliRow[]> {
  if (SEND_PAIRS === 0) return []
  const state = mkdtempSync(join(tmpdir(), 'meta-cli-bench-state-'))
  const sides = [
    {label: 'CLI send (spool, the default)', flag: '', runs: [] as CliRow[]},
    {label: 'CLI send --no-spool', flag: ' --no-spool', runs: [] as CliRow[]},
  ]
  const rows: CliRow[] = []
  try {
    for (let pair = 1; pair <= SEND_PAIRS; pair++) {
      for (const side of pair % 2 === 1 ? sides : [...sides].reverse()) {
        const command = `seq 1 ${LINES} | meta send -t ${PAIRS_TOPIC}${side.flag}`
        const run = await measured(broker, () =>
          timed(`seq 1 ${LINES} | ${meta} send -b ${broker.address} -t ${PAIRS_TOPIC} -q${side.flag}`, undefined, {META_STATE_DIR: state}),
        )
        const r = row(`${side.label} (pair ${pair}, load ${loadavg()[0].toFixed(2)})`, command, run.t, run.brokerMs)
        side.runs.push(r)
        rows.push(r)
      }
    }
  } finally {
    rmSync(state, {recursive: true, force: true})
  }
  for (const side of sides) {
    rows.push({
      name: `${side.label}: median of ${SEND_PAIRS}`,
      command: side.runs[0]!.command,
      linesPerSec: Math.round(median(side.runs.map((r) => r.linesPerSec))),
      seconds: median(side.runs.map((r) => r.seconds)),
      cliUsPerLine: median(side.runs.map((r) => r.cliUsPerLine)),
      brokerUsPerLine: side.runs.some((r) => r.brokerUsPerLine === null) ? null : median(side.runs.map((r) => r.brokerUsPerLine!)),
    })
  }
  return rows
}

/**
 * `meta send --follow --from-beginning -c N FILE` over a file of `seq 1 N`, FOLLOW_RUNS times
 * per build (alternating with BENCH_BASE_BIN when set, which goes first alternates too), each
 * with a fresh state directory (registry), into its own topic; then the median of each build.
 */
async function followRuns(broker: EmbeddedBroker): Promise<CliRow[]> {
  if (FOLLOW_RUNS === 0) return []
  const dir = mkdtempSync(join(tmpdir(), 'meta-cli-bench-follow-'))
  const file = join(dir, 'lines.log')
  const builds = [
    {label: 'this build', bin: BIN, runs: [] as CliRow[]},
    ...(BASE_BIN === undefined ? [] : [{label: 'base build', bin: BASE_BIN, runs: [] as CliRow[]}]),
  ]
  const rows: CliRow[] = []
  try {
    await new Promise<void>((resolve, reject) => {
      const seq = spawn('sh', ['-c', `seq 1 ${LINES} > '${file}'`], {stdio: 'inherit'})
      seq.on('error', reject)
      seq.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`seq exited with ${code}`))))
    })
    for (let run = 1; run <= FOLLOW_RUNS; run++) {
      for (const build of run % 2 === 1 ? builds : [...builds].reverse()) {
        const state = join(dir, `state-${build.label.replace(' ', '-')}-${run}`)
        const meta = `'${process.execPath}' '${build.bin}'`
        const command = `meta send -t follow --follow --from-beginning -c ${LINES} lines.log`
        const t = await measured(broker, () =>
          timed(`${meta} send -b ${broker.address} -t follow -q --follow --from-beginning -c ${LINES} '${file}'`, undefined, {META_STATE_DIR: state}),
        )
        const r = row(`CLI send --follow, ${build.label} (run ${run}, load ${loadavg()[0].toFixed(2)})`, command, t.t, t.brokerMs)
        build.runs.push(r)
        rows.push(r)
      }
    }
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
  for (const build of builds) {
    rows.push({
      name: `CLI send --follow, ${build.label}: median of ${FOLLOW_RUNS}`,
      command: build.runs[0]!.command,
      linesPerSec: Math.round(median(build.runs.map((r) => r.linesPerSec))),
      seconds: median(build.runs.map((r) => r.seconds)),
      cliUsPerLine: median(build.runs.map((r) => r.cliUsPerLine)),
      brokerUsPerLine: build.runs.some((r) => r.brokerUsPerLine === null) ? null : median(build.runs.map((r) => r.brokerUsPerLine!)),
    })
  }
  return rows
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** The rows: send; tail > /dev/null and tail -J > /dev/null, CLI_TAIL_RUNS times each; tail into a pipe checked against seq; the spool / --no-spool send pairs. */
export async function runCliThroughput(): Promise<CliRow[]> {
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold'})
  const meta = `'${process.execPath}' '${BIN}'`
  try {
    if (ONLY === 'follow') return await followRuns(broker)
    const sendCmd = `seq 1 ${LINES} | meta send -t ${TOPIC}`
    const send = await measured(broker, () => timed(`seq 1 ${LINES} | ${meta} send -b ${broker.address} -t ${TOPIC} -q`))
    const rows = [row(`CLI send ${LINES.toLocaleString('en-US')} lines`, sendCmd, send.t, send.brokerMs)]

    const tailCmd = `meta tail -t ${TOPIC} -o beginning -e`
    for (let run = 1; run <= TAIL_RUNS; run++) {
      const suffix = TAIL_RUNS > 1 ? ` (run ${run}, load ${loadavg()[0].toFixed(2)})` : ''
      const tail = await measured(broker, () => timed(`${meta} tail -b ${broker.address} -t ${TOPIC} -o beginning -e > /dev/null`))
      rows.push(row(`CLI tail ${LINES.toLocaleString('en-US')} lines${suffix}`, `${tailCmd} > /dev/null`, tail.t, tail.brokerMs))
      const json = await measured(broker, () => timed(`${meta} tail -b ${broker.address} -t ${TOPIC} -o beginning -e -J > /dev/null`))
      rows.push(row(`CLI tail -J ${LINES.toLocaleString('en-US')} lines${suffix}`, `${tailCmd} -J > /dev/null`, json.t, json.brokerMs))
    }

    const hash = createHash('sha256')
    let bytes = 0
    const checked = await measured(broker, () =>
      timed(`${meta} tail -b ${broker.address} -t ${TOPIC} -o beginning -e`, (chunk) => {
        bytes += chunk.length
        hash.update(chunk)
      }),
    )
    const digest = hash.digest('hex')
    if (digest !== expectedDigest()) throw new Error(`tail output (${bytes} bytes) is not seq 1 ${LINES}: a line is missing, changed or out of order`)
    rows.push(row(`CLI tail, output checked`, `${tailCmd} | (sha-256 = seq 1 ${LINES})`, checked.t, checked.brokerMs))
    return [...rows, ...(await sendPairs(broker, meta)), ...(await followRuns(broker))]
  } finally {
    await broker.stop()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [load1] = loadavg()
  process.stderr.write(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}${load1 > 0.7 ? ': other processes use the CPU, figures will be low' : ''}\n`,
  )
  const rows = await runCliThroughput()
  process.stdout.write(
    [
      '',
      '| Scenario | Command | lines/s | s (with start) | CLI µs/line | broker µs/line |',
      '|---|---|---:|---:|---:|---:|',
      ...rows.map(
        (r) =>
          `| ${r.name} | \`${r.command.replaceAll('|', '\\|')}\` | ${r.linesPerSec.toLocaleString('en-US')} | ${r.seconds.toFixed(2)} | ${r.cliUsPerLine.toFixed(2)} | ${r.brokerUsPerLine?.toFixed(2) ?? '–'} |`,
      ),
      '',
      `targets: tail -e ≥ 1,000,000 lines/s, tail -J ≥ 500,000, in every run; load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      '',
    ].join('\n'),
  )
}
