/**
 * 10,000 partitions on one broker: open and restart time (target ≤ 5 s), broker RSS
 * (target ≤ 512 MB), and puts spread over all partitions against one partition's throughput
 * (target: within 20 %).
 *
 *   npm run bench:partitions
 *   PART_COUNT=10000 PART_MESSAGES=1000000 node --import tsx bench/partitions.ts
 *
 * Steps, each a child `meta serve` (threshold flush) on a free port, data dir kept between 2–4:
 *  1. One partition: a broker with --partitions 1; PART_MESSAGES plain puts (MetaQ's 7-token
 *     put with checksum, one connection, window 1000), read back and verified.
 *  2. A broker with --partitions PART_COUNT: the start (spawn → listening) on an empty dir,
 *     then the same puts, round-robin over all partitions (the producer's default selector),
 *     so each partition is created by its first put (that first round is the "open" of every
 *     partition); read back and verified. Broker RSS (VmRSS, and the peak VmHWM) afterwards.
 *  3. Restart: SIGTERM (graceful), then a new broker on the same data dir: spawn → listening
 *     with PART_COUNT partitions to recover; RSS once listening.
 *  4. After the restart, one more round of puts over all partitions (PART_COUNT × 10, verified)
 *     and RSS again.
 * "Verified": one consumer reads the topic back, checks every CRC and payload byte, and every
 * acknowledged message must come back exactly once, else the bench fails.
 */
import {readFileSync} from 'node:fs'
import {mkdtemp, rm} from 'node:fs/promises'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker, type EmbeddedBroker} from '../src/cli/bench/embedded.js'
import type {RunSummary} from '../src/cli/bench/produce.js'
import {verifiedPuts} from './verified-puts.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const PARTITIONS = Number(process.env.PART_COUNT ?? 10_000)
const MESSAGES = Number(process.env.PART_MESSAGES ?? 1_000_000)
const TOPIC = 'parts'

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

/** VmRSS and VmHWM of a process in MB (Linux /proc). */
function rss(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return `RSS ${(kb('VmRSS') / 1024).toFixed(0)} MB (peak ${(kb('VmHWM') / 1024).toFixed(0)} MB)`
}

async function start(partitions: number, dataDir?: string): Promise<{broker: EmbeddedBroker; seconds: number}> {
  const t0 = performance.now()
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold', partitions, dataDir, startTimeoutMs: 120_000})
  return {broker, seconds: (performance.now() - t0) / 1000}
}

function puts(broker: EmbeddedBroker, count: number): Promise<RunSummary> {
  return verifiedPuts(broker, {topic: TOPIC, count})
}

const fmt = (n: number) => n.toLocaleString('en-US')
const row = (what: string, s: RunSummary, before: string) =>
  `| ${what} | ${fmt(s.messages)} | ${fmt(s.msgsPerSec)} | ${s.cpu.brokerUsPerMsg?.toFixed(2) ?? '–'} | ${fmt(s.verify!.messages)} at ${fmt(s.verify!.msgsPerSec)}/s | ${before} → ${load()} |`

const lines: string[] = []
// 1. one partition
let before = load()
process.stderr.write(`1 partition: ${MESSAGES} plain puts\n`)
const single = await start(1)
let one: RunSummary
try {
  one = await puts(single.broker, MESSAGES)
} finally {
  await single.broker.stop()
}
const table = [row('1 partition', one, before)]

// 2. many partitions, fresh
const dataDir = await mkdtemp(join(tmpdir(), 'meta-bench-parts-'))
try {
  before = load()
  const fresh = await start(PARTITIONS, dataDir)
  let restartSeconds: number
  let spread: RunSummary
  try {
    lines.push(`start on an empty data dir (--partitions ${PARTITIONS}): ${fresh.seconds.toFixed(2)} s to listening, ${rss(fresh.broker.pid)}`)
    process.stderr.write(`${PARTITIONS} partitions: ${MESSAGES} plain puts round-robin\n`)
    spread = await puts(fresh.broker, MESSAGES)
    table.push(row(`${fmt(PARTITIONS)} partitions, round-robin (first puts create them)`, spread, before))
    lines.push(`after the puts and the read-back over ${fmt(PARTITIONS)} partitions: ${rss(fresh.broker.pid)}`)
  } finally {
    await fresh.broker.stop()
  }
  // 3. restart on the same data dir
  before = load()
  const again = await start(PARTITIONS, dataDir)
  try {
    restartSeconds = again.seconds
    lines.push(
      `restart (same data dir, ${fmt(PARTITIONS)} partitions of ${fmt(Math.floor(MESSAGES / PARTITIONS))}+ messages): ${again.seconds.toFixed(2)} s spawn → listening (load ${before}), ${rss(again.broker.pid)}`,
    )
    // 4. one round over the recovered partitions
    before = load()
    const round = await puts(again.broker, PARTITIONS * 10)
    table.push(row(`${fmt(PARTITIONS)} partitions after the restart`, round, before))
    lines.push(`after the restart and ${fmt(PARTITIONS * 10)} more puts over every partition: ${rss(again.broker.pid)}`)
  } finally {
    await again.broker.stop()
  }
  const ratio = spread.msgsPerSec / one.msgsPerSec
  process.stdout.write(
    [
      '',
      `plain put, 100 B, one connection, window 1000, threshold flush, node ${process.version}`,
      '',
      '| Topic | Puts | msg/s | broker µs/msg | read back, verified | load average before → after |',
      '|---|---:|---:|---:|---|---|',
      ...table,
      '',
      ...lines.map((l) => `- ${l}`),
      `- ${fmt(PARTITIONS)} partitions / 1 partition: ${(ratio * 100).toFixed(1)} % (target ≥ 80 %: ${ratio >= 0.8 ? 'met' : 'not met'}); restart ${restartSeconds.toFixed(2)} s (target ≤ 5 s: ${restartSeconds <= 5 ? 'met' : 'not met'})`,
      '',
    ].join('\n'),
  )
} finally {
  await rm(dataDir, {recursive: true, force: true})
}
