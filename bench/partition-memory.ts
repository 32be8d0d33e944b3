/**
 * Memory per idle open partition: the broker's RSS with N partitions that each hold one
 * message and take no traffic, against N = 1, so (RSS(N) − RSS(1)) / N × 1,000 is the RSS per
 * 1,000 idle partitions (docs/configuration.md, maxPartitions).
 *
 *   npm run bench:partition-memory
 *   PART_COUNTS=1000,10000,30000 node --import tsx bench/partition-memory.ts
 *
 * For each N: a `meta serve --partitions N` child (threshold flush) on a fresh data dir; one
 * 100-byte put to every partition of one topic (pipelined on one connection: this creates
 * them); RSS after the puts (created in this run), then a restart on the same data dir and RSS
 * once listening plus 5 s (partitions recovered at open, as after any restart), each the
 * VmRSS of /proc/PID/status.
 */
import {readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {connect} from 'node:net'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNTS = (process.env.PART_COUNTS ?? '1,1000,10000').split(',').map(Number)
const SETTLE_MS = 5000

const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

/** One put to each of `count` partitions of `topic`, pipelined 1,000 at a time; resolves when all are acknowledged. */
async function putEach(address: string, topic: string, count: number): Promise<void> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))]
  const socket = connect({host, port})
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const body = 'm'.repeat(100)
  let acked = 0
  let pending = ''
  let wake: () => void = () => {}
  socket.setEncoding('latin1').on('data', (d: string) => {
    pending += d
    for (let m = /^result (\d+) (\d+) \S+\r\n/.exec(pending); m !== null; m = /^result (\d+) (\d+) \S+\r\n/.exec(pending)) {
      if (m[1] !== '200') throw new Error(`put failed: ${pending.slice(0, 300)}`)
      const end = m[0].length + Number(m[2])
      if (pending.length < end) break
      pending = pending.slice(end)
      acked += 1
    }
    wake()
  })
  for (let p = 0; p < count; p += 1000) {
    const n = Math.min(1000, count - p)
    socket.write(Array.from({length: n}, (_, i) => `put ${topic} ${p + i} ${body.length} 0 ${p + i}\r\n${body}`).join(''))
    while (acked < p + n) await new Promise<void>((resolve) => (wake = resolve))
  }
  socket.destroy()
}

const rows: string[] = []
const measured: Array<{n: number; created: number; recovered: number}> = []
for (const n of COUNTS) {
  const dataDir = await mkdtemp(join(tmpdir(), 'meta-bench-mem-'))
  try {
    const first = await startEmbeddedBroker({self: [BIN], flush: 'threshold', partitions: n, dataDir, startTimeoutMs: 300_000})
    let created: number
    try {
      await putEach(first.address, 'idle', n)
      await sleep(SETTLE_MS)
      created = rssMb(first.pid)
    } finally {
      await first.stop()
    }
    const again = await startEmbeddedBroker({self: [BIN], flush: 'threshold', partitions: n, dataDir, startTimeoutMs: 300_000})
    let recovered: number
    try {
      await sleep(SETTLE_MS)
      recovered = rssMb(again.pid)
    } finally {
      await again.stop()
    }
    measured.push({n, created, recovered})
    process.stderr.write(`${n} partitions: RSS ${created.toFixed(0)} MB created, ${recovered.toFixed(0)} MB after a restart\n`)
  } finally {
    await rm(dataDir, {recursive: true, force: true})
  }
}
const base = measured[0]
for (const m of measured) {
  const per = (key: 'created' | 'recovered') => (m.n === base.n ? '–' : `${(((m[key] - base[key]) / (m.n - base.n)) * 1000).toFixed(1)} MB`)
  rows.push(`| ${m.n.toLocaleString('en-US')} | ${m.created.toFixed(0)} MB | ${per('created')} | ${m.recovered.toFixed(0)} MB | ${per('recovered')} |`)
}
process.stdout.write(
  [
    '',
    `idle partitions (one 100 B message each), node ${process.version}, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
    '| Partitions | RSS, created by puts | per 1,000 | RSS after a restart | per 1,000 |',
    '|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ].join('\n'),
)
