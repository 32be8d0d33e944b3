/**
 * Replay against Redis (the target: at least 2.5× Redis XRANGE read with a Node client): the same
 * REPLAY_COUNT (default 1,000,000) entries of 100 B are read back from meta by one consumer
 * that checks every record's CRC (the client default) and every payload byte (`meta bench
 * produce --plain-put --verify`'s timed read-back), and from a Redis 7 stream by a Node client
 * (ioredis, devDependency) with XRANGE in batches of REPLAY_XRANGE_COUNT (default: both 1000
 * and 10000; the better is the reference), each entry's payload checked the same way (its
 * sequence number, length and filler). Needs Debian's redis-server
 * (`apt-get install redis-server redis-tools`); Redis runs on a free port in a temp dir
 * (AOF everysec) and is shut down afterwards.
 *
 *   npm run bench:redis-replay
 *   REPLAY_COUNT=1000000 REPLAY_REPEAT=3 node --import tsx bench/redis-replay.ts
 *   REPLAY_SIZE=1024 REPLAY_COUNT=300000 npm run bench:redis-replay   (the 1 KiB row: MB/s)
 *
 * Both sides get the same treatment: filled once from Node, not timed (Redis with pipelined
 * XADDs, meta with its producer into an embedded broker, threshold flush), then read back
 * REPLAY_REPEAT (default 3) times by this process; every pass is printed and the best of each
 * side is the figure. The first pass of either runs in a cold process (V8 compiles the read
 * path meanwhile: ioredis's first XRANGE pass here is about half its later ones, and so is
 * meta's first read-back).
 */
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer} from 'node:net'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {Redis} from 'ioredis'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'
import {VerifiedPayloads} from '../src/cli/bench/verify.js'
import {createProducer} from '../src/client/producer.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.REPLAY_COUNT ?? 1_000_000)
const REPEAT = Number(process.env.REPLAY_REPEAT ?? 3)
const XRANGE_COUNTS = (process.env.REPLAY_XRANGE_COUNT ?? '1000,10000').split(',').map(Number)
const whole = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max
if (!whole(COUNT, 1000, 100_000_000)) throw new Error(`invalid REPLAY_COUNT "${process.env.REPLAY_COUNT}": expected a whole number from 1000 to 100000000`)
if (!whole(REPEAT, 1, 100)) throw new Error(`invalid REPLAY_REPEAT "${process.env.REPLAY_REPEAT}": expected a whole number from 1 to 100`)
if (!XRANGE_COUNTS.every((n) => whole(n, 1, 1_000_000)))
  throw new Error(`invalid REPLAY_XRANGE_COUNT "${process.env.REPLAY_XRANGE_COUNT}": expected whole numbers from 1 to 1000000, comma-separated`)
const SIZE = Number(process.env.REPLAY_SIZE ?? 100)
if (!(SIZE >= 8 && SIZE <= 1 << 20)) throw new Error(`invalid REPLAY_SIZE ${SIZE}: expected 8 to 1048576 bytes`)
const KEY = 'replay'

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as {port: number}).port
      s.close(() => resolve(port))
    })
  })
}

/** Payload i: its sequence number in bytes 0–3, then 'x' filler (as meta's --verify stamps it). */
function payload(template: Buffer, i: number): Buffer {
  const b = Buffer.from(template)
  b.writeUInt32BE(i, 0)
  return b
}

async function fill(redis: Redis, template: Buffer): Promise<void> {
  const BATCH = 1000
  for (let first = 0; first < COUNT; first += BATCH) {
    const pipeline = redis.pipeline()
    for (let i = first; i < Math.min(COUNT, first + BATCH); i++) pipeline.xadd(KEY, '*', 'f', payload(template, i))
    const results = await pipeline.exec()
    const failed = results?.find(([err]) => err !== null)
    if (failed) throw failed[0]
  }
}

/** One XRANGE pass over the whole stream, `count` entries per call; every payload checked. */
async function xrangePass(redis: Redis, template: Buffer, count: number): Promise<number> {
  const t0 = performance.now()
  let next = 0
  let start = '-'
  for (;;) {
    const entries = await redis.xrangeBuffer(KEY, start, '+', 'COUNT', count)
    if (entries.length === 0) break
    for (const [, fields] of entries) {
      const data = fields[1]
      if (data.length !== SIZE || data.readUInt32BE(0) !== next || data.compare(template, 4, SIZE, 4, SIZE) !== 0) {
        throw new Error(`redis entry ${next} is not what was written`)
      }
      next += 1
    }
    start = `(${entries.at(-1)![0].toString('latin1')}`
  }
  if (next !== COUNT) throw new Error(`redis XRANGE read ${next} entries, expected ${COUNT}`)
  return COUNT / ((performance.now() - t0) / 1000)
}

async function redisReplay(): Promise<{best: number; runs: string[]}> {
  const dir = mkdtempSync(join(tmpdir(), 'meta-redis-replay-'))
  const port = await freePort()
  const server: ChildProcess = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--daemonize', 'no'],
    {stdio: 'ignore'},
  )
  const redis = new Redis({port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0})
  try {
    const deadline = performance.now() + 20_000
    while (spawnSync('redis-cli', ['-p', String(port), 'ping'], {encoding: 'utf8'}).stdout?.trim() !== 'PONG') {
      if (performance.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING within 20 s`)
      await new Promise((r) => setTimeout(r, 100))
    }
    await redis.connect()
    const template = Buffer.alloc(SIZE, 'x')
    process.stderr.write(`redis: filling ${COUNT} entries of ${SIZE} B (not timed)\n`)
    await fill(redis, template)
    const runs: string[] = []
    let best = 0
    for (let run = 1; run <= REPEAT; run++) {
      for (const count of XRANGE_COUNTS) {
        const before = load()
        const rate = await xrangePass(redis, template, count)
        best = Math.max(best, rate)
        runs.push(`XRANGE COUNT ${count}, run ${run}: ${fmt(rate)} msg/s (load ${before} → ${load()})`)
        process.stderr.write(`${runs.at(-1)}\n`)
      }
    }
    return {best, runs}
  } finally {
    redis.disconnect()
    server.kill('SIGTERM')
    await new Promise((r) => server.once('exit', r))
    rmSync(dir, {recursive: true, force: true})
  }
}

/** Fill the topic with COUNT stamped payloads through meta's producer (not timed), each acknowledged. */
async function fillMeta(broker: string, verified: VerifiedPayloads): Promise<void> {
  const producer = createProducer({broker})
  try {
    const WINDOW = 1000
    for (let first = 0; first < COUNT; first += WINDOW) {
      const sends: Array<Promise<void>> = []
      for (let i = first; i < Math.min(COUNT, first + WINDOW); i++) {
        const data = verified.payload()
        sends.push(
          producer.send(KEY, data).then((r) => {
            if (!r.success) throw new Error(`meta: put ${i} failed: ${r.errorMessage}`)
            verified.acknowledged(data)
          }),
        )
      }
      await Promise.all(sends)
    }
  } finally {
    await producer.close()
  }
}

async function metaReplay(): Promise<{best: number; runs: string[]}> {
  const runs: string[] = []
  let best = 0
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold'})
  try {
    const verified = new VerifiedPayloads(SIZE)
    process.stderr.write(`meta: filling ${COUNT} messages of ${SIZE} B (not timed)\n`)
    await fillMeta(broker.address, verified)
    for (let run = 1; run <= REPEAT; run++) {
      const before = load()
      const v = await verified.readBack({
        broker: broker.address,
        topic: KEY,
        messageBytes: SIZE,
        maxInFlight: 1000,
        connections: 1,
        progressIntervalMs: 0,
        progress: () => {},
        brokerCpuMs: broker.cpuMs,
      })
      if (v.messages !== COUNT || v.acknowledged !== COUNT) throw new Error(`meta: ${v.acknowledged} acknowledged, ${v.messages} read back, expected ${COUNT}`)
      best = Math.max(best, v.msgsPerSec)
      runs.push(
        `consumer read-back (CRC + payload checked), run ${run}: ${fmt(v.msgsPerSec)} msg/s, client ${v.cpu.clientUsPerMsg.toFixed(2)} µs/msg, broker ${v.cpu.brokerUsPerMsg?.toFixed(2) ?? '–'} µs/msg (load ${before} → ${load()})`,
      )
      process.stderr.write(`${runs.at(-1)}\n`)
    }
  } finally {
    await broker.stop()
  }
  return {best, runs}
}

const startLoad = load()
const redis = await redisReplay()
const meta = await metaReplay()
const ratio = meta.best / redis.best
process.stdout.write(
  [
    '',
    `replay of ${fmt(COUNT)} entries of ${SIZE} B, node ${process.version}; load average at start ${startLoad}, at end ${load()}`,
    '',
    ...meta.runs.map((r) => `- meta ${r}`),
    ...redis.runs.map((r) => `- Redis (ioredis) ${r}`),
    '',
    `| Replay, ${SIZE} B, ${fmt(COUNT)} entries, every entry checked | best msg/s | payload MB/s |`,
    '|---|---:|---:|',
    `| meta, one consumer, CRC checks | ${fmt(meta.best)} | ${fmt((meta.best * SIZE) / 1e6)} |`,
    `| Redis 7 stream, ioredis XRANGE | ${fmt(redis.best)} | ${fmt((redis.best * SIZE) / 1e6)} |`,
    `| meta / Redis | ${ratio.toFixed(2)}× (target ≥ 2.5×: ${ratio >= 2.5 ? 'met' : 'not met'}) |`,
    '',
  ].join('\n'),
)
