/**
 * The long fuzz run: a `meta serve` child fed mutated MetaQ commands (test/helpers/fuzz.ts)
 * over a few connections, with its RSS, partition count and log volume sampled as it goes,
 * then a control put and get that must still work. The suite runs a short form of the same
 * (test/broker/fuzz.int.test.ts).
 *
 *   npm run fuzz
 *   FUZZ_SEED=7 FUZZ_COMMANDS=1000000 FUZZ_SECONDS=600 FUZZ_CONNECTIONS=4 npm run fuzz
 *   FUZZ_ARGS="--http 0" npm run fuzz          (extra `meta serve` flags)
 *   FUZZ_NODE_ARGS="--heapsnapshot-signal=SIGUSR2" npm run fuzz   (node flags for the broker)
 *   FUZZ_IDLE_S=30 npm run fuzz                (then RSS after that long idle, connections closed)
 */
import {execFileSync, spawn} from 'node:child_process'
import {readdirSync, readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {fuzzBroker} from '../test/helpers/fuzz.js'
import {controlPutGet} from '../test/helpers/fuzz-control.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SEED = Number(process.env.FUZZ_SEED ?? 1)
const COMMANDS = Number(process.env.FUZZ_COMMANDS ?? 1_000_000)
const SECONDS = Number(process.env.FUZZ_SECONDS ?? 600)
const CONNECTIONS = Number(process.env.FUZZ_CONNECTIONS ?? 4)
const EXTRA = (process.env.FUZZ_ARGS ?? '').split(' ').filter((a) => a !== '')
const NODE_ARGS = (process.env.FUZZ_NODE_ARGS ?? '').split(' ').filter((a) => a !== '')

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) / 1024
}

const dataDir = await mkdtemp(join(tmpdir(), 'meta-fuzz-'))
const child = spawn(process.execPath, [...NODE_ARGS, BIN, 'serve', '--port', '0', '--data-dir', dataDir, '--log-format', 'json', ...EXTRA], {
  stdio: ['ignore', 'ignore', 'pipe'],
})
process.once('exit', () => child.kill('SIGKILL'))
let logLines = 0
let logBytes = 0
let tail = ''
let partial = ''
/** Log lines by message (the text before any count suffix). */
const byMessage = new Map<string, number>()
child.stderr.setEncoding('utf8')
child.stderr.on('data', (d: string) => {
  const lines = (partial + d).split('\n')
  partial = lines.pop() ?? ''
  for (const line of lines) {
    const msg = /"msg":"([^"]{0,60})/.exec(line)?.[1] ?? line.slice(0, 60)
    const key = msg.replace(/ \(\d+ more.*/, ' (report)')
    if (byMessage.size < 1000 || byMessage.has(key)) byMessage.set(key, (byMessage.get(key) ?? 0) + 1)
  }
})
const port = await new Promise<number>((resolve, reject) => {
  let seen = ''
  child.stderr.on('data', (d: string) => {
    logBytes += Buffer.byteLength(d)
    for (const c of d) if (c === '\n') logLines += 1
    tail = (tail + d).slice(-4000)
    seen += d
    const match = /listening on [^"\s]+:(\d+)/.exec(seen)
    if (match) resolve(Number(match[1]))
  })
  child.once('exit', (code) => reject(new Error(`broker exited with ${code}: ${tail}`)))
})
const partitions = () => readdirSync(dataDir).filter((n) => /-\d+$/.test(n)).length
const startRss = rssMb(child.pid!)
let maxRss = startRss
const startedAt = Date.now()
let last = {sent: 0, atMs: startedAt}
process.stderr.write(
  `seed ${SEED}: ${COMMANDS} frames over ${CONNECTIONS} connections, at most ${SECONDS} s; broker pid ${child.pid}, RSS ${startRss.toFixed(0)} MB\n`,
)
const result = await fuzzBroker({
  port,
  seed: SEED,
  commands: COMMANDS,
  connections: CONNECTIONS,
  timeMs: SECONDS * 1000,
  topics: ['fz-a', 'fz-b', 'fz-c'],
  onProgress: (sent) => {
    if (child.exitCode !== null) throw new Error(`broker exited with ${child.exitCode}: ${tail}`)
    const rss = rssMb(child.pid!)
    maxRss = Math.max(maxRss, rss)
    if (sent % 50_000 < 2000) {
      const now = Date.now()
      const rate = ((sent - last.sent) * 1000) / Math.max(1, now - last.atMs)
      last = {sent, atMs: now}
      process.stderr.write(
        `${sent} frames at ${((now - startedAt) / 1000).toFixed(0)} s (${rate.toFixed(0)} frames/s): RSS ${rss.toFixed(0)} MB, ${partitions()} partitions, ${logLines} log lines (${(logBytes / 1e6).toFixed(1)} MB)\n`,
      )
    }
  },
})
const control = await controlPutGet(port, `fuzz-control-${SEED}`)
const alive = child.exitCode === null
/** The broker's own counters: transactions begun and ended, connections, topics, puts. */
let held = ''
try {
  const raw = execFileSync(process.execPath, [BIN, 'stats', '--raw', '-b', `127.0.0.1:${port}`], {encoding: 'utf8', timeout: 60_000})
  held = raw
    .split('\n')
    .filter((l) => /^(tx_|curr_connections |topics |cmd_put |put_failed )/.test(l))
    .join(', ')
} catch (error) {
  held = `stats failed: ${(error as Error).message.split('\n')[0]}`
}
process.stdout.write(
  [
    `seed ${SEED}: ${result.sent} frames in ${(result.elapsedMs / 1000).toFixed(1)} s over ${result.connectionsOpened} connections (${CONNECTIONS} at a time)`,
    `broker ${alive ? 'alive' : `exited ${child.exitCode}`}; control put/get: ${control}; ${result.answered} frames answered to the end, ${result.stalls} stalled connections`,
    ...result.stalledBursts.map((burst) => `stalled after: ${JSON.stringify(burst.slice(0, 2000))}`),
    `RSS ${startRss.toFixed(0)} → ${rssMb(child.pid!).toFixed(0)} MB (max ${maxRss.toFixed(0)} MB); ${partitions()} partitions; ${logLines} log lines (${(logBytes / 1e6).toFixed(2)} MB)`,
    `broker stats: ${held}`,
    'log lines by message:',
    ...[...byMessage]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([msg, n]) => `  ${n}  ${msg}`),
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
  ].join('\n'),
)
const idleSeconds = Number(process.env.FUZZ_IDLE_S ?? 0)
if (idleSeconds > 0 && alive) {
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000))
  process.stdout.write(`RSS after ${idleSeconds} s idle: ${rssMb(child.pid!).toFixed(0)} MB (started at ${startRss.toFixed(0)} MB)\n`)
}
child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))
await rm(dataDir, {recursive: true, force: true})
if (!alive || control !== 'ok' || result.stalls > 0) process.exitCode = 1
