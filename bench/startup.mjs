#!/usr/bin/env node
/**
 * How fast `meta` starts (`npm run bench:startup`): wall time from spawn to exit, and CPU time
 * (user + sys, from /usr/bin/time when it is installed), of
 *
 *   node -e 0                              the floor: Node itself
 *   meta --version
 *   meta send --help
 *   echo hi | meta send -t startup         against a broker this script starts (one put, acked)
 *   meta tail -t startup -e -o beginning   reads that topic from its start to its end
 *   meta stats                             the broker's stats table
 *
 * where meta is bin/run.js as `npm link` installs it (node runs the file), and also
 * build/meta (the single executable) when it exists. The commands run in turn, round after
 * round (A B C A B C …), so a machine whose speed drifts affects all alike, and each figure is
 * compared with `node -e 0` of the same round. Prints a markdown table (medians; min–max) for
 * docs/benchmarks.md, with the load average. Not a test: nothing passes or fails.
 *
 *   STARTUP_ROUNDS     rounds (default 10)
 *   STARTUP_CALLGRIND  1: also count the instructions each command runs, once, under valgrind
 *                      (--tool=callgrind): a figure that other work on the machine does not
 *                      move, unlike wall time
 */
import {spawn, spawnSync} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(root, 'bin', 'run.js')
const EXE = join(root, 'build', 'meta')
const ROUNDS = Math.max(3, Number(process.env.STARTUP_ROUNDS ?? 10))
/** GNU time, for the CPU time of a child (Node has no getrusage of children). */
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined

/** Instructions the command runs (valgrind's callgrind "Collected"), or undefined. */
function instructions(command, args, input) {
  const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', command, ...args], {
    input,
    encoding: 'utf8',
    env: {...process.env, NO_COLOR: '1'},
  })
  const m = /Collected : (\d+)/.exec(r.stderr ?? '')
  return m ? Number(m[1]) : undefined
}

/**
 * Run a command to its exit; resolves with {wall, cpu} in ms (cpu: user + sys as GNU time
 * reports it, to 10 ms; undefined without /usr/bin/time). GNU time's own start is in both
 * the command's and `node -e 0`'s wall time, so it cancels out of the differences.
 */
function timed(command, args, input) {
  if (process.env.STARTUP_MEASURE === 'instructions') return Promise.resolve(instructions(command, args, input))
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const [file, argv] = TIME === undefined ? [command, args] : [TIME, ['-f', 'cpu %U %S', command, ...args]]
    const child = spawn(file, argv, {stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'pipe'], env: {...process.env, NO_COLOR: '1'}})
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    if (input !== undefined) child.stdin.end(input)
    child.on('error', reject)
    child.on('close', (code) => {
      const wall = Number(process.hrtime.bigint() - started) / 1e6
      const m = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(stderr)
      if (code !== 0) reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${stderr}`))
      else resolve({wall, cpu: m ? (Number(m[1]) + Number(m[2])) * 1000 : undefined})
    })
  })
}

async function startBroker(dataDir) {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '-d', dataDir, '--log-format', 'json'], {stdio: ['ignore', 'ignore', 'pipe']})
  let stderr = ''
  const port = await new Promise((resolve, reject) => {
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d
      const m = /listening on [^"\s]+:(\d+)/.exec(stderr)
      if (m) resolve(Number(m[1]))
    })
    child.on('exit', (code) => reject(new Error(`the broker exited with ${code}: ${stderr}`)))
  })
  return {port, stop: () => new Promise((resolve) => (child.once('exit', resolve), child.kill('SIGTERM')))}
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const ms = (x) => `${Math.round(x)} ms`
const signed = (x) => `${x < 0 ? '−' : '+'}${ms(Math.abs(x))}`

const dataDir = await mkdtemp(join(tmpdir(), 'meta-startup-'))
const broker = await startBroker(dataDir)
try {
  const b = `127.0.0.1:${broker.port}`
  const cases = [{name: '`node -e 0`', run: () => timed(process.execPath, ['-e', '0'])}]
  const metas = [['bin/run.js', (args, input) => timed(process.execPath, [BIN, ...args], input)]]
  if (existsSync(EXE)) metas.push(['build/meta', (args, input) => timed(EXE, args, input)])
  for (const [label, meta] of metas) {
    cases.push(
      {name: `\`meta --version\` (${label})`, run: () => meta(['--version'])},
      {name: `\`meta send --help\` (${label})`, run: () => meta(['send', '--help'])},
      {name: `\`echo hi \\| meta send -t startup\` (${label})`, run: () => meta(['send', '-t', 'startup', '-b', b], 'hi\n')},
      {name: `\`meta tail -t startup -e -o beginning\` (${label})`, run: () => meta(['tail', '-t', 'startup', '-e', '-o', 'beginning', '-b', b])},
      {name: `\`meta stats\` (${label})`, run: () => meta(['stats', '-b', b])},
    )
  }
  // Warm the page cache and the broker's topic first; not counted.
  for (const c of cases) await c.run()
  const times = cases.map(() => [])
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cases.length; i++) times[i].push(await cases[i].run())
    process.stderr.write(`\rround ${round + 1}/${ROUNDS}`)
  }
  process.stderr.write('\n')
  const load = loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')
  console.log(`Node ${process.version}, ${ROUNDS} rounds, load average ${load} at the end\n`)
  const withCpu = times[0].every((t) => t.cpu !== undefined)
  console.log(`| command | wall: median | min – max | minus \`node -e 0\` |${withCpu ? ' CPU: median | minus `node -e 0` |' : ''}`)
  console.log(`|---|---:|---:|---:|${withCpu ? '---:|---:|' : ''}`)
  for (let i = 0; i < cases.length; i++) {
    const wall = times[i].map((t) => t.wall)
    // The median of the per-round differences with `node -e 0` of the same round.
    const over = (key) => (i === 0 ? '—' : signed(median(times[i].map((t, r) => t[key] - times[0][r][key]))))
    const cpu = withCpu ? ` ${ms(median(times[i].map((t) => t.cpu)))} | ${over('cpu')} |` : ''
    console.log(`| ${cases[i].name} | ${ms(median(wall))} | ${ms(Math.min(...wall))} – ${ms(Math.max(...wall))} | ${over('wall')} |${cpu}`)
  }
  if (process.env.STARTUP_CALLGRIND === '1') {
    process.env.STARTUP_MEASURE = 'instructions'
    const counts = []
    for (const c of cases) counts.push(await c.run())
    delete process.env.STARTUP_MEASURE
    if (counts.every((n) => n !== undefined)) {
      console.log('\nInstructions run (valgrind --tool=callgrind, one run each), and that count scaled to the median wall time of `node -e 0` above:\n')
      console.log("| command | instructions | × `node -e 0` | ≈ wall at this machine's `node -e 0` speed |")
      console.log('|---|---:|---:|---:|')
      for (let i = 0; i < cases.length; i++) {
        const ratio = counts[i] / counts[0]
        console.log(
          `| ${cases[i].name} | ${(counts[i] / 1e6).toFixed(0)} M | ${ratio.toFixed(2)} | ${ms(ratio * median(times[0].map((t) => t.wall)))} (${i === 0 ? '—' : signed((ratio - 1) * median(times[0].map((t) => t.wall)))}) |`,
        )
      }
    } else {
      console.log('\n(valgrind not found: no instruction counts)')
    }
  }
} finally {
  await broker.stop()
  await rm(dataDir, {recursive: true, force: true})
}
