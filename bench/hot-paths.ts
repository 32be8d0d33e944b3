/**
 * Micro-benchmarks of the per-message work on the produce/consume paths, in process and
 * without sockets, so that an optimisation can be measured on a busy or noisy machine
 * (`node --import tsx bench/hot-paths.ts`). Each line is ns per message (best of 5 rounds).
 * HOT_N sets the messages per round, HOT_ONLY=<text> runs only the matching lines, and
 * HOT_PROFILE=<file.cpuprofile> writes a CPU profile of the in-process broker put path only.
 *
 *   broker: decode put frames (64 KiB chunks) · encode put acks · a put through the
 *           broker's connection and handler (fake socket, real store in a temp dir)
 *   client: encode puts (producer path) · decode put acks · an ack through the producer
 *           (fake connection) · decode a fetched message set
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {checksum} from '../src/protocol/crc.js'
import {createRequestDecoder, createResponseDecoder} from '../src/protocol/frames.js'
import {OutputBuffer} from '../src/protocol/output-buffer.js'
import {encodeResult} from '../src/protocol/commands/result.js'
import {encodePutResult, writePut} from '../src/protocol/commands/put.js'
import {decodeMessageSet, encodeRecord} from '../src/protocol/message-set.js'

const N = Number(process.env.HOT_N ?? 200_000)
/** Run only the measurements whose name contains this text. */
const ONLY = process.env.HOT_ONLY
const ROUNDS = 5
const payload = Buffer.alloc(100, 'x')
const crc = checksum(payload)

function measure(name: string, fn: () => void, perRound = N): void {
  if (ONLY !== undefined && !name.includes(ONLY)) return
  let best = Number.POSITIVE_INFINITY
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now()
    fn()
    best = Math.min(best, performance.now() - t0)
  }
  console.log(`${name.padEnd(48)} ${((best * 1e6) / perRound).toFixed(0).padStart(6)} ns/msg`)
}

function chunk(buf: Buffer, size = 64 * 1024): Buffer[] {
  const out: Buffer[] = []
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size))
  return out
}

// --- broker side -------------------------------------------------------------------------
const putStream = (() => {
  const out = new OutputBuffer()
  for (let i = 0; i < N; i++) writePut(out, 'bench-topic', 0, payload, 0, crc, -2147483648 + i)
  return chunk(out.take())
})()

measure('broker: decode put frames', () => {
  const decoder = createRequestDecoder({maxBodyBytes: 1024 * 1024})
  let n = 0
  for (const c of putStream) {
    decoder.push(c)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) n++
  }
  if (n !== N) throw new Error(`decoded ${n}`)
})

measure('broker: encode put acks', () => {
  const out = new OutputBuffer()
  let id = 1234567890123456789n
  for (let i = 0; i < N; i++) {
    encodePutResult(out, -2147483648 + i, id, 0, i * 120)
    id += 1n
    if ((i & 1023) === 1023) out.take()
  }
  out.take()
})

// --- client side -------------------------------------------------------------------------
measure('client: encode puts (header + body)', () => {
  const out = new OutputBuffer()
  for (let i = 0; i < N; i++) {
    writePut(out, 'bench-topic', 0, payload, 0, crc, -2147483648 + i)
    if ((i & 1023) === 1023) out.take()
  }
  out.take()
})

measure('client: checksum of a 100 B payload', () => {
  let sum = 0
  for (let i = 0; i < N; i++) sum += checksum(payload)
  if (sum < 0) throw new Error('unreachable')
})

const ackStream = (() => {
  const out = new OutputBuffer()
  let id = 7206323541946744832n
  for (let i = 0; i < N; i++) {
    encodeResult(out, 200, -2147483648 + i, `${id} 0 ${i * 120}`)
    id += 1n
  }
  return chunk(out.take())
})()

measure('client: decode put acks (frames only)', () => {
  const decoder = createResponseDecoder()
  let n = 0
  for (const c of ackStream) {
    decoder.push(c)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) n++
  }
  if (n !== N) throw new Error(`decoded ${n}`)
})

measure('client: decode put acks + parse body', () => {
  const decoder = createResponseDecoder()
  let sum = 0
  for (const c of ackStream) {
    decoder.push(c)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
      const body = f.body.toString('utf8')
      const first = body.indexOf(' ')
      const second = body.indexOf(' ', first + 1)
      sum += Number(body.slice(first + 1, second)) + Number(body.slice(second + 1))
      if (BigInt(body.slice(0, first)) < 0n) sum++
    }
  }
  if (sum < 0) throw new Error('unreachable')
})

const messageSet = (() => {
  const records: Buffer[] = []
  for (let i = 0; i < 8000; i++) records.push(encodeRecord(BigInt(i) + 7206323541946744832n, 0, payload))
  return Buffer.concat(records)
})()

measure(
  'client: decode fetched message set (CRC on)',
  () => {
    for (let r = 0; r < 25; r++) decodeMessageSet(messageSet)
  },
  8000 * 25,
)

const dir = mkdtempSync(join(tmpdir(), 'meta-hot-'))
rmSync(dir, {recursive: true, force: true})

// --- the broker's put path, in process -----------------------------------------------------
// A real broker (store in a temp dir) and a real Connection on a fake socket: put chunks go
// in as 'data' events, one chunk per event-loop turn as from a socket, and the acks are
// counted as the connection writes them. CPU ns per message over the whole path.
if (ONLY === undefined || 'broker: put path'.includes(ONLY)) {
  const {startBroker, applyOverrides, defaultBrokerConfig} = await import('../src/broker/index.js')
  const {Connection} = await import('../src/broker/connection.js')
  const {EventEmitter} = await import('node:events')
  const {silentLogger} = await import('../src/log.js')
  const {mkdtempSync: mkdtemp, rmSync: rm} = await import('node:fs')
  const dataPath = mkdtemp(join(tmpdir(), 'meta-hot-broker-'))
  const broker = await startBroker({config: applyOverrides(defaultBrokerConfig(), {dataPath, serverPort: 0, listenHost: '127.0.0.1'})})
  class FakeSocket extends EventEmitter {
    remoteAddress = '127.0.0.1'
    remotePort = 1
    destroyed = false
    writableLength = 0
    written = 0
    setNoDelay(): void {}
    pause(): void {}
    resume(): void {}
    cork(): void {}
    uncork(): void {}
    end(): void {}
    destroy(): void {}
    write(chunk: Buffer): boolean {
      this.written += chunk.length
      return true
    }
  }
  const ackBytes = ackStream.reduce((n, c) => n + c.length, 0)
  const profileFile = process.env.HOT_PROFILE
  const {Session} = await import('node:inspector/promises')
  const session = new Session()
  if (profileFile !== undefined) {
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', {interval: 100})
    await session.post('Profiler.start')
  }
  let best = Number.POSITIVE_INFINITY
  for (let round = 0; round < ROUNDS; round++) {
    const socket = new FakeSocket()
    new Connection(socket as never, broker as never, silentLogger, {maxBodyBytes: 1024 * 1024, maxPendingBytes: 16 * 1024 * 1024})
    const cpu0 = process.cpuUsage()
    for (const chunk of putStream) {
      socket.emit('data', chunk)
      await new Promise((resolve) => setImmediate(resolve))
    }
    // Acks of the last turn leave after the store's end-of-turn write.
    while (socket.written < ackBytes * 0.9) await new Promise((resolve) => setImmediate(resolve))
    const cpu = process.cpuUsage(cpu0)
    best = Math.min(best, (cpu.user + cpu.system) * 1000)
    socket.emit('close')
  }
  if (profileFile !== undefined) {
    const {profile} = await session.post('Profiler.stop')
    const {writeFileSync} = await import('node:fs')
    writeFileSync(profileFile, JSON.stringify(profile))
    session.disconnect()
  }
  console.log(`${'broker: put path (decode, handler, store, ack)'.padEnd(48)} ${(best / N).toFixed(0).padStart(6)} ns/msg (CPU)`)
  await broker.close()
  rm(dataPath, {recursive: true, force: true})
}
