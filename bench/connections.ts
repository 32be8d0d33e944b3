/**
 * Many clients: 200 producer connections together against one connection's peak
 * (target: ≥ 80 %). One embedded broker (a child `meta serve`, threshold flush, one
 * partition); the load generator is this process. Each run sends MetaQ's plain put (7 tokens,
 * checksum), window 1000 per connection, on a fresh topic, and then reads the topic back with
 * one consumer that checks every CRC and every payload byte (`--verify`'s read-back): every
 * acknowledged message must come back exactly once, intact, else the bench fails.
 *
 *   npm run bench:connections
 *   CONN_COUNT=1000000 CONN_MANY=200 CONN_REPEAT=1 node --import tsx bench/connections.ts
 *
 * Prints a markdown table (msg/s, CPU µs per message of client and broker) with the load
 * average before and after each run. CONN_PUT=batch uses meta's put-batch instead.
 */
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'
import type {RunSummary} from '../src/cli/bench/produce.js'
import {verifiedPuts} from './verified-puts.js'

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.CONN_COUNT ?? 1_000_000)
const MANY = Number(process.env.CONN_MANY ?? 200)
const REPEAT = Math.max(1, Number(process.env.CONN_REPEAT ?? 1))
const WINDOW = Number(process.env.CONN_WINDOW ?? 1000)
const PLAIN = process.env.CONN_PUT !== 'batch'

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')

async function once(connections: number, run: number): Promise<RunSummary & {load: string}> {
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold'})
  const before = load()
  try {
    const s = await verifiedPuts(broker, {
      topic: `conn-${connections}-${run}-${Date.now().toString(36)}`,
      count: COUNT,
      connections,
      maxInFlight: WINDOW,
      plainPut: PLAIN,
    })
    return {...s, load: `${before} → ${load()}`}
  } finally {
    await broker.stop()
  }
}

const rows: string[] = []
const best = new Map<number, number>()
for (let run = 1; run <= REPEAT; run++) {
  for (const connections of [1, MANY]) {
    process.stderr.write(`run ${run}: ${connections} connection(s), ${COUNT} messages\n`)
    const s = await once(connections, run)
    best.set(connections, Math.max(best.get(connections) ?? 0, s.msgsPerSec))
    rows.push(
      `| ${connections} | ${run} | ${s.msgsPerSec.toLocaleString('en-US')} | ${s.cpu.clientUsPerMsg.toFixed(2)} | ${s.cpu.brokerUsPerMsg?.toFixed(2) ?? '–'} | ${s.verify!.messages.toLocaleString('en-US')} at ${s.verify!.msgsPerSec.toLocaleString('en-US')}/s | ${s.load} |`,
    )
  }
}
const ratio = best.get(MANY)! / best.get(1)!
process.stdout.write(
  [
    '',
    `${PLAIN ? 'plain put' : 'put-batch'}, 100 B, ${COUNT.toLocaleString('en-US')} messages per run, window ${WINDOW} per connection, threshold flush, node ${process.version}`,
    '',
    '| Connections | Run | msg/s | client µs/msg | broker µs/msg | read back, verified | load average before → after |',
    '|---:|---:|---:|---:|---:|---|---|',
    ...rows,
    '',
    `${MANY} connections / 1 connection (best runs): ${(ratio * 100).toFixed(1)} % (target ≥ 80 %: ${ratio >= 0.8 ? 'met' : 'not met'})`,
    '',
  ].join('\n'),
)
