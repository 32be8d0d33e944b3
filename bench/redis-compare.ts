/**
 * The headline ratios against Redis, measured side by side in one run: meta's plain put (MetaQ's
 * 7-token put with checksum, one connection, window 1000, every message read back and
 * checked: `meta bench produce --embedded --plain-put --verify`) against Redis 7 `XADD` driven
 * by its own C client (`redis-benchmark`), with AOF `appendfsync everysec` (meta: threshold
 * flush) and `appendfsync always` (meta: group commit). Needs Debian's redis-server and
 * redis-tools (`apt-get install redis-server redis-tools`); each Redis runs on a free port in
 * a temp dir and is shut down afterwards.
 *
 *   node --import tsx bench/redis-compare.ts        (REDIS_COUNT=1000000, 100 B and 1 KiB)
 *   BROKER_NODE_OPTIONS=--initial-heap-size=64 …    (node options for meta's broker process only)
 *
 * redis-benchmark runs twice per mode (bench/redis-xadd.ts): one connection with 1000
 * pipelined requests (meta's shape) and 50 connections with 16 each (its usual best); the
 * better one is the reference.
 */
import {spawnSync} from 'node:child_process'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import {formatRuns, redisXadd} from './redis-xadd.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.REDIS_COUNT ?? 1_000_000)
/** Node options for the broker process (`meta bench --broker-node-options`), e.g. a heap flag. */
const BROKER_NODE_OPTIONS = process.env.BROKER_NODE_OPTIONS

function metaPlain(flush: 'threshold' | 'group-commit', size: number, count: number): {msgsPerSec: number; brokerUs: number | null; readBack: number} {
  const r = spawnSync(
    process.execPath,
    [
      BIN,
      'bench',
      'produce',
      '--embedded',
      '--plain-put',
      '--max-in-flight',
      '1000',
      '--verify',
      '--flush',
      flush,
      '--size',
      String(size),
      '--count',
      String(count),
      '--quiet',
      '--json',
      ...(BROKER_NODE_OPTIONS ? [`--broker-node-options=${BROKER_NODE_OPTIONS}`] : []),
    ],
    {encoding: 'utf8', env: {...process.env, NO_COLOR: '1'}},
  )
  if (r.status !== 0) throw new Error(`meta bench failed: ${r.stderr}`)
  const s = JSON.parse(r.stdout)
  return {msgsPerSec: s.msgsPerSec, brokerUs: s.cpu.brokerUsPerMsg, readBack: s.verify.msgsPerSec}
}

const rows: string[] = []
const loadAtStart = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ')
for (const size of [100, 1024]) {
  const count = size === 100 ? COUNT : Math.ceil(COUNT * 0.3)
  for (const [flush, fsync] of [
    ['threshold', 'everysec'],
    ['group-commit', 'always'],
  ] as const) {
    process.stderr.write(`${size} B: meta ${flush} vs redis ${fsync}\n`)
    const meta = metaPlain(flush, size, count)
    const redis = await redisXadd(fsync, size, count)
    rows.push(
      `| ${size} B | meta plain put, ${flush} / Redis XADD, AOF ${fsync} | ${meta.msgsPerSec.toLocaleString('en-US')} (${((meta.msgsPerSec * size) / 1e6).toFixed(0)} MB/s; broker ${meta.brokerUs?.toFixed(2) ?? '–'} µs/msg; read back ${meta.readBack.toLocaleString('en-US')}/s) | ${redis.best.msgsPerSec.toLocaleString('en-US')} (${formatRuns(redis)}) | ${(meta.msgsPerSec / redis.best.msgsPerSec).toFixed(2)}× |`,
    )
  }
}
process.stdout.write(
  [
    '',
    `| Size | Pair | meta msg/s | Redis msg/s (redis-benchmark) | meta / Redis |`,
    '|---|---|---|---|---:|',
    ...rows,
    '',
    `broker node options: ${BROKER_NODE_OPTIONS ?? '(none)'}; load average at start ${loadAtStart}, at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
    '',
  ].join('\n'),
)
