/**
 * The cost per put of synchronous replication (README.md#replication): the same load against a
 * broker alone and against a sync master with its meta sync slave, each a child `meta serve`
 * (master, slave and load generator are three processes), with threshold flush and with
 * group commit. Scenarios:
 *
 *   producer      meta's producer (`meta bench produce`, put-batch, a window of 4096)
 *   plain puts    MetaQ's `put`, one message per frame, 1000 pipelined
 *   one at a time MetaQ's `put`, one in flight: the round trip a put costs
 *
 * Prints a markdown table: msg/s, µs per put (wall time / messages), ack latency p50/p99
 * (producer and one-at-a-time), and the CPU µs per message of the master and of the slave.
 *
 *   npm run bench:sync
 *   BENCH_SECONDS=5 BENCH_ONLY=group node --import tsx bench/sync-replication.ts
 *
 *   BENCH_SECONDS   length of each timed run (default 5)
 *   BENCH_ONLY      run only scenarios whose name contains this text
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {connect} from 'node:net'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import type {BenchSummary} from '../src/cli/bench/index.js'
import {checksum, createResponseDecoder, OutputBuffer, writePut} from '../src/protocol/index.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ONLY = process.env.BENCH_ONLY
const ENV = {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true'}

interface Serve {
  address: string
  pid: number
  child: ChildProcess
  dir: string
}

async function serve(args: string[]): Promise<Serve> {
  const dir = await mkdtemp(join(tmpdir(), 'meta-bench-sync-'))
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '-d', dir, '--log-format', 'json', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: ENV,
  })
  process.once('exit', () => child.kill('SIGKILL'))
  let stderr = ''
  const address = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      stderr += d
      const match = /listening on ([^"\s]+):(\d+)/.exec(stderr)
      if (match) resolve(`${match[1]}:${match[2]}`)
    })
    child.once('exit', (code) => reject(new Error(`meta serve exited with ${code}: ${stderr}`)))
  })
  if (args.some((a) => a === '--sync-slave-address')) {
    for (let i = 0; i < 200 && !stderr.includes('sync slave connected'); i++) await new Promise((r) => setTimeout(r, 50))
    if (!stderr.includes('sync slave connected')) throw new Error(`the master did not connect to its slave: ${stderr}`)
  }
  return {address, pid: child.pid!, child, dir}
}

async function stop(s: Serve | undefined): Promise<void> {
  if (s === undefined) return
  const exited = new Promise<void>((resolve) => s.child.once('exit', () => resolve()))
  s.child.kill('SIGTERM')
  await exited
  await rm(s.dir, {recursive: true, force: true})
}

function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

interface Figures {
  messages: number
  seconds: number
  p50?: number
  p99?: number
}

function producer(address: string): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'bench', 'produce', '-b', address, '--size', '100', '--duration', `${SECONDS}s`, '--json', '-q'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: ENV,
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`meta bench produce exited with ${code}: ${out}`))
      const s = JSON.parse(out) as BenchSummary
      if (s.failed > 0) return reject(new Error(`${s.failed} puts failed`))
      resolve({messages: s.messages, seconds: s.elapsedMs / 1000, p50: s.latency?.p50, p99: s.latency?.p99})
    })
  })
}

/** MetaQ puts of 100 B with `window` unacknowledged, for SECONDS; latencies when window is 1. */
async function plainPuts(address: string, window: number): Promise<Figures> {
  const [host, port] = address.split(':')
  const socket = connect({host, port: Number(port)})
  socket.setNoDelay(true)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const topic = `plain-${Date.now()}`
  const body = Buffer.alloc(100, 0x61)
  const crc = checksum(body)
  const out = new OutputBuffer(1 << 20)
  const decoder = createResponseDecoder()
  const latencies: number[] = []
  const sentAt: number[] = []
  let sent = 0
  let acked = 0
  let stopping = false
  let done = () => {}
  const finished = new Promise<void>((resolve) => (done = resolve))
  const fill = () => {
    while (!stopping && sent - acked < window) {
      if (window === 1) sentAt[0] = performance.now()
      writePut(out, topic, 0, body, 0, crc, sent++ & 0x7fffffff)
    }
    if (out.byteLength > 0) socket.write(out.take())
    if (stopping && acked === sent) done()
  }
  socket.on('data', (chunk: Buffer) => {
    decoder.push(chunk)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
      if (f.type !== 'result' || f.code !== 200) throw new Error(`put failed: ${f.type === 'result' ? f.body.toString() : f.type}`)
      acked += 1
      if (window === 1) latencies.push(performance.now() - sentAt[0])
    }
    fill()
  })
  const t0 = performance.now()
  fill()
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
  stopping = true
  fill()
  await finished
  const seconds = (performance.now() - t0) / 1000
  socket.destroy()
  latencies.sort((a, b) => a - b)
  const at = (q: number) => (latencies.length === 0 ? undefined : latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))])
  return {messages: acked, seconds, p50: at(0.5), p99: at(0.99)}
}

const LOADS: Array<{name: string; run: (address: string) => Promise<Figures>}> = [
  {name: 'producer (put-batch)', run: producer},
  {name: 'plain puts, 1000 in flight', run: (a) => plainPuts(a, 1000)},
  {name: 'plain puts, one at a time', run: (a) => plainPuts(a, 1)},
]

const [load1] = loadavg()
process.stderr.write(`load average ${load1.toFixed(2)} at start\n`)
const rows: string[] = []
for (const flush of ['threshold', 'group-commit'] as const) {
  const flushArgs = flush === 'group-commit' ? ['--group-commit'] : []
  for (const load of LOADS) {
    for (const replicated of [false, true]) {
      const name = `${load.name}, ${flush}, ${replicated ? 'sync slave' : 'no slave'}`
      if (ONLY !== undefined && !name.includes(ONLY)) continue
      const slave = replicated ? await serve(['--sync-slave', ...flushArgs]) : undefined
      const master = await serve([...flushArgs, ...(slave ? ['--sync-slave-address', slave.address] : [])])
      try {
        const cpu0 = [cpuMs(master.pid), cpuMs(slave?.pid)]
        const f = await load.run(master.address)
        const cpu = [cpuMs(master.pid) - cpu0[0], cpuMs(slave?.pid) - cpu0[1]]
        const rate = f.messages / f.seconds
        const us = (ms: number) => ((ms * 1000) / f.messages).toFixed(2)
        const lat = (v: number | undefined) => (v === undefined ? '–' : v.toFixed(2))
        rows.push(
          `| ${load.name} | ${flush} | ${replicated ? 'sync slave' : 'none'} | ${Math.round(rate).toLocaleString('en-US')} | ${(1e6 / rate).toFixed(2)} | ${lat(f.p50)} / ${lat(f.p99)} | ${us(cpu[0])} | ${slave ? us(cpu[1]) : '–'} |`,
        )
        process.stderr.write(`${name}: ${Math.round(rate)} msg/s\n`)
      } finally {
        await stop(master)
        await stop(slave)
      }
    }
  }
}
const [load2] = loadavg()
console.log(`${SECONDS} s per run, 100 B messages; load average ${load1.toFixed(2)} at start, ${load2.toFixed(2)} at end\n`)
console.log('| Load | Flush | Replication | msg/s | µs per put | ack p50 / p99 ms | master CPU µs/msg | slave CPU µs/msg |')
console.log('|---|---|---|---|---|---|---|---|')
for (const row of rows) console.log(row)
