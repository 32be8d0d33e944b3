/**
 * Node producers on both sides: meta's own producer (`meta bench produce --embedded`: the
 * library's put-batch producer against a child `meta serve`, threshold flush) against Redis 7
 * `XADD` from ioredis (AOF everysec) and NATS JetStream publishes from nats.js (file storage),
 * NODE_PRODUCERS_COUNT messages (default 1,000,000) of NODE_PRODUCERS_SIZE bytes (default
 * 100), one connection, at most NODE_PRODUCERS_WINDOW (default 1,000) unacknowledged. Every
 * XADD and publish is awaited (its acknowledgement counted); Redis and NATS each run two
 * client shapes (ioredis: pipelines of a window each, and a sliding window of single XADDs
 * with auto-pipelining; NATS: a sliding window of publishes, and windows awaited whole) and
 * the better is the reference. Each system runs NODE_PRODUCERS_ROUNDS times (default 3),
 * alternating, and the medians are compared. Needs Debian's redis-server and nats-server
 * (`apt-get install redis-server nats-server`); each server runs on a free port in a temp
 * dir and is stopped afterwards.
 *
 *   node --import tsx bench/node-producers.ts
 */
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer, connect as tcpConnect} from 'node:net'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {Redis} from 'ioredis'
import {connect as natsConnect, StorageType, type JetStreamClient, type PubAck} from 'nats'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.NODE_PRODUCERS_COUNT ?? 1_000_000)
const SIZE = Number(process.env.NODE_PRODUCERS_SIZE ?? 100)
const WINDOW = Number(process.env.NODE_PRODUCERS_WINDOW ?? 1000)
const ROUNDS = Number(process.env.NODE_PRODUCERS_ROUNDS ?? 3)
if (!(COUNT >= 1000 && COUNT <= 100_000_000)) throw new Error(`invalid NODE_PRODUCERS_COUNT ${COUNT}: expected 1000 to 100000000`)
if (!(SIZE >= 8 && SIZE <= 1 << 20)) throw new Error(`invalid NODE_PRODUCERS_SIZE ${SIZE}: expected 8 to 1048576 bytes`)
if (!(WINDOW >= 1 && WINDOW <= 100_000)) throw new Error(`invalid NODE_PRODUCERS_WINDOW ${WINDOW}: expected 1 to 100000`)
if (!(ROUNDS >= 1 && ROUNDS <= 20)) throw new Error(`invalid NODE_PRODUCERS_ROUNDS ${ROUNDS}: expected 1 to 20`)

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as {port: number}).port
      s.close(() => resolve(port))
    })
  })
}

/** Resolves once something accepts TCP connections on the port (deadline 20 s). */
async function listening(port: number, what: string): Promise<void> {
  const deadline = performance.now() + 20_000
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(port, '127.0.0.1', () => (s.end(), resolve(true))).on('error', () => resolve(false))
    })
    if (up) return
    if (performance.now() > deadline) throw new Error(`${what} on port ${port} did not accept connections within 20 s`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

interface Server {
  port: number
  stop(): Promise<void>
}

async function startServer(command: string, args: (port: number, dir: string) => string[]): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), `meta-node-producers-${command}-`))
  const port = await freePort()
  const child: ChildProcess = spawn(command, args(port, dir), {stdio: 'ignore'})
  const exited = new Promise((r) => child.once('exit', r))
  await listening(port, command)
  return {
    port,
    async stop() {
      child.kill('SIGTERM')
      await exited
      rmSync(dir, {recursive: true, force: true})
    },
  }
}

/** msg/s of `meta bench produce --embedded` (a fresh broker each run). */
function metaRun(): number {
  const r = spawnSync(
    process.execPath,
    [BIN, 'bench', 'produce', '--embedded', '--size', String(SIZE), '--count', String(COUNT), '--max-in-flight', String(WINDOW), '--quiet', '--json'],
    {
      encoding: 'utf8',
      env: {...process.env, NO_COLOR: '1'},
    },
  )
  if (r.status !== 0) throw new Error(`meta bench failed: ${r.stderr}`)
  return JSON.parse(r.stdout).msgsPerSec
}

/** XADD in pipelines of WINDOW, one pipeline at a time. */
async function redisPipelines(redis: Redis, key: string, payload: Buffer): Promise<number> {
  const t0 = performance.now()
  for (let first = 0; first < COUNT; first += WINDOW) {
    const pipeline = redis.pipeline()
    for (let i = first; i < Math.min(COUNT, first + WINDOW); i++) pipeline.xadd(key, '*', 'f', payload)
    const results = await pipeline.exec()
    if (results?.some(([err]) => err !== null)) throw new Error('an XADD failed')
  }
  return COUNT / ((performance.now() - t0) / 1000)
}

/** Single XADDs, at most WINDOW unanswered (ioredis auto-pipelines those of one tick). */
async function slidingWindow(send: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  let sent = 0
  let done = 0
  await new Promise<void>((resolve, reject) => {
    const more = () => {
      while (sent < COUNT && sent - done < WINDOW) {
        sent++
        send().then(() => {
          done++
          if (done === COUNT) resolve()
          else if (sent - done <= WINDOW / 2) more()
        }, reject)
      }
    }
    more()
  })
  return COUNT / ((performance.now() - t0) / 1000)
}

async function redisRun(shape: 'pipelines' | 'window'): Promise<number> {
  const server = await startServer('redis-server', (port, dir) => [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--appendonly',
    'yes',
    '--appendfsync',
    'everysec',
    '--save',
    '',
    '--daemonize',
    'no',
  ])
  const redis = new Redis({port: server.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, enableAutoPipelining: shape === 'window'})
  try {
    await redis.connect()
    const payload = Buffer.alloc(SIZE, 'x')
    return shape === 'pipelines' ? await redisPipelines(redis, 'bench', payload) : await slidingWindow(() => redis.xadd('bench', '*', 'f', payload))
  } finally {
    redis.disconnect()
    await server.stop()
  }
}

async function natsRun(shape: 'window' | 'batches'): Promise<number> {
  const server = await startServer('nats-server', (port, dir) => ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)])
  const nc = await natsConnect({servers: `127.0.0.1:${server.port}`})
  try {
    const jsm = await nc.jetstreamManager()
    await jsm.streams.add({name: 'bench', subjects: ['bench'], storage: StorageType.File})
    const js: JetStreamClient = nc.jetstream()
    const payload = Buffer.alloc(SIZE, 'x')
    if (shape === 'window') return await slidingWindow(() => js.publish('bench', payload))
    const t0 = performance.now()
    for (let first = 0; first < COUNT; first += WINDOW) {
      const acks: Promise<PubAck>[] = []
      for (let i = first; i < Math.min(COUNT, first + WINDOW); i++) acks.push(js.publish('bench', payload))
      await Promise.all(acks)
    }
    return COUNT / ((performance.now() - t0) / 1000)
  } finally {
    await nc.close()
    await server.stop()
  }
}

for (const command of ['redis-server', 'nats-server']) {
  if (spawnSync(command, ['--version']).error) throw new Error(`${command} is not installed: apt-get install redis-server nats-server`)
}
const loadAtStart = load()
const runs: Record<string, number[]> = {meta: [], redis: [], nats: []}
const lines: string[] = []
for (let round = 1; round <= ROUNDS; round++) {
  const meta = metaRun()
  const redis = [await redisRun('pipelines'), await redisRun('window')]
  const nats = [await natsRun('window'), await natsRun('batches')]
  runs.meta.push(meta)
  runs.redis.push(Math.max(...redis))
  runs.nats.push(Math.max(...nats))
  lines.push(
    `round ${round}: meta ${fmt(meta)}; redis pipelines ${fmt(redis[0])}, window ${fmt(redis[1])}; nats window ${fmt(nats[0])}, batches ${fmt(nats[1])} (load ${load()})`,
  )
  process.stderr.write(`${lines.at(-1)}\n`)
}
const [meta, redis, nats] = [median(runs.meta), median(runs.redis), median(runs.nats)]
console.log(`${fmt(COUNT)} × ${SIZE} B, one connection, window ${WINDOW}, median of ${ROUNDS} rounds; load ${loadAtStart} → ${load()}`)
console.log('')
console.log('| producer (Node) | msg/s | meta ÷ it |')
console.log('|---|---:|---:|')
console.log(`| meta (put-batch producer, threshold flush) | ${fmt(meta)} | — |`)
console.log(`| Redis 7 XADD from ioredis (AOF everysec) | ${fmt(redis)} | ${(meta / redis).toFixed(2)}× |`)
console.log(`| NATS JetStream publish from nats.js (file storage) | ${fmt(nats)} | ${(meta / nats).toFixed(2)}× |`)
console.log('')
for (const line of lines) console.log(`- ${line}`)
