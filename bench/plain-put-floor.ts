/**
 * The floor of issue 14's plain-put row on this machine: how much of the gap to Redis is the
 * Node runtime and the kernel, how much meta's broker and how much meta's client library.
 * Every row sends the same wire bytes — MetaQ's 7-token put with checksum, `--size` bytes of
 * payload (default 100), one loopback connection, a window of 1000 unacknowledged puts — and
 * reports msg/s and the CPU µs per message of each side:
 *
 *   (a) raw generator → minimal server: a Node load generator that sends pre-encoded puts
 *       (one write of the next k frames per k acknowledgements read; nothing encoded in the
 *       timed loop) to bench/plain-put-floor-server.mjs, which parses the put lines and
 *       writes `result 200` acks, storing nothing. What Node and the kernel cost.
 *   (b) raw generator → meta's broker (`meta serve`, threshold flush or FLOOR_FLUSH, a temp dir): the
 *       broker's cost without meta's client. Every message is read back and checked
 *       afterwards (its sequence number, run tag and bytes, every CRC), as in `meta bench
 *       --verify`; every ack must be `result 200` for the opaque sent, in order.
 *   (c) meta's producer library → meta's broker: `meta bench produce --embedded --plain-put
 *       --max-in-flight 1000 --verify` (what issue 14's row measures).
 *   (d) meta's producer library → minimal server: the client library's cost alone
 *       (`meta bench produce -b … --plain-put`; nothing to read back).
 *   Redis 7 `XADD` from redis-benchmark (its C client), AOF everysec, or always with
 *   FLOOR_FLUSH=group-commit (bench/redis-xadd.ts).
 *
 *   npm run bench:floor                          (FLOOR_COUNT=1000000, FLOOR_SIZE=100, FLOOR_RUNS=1)
 *   FLOOR_ONLY=a,b FLOOR_RUNS=3 npm run bench:floor
 *   FLOOR_FLUSH=group-commit npm run bench:floor (meta's broker with group commit, Redis with
 *                                                 appendfsync always; default threshold/everysec)
 *
 * Wall-clock figures on a shared machine: the load average is printed with every run.
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
import {processCpuMs, redisXadd} from './redis-xadd.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SERVER = fileURLToPath(new URL('./plain-put-floor-server.mjs', import.meta.url))
const COUNT = Number(process.env.FLOOR_COUNT ?? 1_000_000)
const SIZE = Number(process.env.FLOOR_SIZE ?? 100)
const RUNS = Number(process.env.FLOOR_RUNS ?? 1)
const ONLY = (process.env.FLOOR_ONLY ?? 'a,b,c,d,redis').split(',')
const WINDOW = 1000
const FLUSH = flushPolicy(process.env.FLOOR_FLUSH ?? 'threshold')
const FSYNC = FLUSH === 'threshold' ? 'everysec' : 'always'

function flushPolicy(value: string): 'threshold' | 'group-commit' {
  if (value !== 'threshold' && value !== 'group-commit') throw new Error(`invalid FLOOR_FLUSH "${value}": expected threshold or group-commit`)
  return value
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
  const r = spawnSync(process.execPath, [BIN, 'bench', 'produce', '--plain-put', '--max-in-flight', String(WINDOW), '--size', String(SIZE), '--count', String(COUNT), '--quiet', '--json', ...args], {
    encoding: 'utf8',
    env: {...process.env, NO_COLOR: '1'},
  })
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

async function rowRedis(): Promise<Row> {
  const r = await redisXadd(FSYNC, SIZE, COUNT)
  return {
    name: `Redis 7 XADD, AOF ${FSYNC}, redis-benchmark (C client), best of c=1 P=1000 / c=50 P=16`,
    msgsPerSec: r.best.msgsPerSec,
    clientUs: r.best.clientUsPerMsg,
    serverUs: r.best.serverUsPerMsg,
    note: r.runs.map((x) => `${x.shape}: ${x.msgsPerSec.toLocaleString('en-US')}`).join('; '),
  }
}

const us = (v: number | null) => (v === null ? '–' : v.toFixed(2))
const rows: Row[] = []
process.stdout.write(`plain put ${SIZE} B, ${COUNT.toLocaleString('en-US')} messages, window ${WINDOW}, one loopback connection, meta ${FLUSH} / Redis ${FSYNC}\n\n`)
process.stdout.write('| Run | Pair | msg/s | client µs/msg | server µs/msg | notes | load (1 min) |\n|---|---|---:|---:|---:|---|---:|\n')
for (let run = 1; run <= RUNS; run++) {
  const plan: Array<[string, () => Promise<Row> | Row]> = [
    ['a', rowA],
    ['b', rowB],
    ['c', rowC],
    ['d', rowD],
    ['redis', rowRedis],
  ]
  for (const [key, fn] of plan) {
    if (!ONLY.includes(key)) continue
    const load = loadavg()[0].toFixed(2)
    const row = await fn()
    rows.push(row)
    process.stdout.write(`| ${run} | ${row.name} | ${row.msgsPerSec.toLocaleString('en-US')} | ${us(row.clientUs)} | ${us(row.serverUs)} | ${row.note} | ${load} |\n`)
  }
}
