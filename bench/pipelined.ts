/**
 * Pipelined raw-socket load against an embedded broker (a child `meta serve`), for the paths `meta
 * bench` does not exercise: MetaQ clients' plain `put` frames (meta's producer sends put-batch), a
 * window of pipelined 1 MiB fetches, and an adversarial client (a thousand 1 MiB gets in one write,
 * docs/invariants.md#connections). Prints one line per scenario: msg/s or MB/s, broker CPU per
 * message, and the broker's peak RSS (VmHWM) and RSS growth.
 *
 *   node --import tsx bench/pipelined.ts
 *   BENCH_BIN=/other/checkout/bin/run.js node --import tsx bench/pipelined.ts   (A/B runs)
 *
 *   BENCH_SECONDS   length of each timed run (default 10)
 *   BENCH_ONLY      run only scenarios whose name contains this text
 *   BENCH_BIN       the `meta` script to run the broker from (default this checkout's)
 */
import {connect, type Socket} from 'node:net'
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker, type EmbeddedBroker} from '../src/cli/bench/embedded.js'
import {checksum, createResponseDecoder, OutputBuffer, writePut, type ResponseFrame} from '../src/protocol/index.js'

const BIN = process.env.BENCH_BIN ?? fileURLToPath(new URL('../bin/run.js', import.meta.url))
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ONLY = process.env.BENCH_ONLY
const MIB = 1024 * 1024

interface Wire {
  socket: Socket
  /** Called with every response frame. */
  onFrame(fn: (frame: ResponseFrame) => void): void
  closed: Promise<void>
}

async function open(address: string): Promise<Wire> {
  const [host, port] = address.split(':')
  const socket = connect({host, port: Number(port)})
  socket.setNoDelay(true)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const decoder = createResponseDecoder({maxBodyBytes: 64 * MIB})
  let handler: (frame: ResponseFrame) => void = () => {}
  socket.on('data', (chunk: Buffer) => {
    decoder.push(chunk)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) handler(f)
  })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', () => {})
  return {socket, onFrame: (fn) => (handler = fn), closed}
}

/** Wait for every answer, but report (and fail) rather than hang when some never come. */
async function answeredWithin(done: Promise<void>, missing: () => number, ms = 30_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${missing()} requests unanswered ${ms} ms after the run`)), ms)
  })
  try {
    await Promise.race([done, late])
  } finally {
    clearTimeout(timer)
  }
}

/** RSS and peak RSS of a process in MiB (Linux /proc). */
function memory(pid: number): {rssMiB: number; hwmMiB: number} {
  const status = readFileSync(`/proc/${pid}/status`, 'latin1')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? Number.NaN)
  return {rssMiB: kb('VmRSS') / 1024, hwmMiB: kb('VmHWM') / 1024}
}

/** Plain puts of `bytes` B with `window` unacknowledged, for SECONDS. */
async function plainPuts(broker: EmbeddedBroker, bytes: number, window: number): Promise<string> {
  const wire = await open(broker.address)
  const topic = `plain-${Date.now()}`
  const body = Buffer.alloc(bytes, 0x61)
  const crc = checksum(body)
  const out = new OutputBuffer(1 << 20)
  let sent = 0
  let acked = 0
  let failed = 0
  let stopping = false
  let finish = () => {}
  const fill = () => {
    while (!stopping && sent - acked - failed < window) writePut(out, topic, 0, body, 0, crc, sent++ & 0x7fffffff)
    if (out.byteLength > 0) wire.socket.write(out.take())
  }
  const done = new Promise<void>((resolve) => {
    finish = () => {
      if (stopping && acked + failed === sent) resolve()
    }
    wire.onFrame((frame) => {
      if (frame.type === 'result' && frame.code === 200) acked += 1
      else failed += 1
      finish()
    })
    wire.closed.then(
      () => resolve(),
      () => resolve(),
    )
  })
  const cpu0 = broker.cpuMs()
  const t0 = performance.now()
  // Refill once per turn of acks, like a client with a window.
  const timer = setInterval(fill, 0)
  fill()
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
  stopping = true
  clearInterval(timer)
  finish()
  await answeredWithin(done, () => sent - acked - failed)
  const seconds = (performance.now() - t0) / 1000
  const cpu = (broker.cpuMs() ?? Number.NaN) - (cpu0 ?? Number.NaN)
  wire.socket.destroy()
  const m = memory(broker.pid)
  return `${Math.round(acked / seconds).toLocaleString('en-US')} msg/s acked (${failed} failed), broker ${((cpu * 1000) / acked).toFixed(2)} µs/msg, broker peak RSS ${m.hwmMiB.toFixed(0)} MiB`
}

/** Fill a partition with `mib` MiB of 1 KiB messages (plain puts), return its size in bytes. */
async function fillTopic(broker: EmbeddedBroker, topic: string, mib: number): Promise<number> {
  const wire = await open(broker.address)
  const body = Buffer.alloc(1024 - 20, 0x62)
  const crc = checksum(body)
  const count = Math.ceil((mib * MIB) / 1024)
  let acked = 0
  let end = 0
  const done = new Promise<void>((resolve) => {
    wire.onFrame((frame) => {
      acked += 1
      if (frame.type === 'result' && frame.code === 200) {
        const offset = Number(frame.body.toString('latin1').split(' ')[2])
        end = Math.max(end, offset + 1024)
      }
      if (acked === count) resolve()
      else if (acked % 1000 === 0) send(1000)
    })
  })
  let sent = 0
  const send = (n: number) => {
    const out = new OutputBuffer(1 << 20)
    for (let i = 0; i < n && sent < count; i++) writePut(out, topic, 0, body, 0, crc, sent++)
    wire.socket.write(out.take())
  }
  send(4000)
  await done
  wire.socket.destroy()
  return end
}

/** `window` pipelined gets of 1 MiB, cycling over the filled range, for SECONDS. */
async function fetchWindow(broker: EmbeddedBroker, window: number): Promise<string> {
  const topic = `fetch-${Date.now()}`
  const size = await fillTopic(broker, topic, 64)
  const wire = await open(broker.address)
  let next = 0
  let answered = 0
  let bytes = 0
  let sentCount = 0
  let stopping = false
  const get = () => {
    const offset = next
    next = next + MIB >= size ? 0 : next + MIB
    sentCount += 1
    wire.socket.write(`get ${topic} g 0 ${offset} ${MIB} ${sentCount}\r\n`)
  }
  let finish = () => {}
  const done = new Promise<void>((resolve) => {
    finish = () => {
      if (stopping && answered === sentCount) resolve()
    }
    wire.onFrame((frame) => {
      answered += 1
      if (frame.type === 'value') bytes += frame.body.length
      if (!stopping) get()
      else finish()
    })
    wire.closed.then(
      () => resolve(),
      () => resolve(),
    )
  })
  const cpu0 = broker.cpuMs()
  const t0 = performance.now()
  for (let i = 0; i < window; i++) get()
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
  stopping = true
  finish()
  await answeredWithin(done, () => sentCount - answered)
  const seconds = (performance.now() - t0) / 1000
  const cpu = (broker.cpuMs() ?? Number.NaN) - (cpu0 ?? Number.NaN)
  wire.socket.destroy()
  const m = memory(broker.pid)
  return `${(bytes / MIB / seconds).toFixed(0)} MiB/s of value bodies (${answered} gets), broker ${((cpu * 1000) / answered).toFixed(0)} µs/get, broker peak RSS ${m.hwmMiB.toFixed(0)} MiB`
}

/**
 * `count` gets of 1 MiB in one write by a client that does not read (the bound on a connection's
 * memory).
 */
async function getFlood(broker: EmbeddedBroker, count: number): Promise<string> {
  const topic = `flood-${Date.now()}`
  await fillTopic(broker, topic, 2)
  const before = memory(broker.pid)
  const wire = await open(broker.address)
  wire.socket.pause()
  const lines: string[] = []
  for (let i = 0; i < count; i++) lines.push(`get ${topic} g 0 0 ${MIB} ${i}\r\n`)
  wire.socket.write(lines.join(''))
  // Let the broker do whatever it will with them; sample its RSS meanwhile.
  let peak = before.rssMiB
  const until = performance.now() + Math.min(SECONDS, 5) * 1000
  while (performance.now() < until) {
    peak = Math.max(peak, memory(broker.pid).rssMiB)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  wire.socket.destroy()
  return `broker RSS ${before.rssMiB.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB while the client did not read (+${(peak - before.rssMiB).toFixed(0)} MiB)`
}

const SCENARIOS: Array<[string, (b: EmbeddedBroker) => Promise<string>]> = [
  ['plain put 100 B, 1,000 in flight', (b) => plainPuts(b, 100, 1000)],
  ['fetch 1 MiB, window of 8', (b) => fetchWindow(b, 8)],
  ['get flood: 1,000 x 1 MiB in one write, never read', (b) => getFlood(b, 1000)],
]

process.stderr.write(`broker: ${BIN}\n`)
for (const [name, run] of SCENARIOS) {
  if (ONLY !== undefined && !name.includes(ONLY)) continue
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold'})
  try {
    process.stdout.write(`${name}: ${await run(broker)}\n`)
  } finally {
    await broker.stop()
  }
}
