/**
 * Plain MetaQ puts against Redis 7 `XADD`, each driven by a pre-encoded C generator of equal
 * cost, in one run, with the load average — and the floor rows that tell how much of the
 * cost is Node and the kernel, meta's broker and meta's client library. Every row sends the
 * same wire bytes: MetaQ's 7-token put with checksum, `--size` bytes of payload (default
 * 100), one loopback connection, 1000 puts in flight.
 *
 *   (g) C generator → meta's broker (`meta serve`, a temp dir): bench/put-generator.c, built
 *       with gcc at run time, re-sends one pre-encoded pipeline of 1000 puts and reads and
 *       checks every ack (`result 200`, its opaque, in order) before the next send — what
 *       `redis-benchmark -c 1 -P 1000` does. The topic is read back afterwards with meta's
 *       consumer (every CRC checked; message k must be put k mod 1000 of the pipeline).
 *   Redis 7 `XADD` from redis-benchmark itself (c=1 P=1000, the same shape, and c=50 P=16,
 *       its usual best; bench/redis-xadd.ts), AOF everysec against meta's threshold flush
 *       and AOF always against meta's group commit (ack after fdatasync).
 *   (e) C generator → a minimal Node server (bench/plain-put-floor-server.mjs: parses the
 *       put lines, writes the acks, stores nothing): what Node and the kernel cost.
 *   (a) Node generator → minimal server, (b) Node generator → meta's broker: the same with a
 *       generator in Node (one write of the next k frames per k acks read), (b) checked
 *       like `meta bench --verify`.
 *   (c) meta's producer library → meta's broker: `meta bench produce --embedded --plain-put
 *       --max-in-flight 1000 --verify`; (d) meta's producer → minimal server.
 *
 *   npm run bench:floor              (FLOOR_ONLY=g,redis FLOOR_FLUSH=both FLOOR_COUNT=500000
 *                                     FLOOR_WARMUP=1000000 FLOOR_SIZE=100 FLOOR_RUNS=1)
 *   FLOOR_ONLY=g,e,a,b,c,d,redis FLOOR_RUNS=3 npm run bench:floor
 *   FLOOR_FLUSH=threshold | group-commit npm run bench:floor   (one of the two pairings)
 *
 * Wall-clock figures on a shared machine: the load average is printed with every row, and
 * each pairing's ratio meta / Redis (same shape, and Redis's best shape) from the same run.
 */
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {once} from 'node:events'
import {connect, type Socket} from 'node:net'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'
import {VerifiedPayloads} from '../src/cli/bench/verify.js'
import {checksum} from '../src/protocol/crc.js'
import {writePut} from '../src/protocol/commands/put.js'
import {OutputBuffer} from '../src/protocol/output-buffer.js'
import {buildGenerator, readBackPipeline, runGenerator, writePipeline} from './c-put-generator.js'
import {processCpuMs, redisXadd, type XaddResult} from './redis-xadd.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SERVER = fileURLToPath(new URL('./plain-put-floor-server.mjs', import.meta.url))
const COUNT = Number(process.env.FLOOR_COUNT ?? 500_000)
const SIZE = Number(process.env.FLOOR_SIZE ?? 100)
const RUNS = Number(process.env.FLOOR_RUNS ?? 1)
/**
 * Puts each server takes before the measured ones (rows g, e and Redis), to another topic or
 * stream with the same generator: a broker that has been up for a while. A fresh Node process
 * runs its first ~1M puts at about half speed (V8 compiling the put path, the heap and the
 * tail cache's memory faulted in for the first time: perf on this VM), which is start-up, not
 * the put path; meta's cold rate is still printed in row g's notes. FLOOR_WARMUP=0: cold.
 */
const WARMUP = Number(process.env.FLOOR_WARMUP ?? 1_000_000)
for (const [name, value] of [
  ['FLOOR_COUNT', COUNT],
  ['FLOOR_WARMUP', WARMUP],
] as const) {
  if (!Number.isInteger(value) || value < 0 || value % 1000 !== 0 || (name === 'FLOOR_COUNT' && value === 0)) {
    throw new Error(`invalid ${name} "${process.env[name]}": expected a multiple of 1000 (the generator re-sends one pipeline of 1000 puts)`)
  }
}
const ONLY = (process.env.FLOOR_ONLY ?? 'g,redis').split(',')
const WINDOW = 1000
type Flush = 'threshold' | 'group-commit'
const FLUSHES = flushPolicies(process.env.FLOOR_FLUSH ?? 'both')
let FLUSH: Flush = 'threshold'
const fsyncOf = (flush: Flush) => (flush === 'threshold' ? 'everysec' : 'always')

function flushPolicies(value: string): Flush[] {
  if (value === 'both') return ['threshold', 'group-commit']
  if (value !== 'threshold' && value !== 'group-commit') throw new Error(`invalid FLOOR_FLUSH "${value}": expected threshold, group-commit or both`)
  return [value]
}

interface Row {
  name: string
  msgsPerSec: number
  clientUs: number | null
  serverUs: number | null
  note: string
}

/** The run's puts, encoded once before timing: frame i ends at ends[i]; opaque i = i. */
interface Frames {
  buf: Buffer
  ends: Float64Array
  topic: string
  verified: VerifiedPayloads
}

function encodeFrames(topic: string): Frames {
  const verified = new VerifiedPayloads(SIZE)
  const out = new OutputBuffer(COUNT * (SIZE + 48 + topic.length))
  const ends = new Float64Array(COUNT)
  for (let i = 0; i < COUNT; i++) {
    const payload = verified.payload()
    writePut(out, topic, 0, payload, 0, checksum(payload), i)
    ends[i] = out.byteLength
  }
  return {buf: out.take(), ends, topic, verified}
}

/**
 * Send the frames over one connection keeping WINDOW unacknowledged; resolves with the
 * elapsed ms and the generator's CPU ms once every ack is read (rejects on any other answer).
 */
async function generate(port: number, frames: Frames): Promise<{ms: number; cpuMs: number}> {
  const socket: Socket = connect({host: '127.0.0.1', port, noDelay: true})
  await once(socket, 'connect')
  const {buf, ends} = frames
  let sent = 0
  let acked = 0
  let rest: Buffer | undefined
  const sendUpTo = (upTo: number) => {
    socket.write(buf.subarray(sent === 0 ? 0 : ends[sent - 1], ends[upTo - 1]))
    sent = upTo
  }
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const done = new Promise<void>((resolve, reject) => {
    socket.on('error', reject)
    socket.on('close', () => reject(new Error(`connection closed after ${acked} of ${COUNT} acks`)))
    socket.on('data', (chunk: Buffer) => {
      const data = rest === undefined ? chunk : Buffer.concat([rest, chunk])
      rest = undefined
      let pos = 0
      for (;;) {
        // "result 200 <len> <opaque>\r\n<body>"
        const eol = data.indexOf(0x0d, pos)
        if (eol < 0 || eol + 1 >= data.length) break
        if (data[pos + 7] !== 0x32 || data[pos + 8] !== 0x30 || data[pos + 9] !== 0x30 || data[pos] !== 0x72) {
          reject(new Error(`put ${acked} was refused: ${data.toString('latin1', pos, eol)}`))
          socket.destroy()
          return
        }
        let i = pos + 11
        let length = 0
        while (data[i] !== 0x20) length = length * 10 + data[i++] - 0x30
        let opaque = 0
        for (i++; i < eol; i++) opaque = opaque * 10 + data[i] - 0x30
        if (eol + 2 + length > data.length) break
        if (opaque !== acked) {
          reject(new Error(`ack for opaque ${opaque} where ${acked} was expected`))
          socket.destroy()
          return
        }
        acked++
        pos = eol + 2 + length
      }
      if (pos < data.length) rest = Buffer.from(data.subarray(pos))
      if (acked === COUNT) {
        resolve()
        return
      }
      const upTo = Math.min(COUNT, acked + WINDOW)
      if (upTo > sent) sendUpTo(upTo)
    })
  })
  sendUpTo(Math.min(COUNT, WINDOW))
  await done
  const ms = performance.now() - t0
  const cpu = process.cpuUsage(cpu0)
  socket.removeAllListeners('close')
  socket.destroy()
  return {ms, cpuMs: (cpu.user + cpu.system) / 1000}
}

async function startFloorServer(): Promise<{child: ChildProcess; port: number}> {
  const child = spawn(process.execPath, [SERVER], {stdio: ['ignore', 'pipe', 'inherit']})
  let text = ''
  for await (const chunk of child.stdout!) {
    text += String(chunk)
    const m = /listening (\d+)/.exec(text)
    if (m) return {child, port: Number(m[1])}
  }
  throw new Error('the floor server exited before listening')
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}

const perMessage = (ms: number | undefined | null): number | null => (ms === undefined || ms === null ? null : (ms * 1000) / COUNT)

async function rowA(): Promise<Row> {
  const frames = encodeFrames('floor')
  const {child, port} = await startFloorServer()
  try {
    const before = processCpuMs(child.pid!)
    const run = await generate(port, frames)
    const after = processCpuMs(child.pid!)
    return {
      name: '(a) raw generator → minimal Node server (no storage)',
      msgsPerSec: Math.round((COUNT * 1000) / run.ms),
      clientUs: perMessage(run.cpuMs),
      serverUs: perMessage(before === undefined || after === undefined ? null : after - before),
      note: '',
    }
  } finally {
    await stop(child)
  }
}

async function rowB(): Promise<Row> {
  const frames = encodeFrames(`floor-${process.pid}`)
  const broker = await startEmbeddedBroker({self: [BIN], flush: FLUSH})
  try {
    const port = Number(broker.address.slice(broker.address.lastIndexOf(':') + 1))
    const before = broker.cpuMs()
    const run = await generate(port, frames)
    const after = broker.cpuMs()
    // Every put was acknowledged with 200 for its opaque, in order: mark them, read them back.
    const stamp = Buffer.alloc(4)
    for (let i = 0; i < COUNT; i++) {
      stamp.writeUInt32BE(i, 0)
      frames.verified.acknowledged(stamp)
    }
    const check = await frames.verified.readBack({
      broker: broker.address,
      topic: frames.topic,
      messageBytes: SIZE,
      maxInFlight: WINDOW,
      connections: 1,
      progressIntervalMs: 0,
      progress: () => {},
    })
    if (check.messages !== COUNT) throw new Error(`read back ${check.messages} of ${COUNT} messages`)
    return {
      name: `(b) raw generator → meta's broker (${FLUSH})`,
      msgsPerSec: Math.round((COUNT * 1000) / run.ms),
      clientUs: perMessage(run.cpuMs),
      serverUs: perMessage(before === undefined || after === undefined ? null : after - before),
      note: `${check.messages.toLocaleString('en-US')} read back and checked`,
    }
  } finally {
    await broker.stop()
  }
}

function metaBench(args: string[]): {msgsPerSec: number; cpu: {clientUsPerMsg: number; brokerUsPerMsg: number | null}; verify: {messages: number} | null} {
  const r = spawnSync(
    process.execPath,
    [BIN, 'bench', 'produce', '--plain-put', '--max-in-flight', String(WINDOW), '--size', String(SIZE), '--count', String(COUNT), '--quiet', '--json', ...args],
    {
      encoding: 'utf8',
      env: {...process.env, NO_COLOR: '1'},
    },
  )
  if (r.status !== 0) throw new Error(`meta bench produce ${args.join(' ')} failed: ${r.stderr}`)
  return JSON.parse(r.stdout)
}

function rowC(): Row {
  const s = metaBench(['--embedded', '--verify', '--flush', FLUSH])
  return {
    name: `(c) meta's producer → meta's broker (\`meta bench produce --embedded --plain-put --verify --flush ${FLUSH}\`)`,
    msgsPerSec: s.msgsPerSec,
    clientUs: s.cpu.clientUsPerMsg,
    serverUs: s.cpu.brokerUsPerMsg,
    note: `${s.verify?.messages.toLocaleString('en-US')} read back and checked`,
  }
}

async function rowD(): Promise<Row> {
  const {child, port} = await startFloorServer()
  try {
    const before = processCpuMs(child.pid!)
    const s = metaBench(['-b', `127.0.0.1:${port}`])
    const after = processCpuMs(child.pid!)
    return {
      name: "(d) meta's producer → minimal Node server",
      msgsPerSec: s.msgsPerSec,
      clientUs: s.cpu.clientUsPerMsg,
      // The server's CPU over the whole bench process (its start and warm-up included).
      serverUs: perMessage(before === undefined || after === undefined ? null : after - before),
      note: 'server CPU includes the bench start',
    }
  } finally {
    await stop(child)
  }
}

/** The warm-up of a generator row: WARMUP puts to `topic`; the rate of its first COUNT (cold), if it had that many. */
function warmUp(address: string, topic: string): number | undefined {
  if (WARMUP <= 0) return undefined
  const pipeline = writePipeline(topic, SIZE, WINDOW)
  const cold = runGenerator(address, pipeline, Math.min(COUNT, WARMUP))
  if (WARMUP > COUNT) runGenerator(address, pipeline, WARMUP - COUNT)
  return WARMUP >= COUNT ? Math.round((COUNT * 1000) / cold.ms) : undefined
}

const warmNote = (cold: number | undefined) =>
  WARMUP <= 0
    ? 'cold (no warm-up)'
    : `after ${WARMUP.toLocaleString('en-US')} warm-up puts${cold === undefined ? '' : ` (the first ${COUNT.toLocaleString('en-US')} of them, cold: ${cold.toLocaleString('en-US')}/s)`}`

async function rowG(): Promise<Row> {
  const pipeline = writePipeline(`floor-c-${process.pid}-${FLUSH}`, SIZE, WINDOW)
  const broker = await startEmbeddedBroker({self: [BIN], flush: FLUSH})
  try {
    const cold = warmUp(broker.address, `${pipeline.topic}-warmup`)
    const before = broker.cpuMs()
    const run = runGenerator(broker.address, pipeline, COUNT)
    const after = broker.cpuMs()
    const checked = await readBackPipeline(broker.address, pipeline, COUNT)
    return {
      name: `(g) C generator → meta's broker (${FLUSH})`,
      msgsPerSec: Math.round((COUNT * 1000) / run.ms),
      clientUs: perMessage(run.cpuMs),
      serverUs: perMessage(before === undefined || after === undefined ? null : after - before),
      note: `every ack checked; ${checked.toLocaleString('en-US')} read back, CRC and bytes checked; ${warmNote(cold)}`,
    }
  } finally {
    await broker.stop()
  }
}

async function rowE(): Promise<Row> {
  const pipeline = writePipeline('floor', SIZE, WINDOW)
  const {child, port} = await startFloorServer()
  try {
    const cold = warmUp(`127.0.0.1:${port}`, 'floor-warmup')
    const before = processCpuMs(child.pid!)
    const run = runGenerator(`127.0.0.1:${port}`, pipeline, COUNT)
    const after = processCpuMs(child.pid!)
    return {
      name: '(e) C generator → minimal Node server (no storage)',
      msgsPerSec: Math.round((COUNT * 1000) / run.ms),
      clientUs: perMessage(run.cpuMs),
      serverUs: perMessage(before === undefined || after === undefined ? null : after - before),
      note: `every ack checked; ${warmNote(cold)}`,
    }
  } finally {
    await stop(child)
  }
}

let lastRedis: XaddResult | undefined

async function rowRedis(): Promise<Row> {
  const fsync = fsyncOf(FLUSH)
  const r = await redisXadd(fsync, SIZE, COUNT, WARMUP)
  lastRedis = r
  const same = r.runs[0]
  return {
    name: `Redis 7 XADD, AOF ${fsync}, redis-benchmark -c 1 -P 1000 (C client)`,
    msgsPerSec: same.msgsPerSec,
    clientUs: same.clientUsPerMsg,
    serverUs: same.serverUsPerMsg,
    note: `${r.runs.map((x) => `${x.shape}: ${x.msgsPerSec.toLocaleString('en-US')}`).join('; ')}; ${WARMUP <= 0 ? 'no warm-up' : `after ${WARMUP.toLocaleString('en-US')} warm-up XADDs`}`,
  }
}

const us = (v: number | null) => (v === null ? '–' : v.toFixed(2))
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
if (ONLY.includes('g') || ONLY.includes('e')) buildGenerator()
process.stdout.write(
  `plain put ${SIZE} B, ${COUNT.toLocaleString('en-US')} messages, ${WINDOW} in flight, one loopback connection; ${WARMUP > 0 ? `${WARMUP.toLocaleString('en-US')} warm-up puts first (rows g, e, Redis)` : 'no warm-up'}; load average ${load()}\n\n`,
)
process.stdout.write('| Run | Pair | msg/s | client µs/msg | server µs/msg | notes | load (1 min) |\n|---|---|---:|---:|---:|---|---:|\n')
const ratios: string[] = []
for (let run = 1; run <= RUNS; run++) {
  for (const flush of FLUSHES) {
    FLUSH = flush
    lastRedis = undefined
    let meta: number | undefined
    const plan: Array<[string, () => Promise<Row> | Row]> = [
      ['g', rowG],
      ['redis', rowRedis],
      ['e', rowE],
      ['a', rowA],
      ['b', rowB],
      ['c', rowC],
      ['d', rowD],
    ]
    for (const [key, fn] of plan) {
      if (!ONLY.includes(key)) continue
      // a and d store nothing: run them once, with the first pairing.
      if ((key === 'a' || key === 'd' || key === 'e') && flush !== FLUSHES[0]) continue
      const before = loadavg()[0].toFixed(2)
      const row = await fn()
      if (key === 'g') meta = row.msgsPerSec
      process.stdout.write(
        `| ${run} | ${row.name} | ${row.msgsPerSec.toLocaleString('en-US')} | ${us(row.clientUs)} | ${us(row.serverUs)} | ${row.note} | ${before} |\n`,
      )
    }
    if (meta !== undefined && lastRedis !== undefined) {
      const r: XaddResult = lastRedis
      const best = r.best.msgsPerSec
      ratios.push(
        `run ${run}, meta ${flush} / Redis ${fsyncOf(flush)}: ${(meta / r.runs[0].msgsPerSec).toFixed(2)}× (same shape, c=1 P=1000), ${(meta / best).toFixed(2)}× (Redis's best, ${r.best.shape}); load ${load()}`,
      )
    }
  }
}
if (ratios.length > 0) process.stdout.write(`\n${ratios.join('\n')}\n`)
