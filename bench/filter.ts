/**
 * Broker-side filters against client-side filtering: a topic of FILTER_MESSAGES JSON messages
 * (default 1,000,000) of which 1% have `"level":"error"`, read to the end by one consumer
 * (a) with the filter `level = 'error'` sent to the broker, (b) reading everything and
 * filtering here (JSON.parse of each body). For each: the time to read to the end, the bytes
 * the broker wrote (its /proc/<pid>/io wchar over the run: only replies to gets, nothing is
 * produced meanwhile) and the matches (both must find the same). FILTER_RUNS runs of each,
 * alternated, median printed.
 *
 *   npm run bench:filter
 *   FILTER_MESSAGES=100000 FILTER_RUNS=1 node --import tsx bench/filter.ts
 */
import {readFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'
import {createConsumer, createProducer} from '../src/client/index.js'

const MESSAGES = Number(process.env.FILTER_MESSAGES ?? 1_000_000)
const RUNS = Number(process.env.FILTER_RUNS ?? 3)
const TOPIC = 'filter-bench'
const EXPRESSION = "level = 'error'"
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))

function brokerWrittenBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'))
  return Number(line?.split(/\s+/)[1])
}

function body(i: number): string {
  return JSON.stringify({i, level: i % 100 === 0 ? 'error' : 'info', status: 200 + (i % 7), path: `/api/items/${i % 1000}`})
}

interface Run {
  mode: string
  seconds: number
  wireBytes: number
  matches: number
}

async function read(address: string, pid: number, brokerSide: boolean): Promise<Run> {
  const consumer = createConsumer({broker: address, topics: [TOPIC], stopAtEnd: true, ...(brokerSide ? {filter: EXPRESSION} : {})})
  const before = brokerWrittenBytes(pid)
  const started = performance.now()
  let matches = 0
  for await (const m of consumer) {
    if (brokerSide) matches++
    else if ((JSON.parse(m.data.toString('utf8')) as {level?: string}).level === 'error') matches++
  }
  const seconds = (performance.now() - started) / 1000
  return {mode: brokerSide ? 'broker-side filter' : 'client-side filter', seconds, wireBytes: brokerWrittenBytes(pid) - before, matches}
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function main(): Promise<void> {
  const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold', partitions: 1})
  try {
    const producer = createProducer({broker: broker.address})
    const CHUNK = 10_000
    for (let start = 0; start < MESSAGES; start += CHUNK) {
      const sends = []
      for (let i = start; i < Math.min(MESSAGES, start + CHUNK); i++) sends.push(producer.send(TOPIC, body(i), {partition: 0}))
      for (const r of await Promise.all(sends)) if (!r.success) throw new Error(r.errorMessage)
    }
    await producer.close()
    console.log(
      `${MESSAGES} messages (${Buffer.byteLength(body(1))} bytes of JSON each), 1% matching ${JSON.stringify(EXPRESSION)}; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    )
    const runs: Run[] = []
    for (let r = 0; r < RUNS; r++) {
      for (const brokerSide of [true, false]) {
        const run = await read(broker.address, broker.pid, brokerSide)
        console.log(`  run ${r + 1} ${run.mode}: ${run.seconds.toFixed(2)} s, ${(run.wireBytes / 1e6).toFixed(1)} MB from the broker, ${run.matches} matches`)
        runs.push(run)
      }
    }
    const expected = Math.ceil(MESSAGES / 100)
    for (const mode of ['broker-side filter', 'client-side filter']) {
      const mine = runs.filter((r) => r.mode === mode)
      if (mine.some((r) => r.matches !== expected)) throw new Error(`${mode}: expected ${expected} matches, got ${mine.map((r) => r.matches).join(', ')}`)
      console.log(
        `${mode}: median ${median(mine.map((r) => r.seconds)).toFixed(2)} s, ${(median(mine.map((r) => r.wireBytes)) / 1e6).toFixed(1)} MB on the wire (${RUNS} runs)`,
      )
    }
    console.log(
      `load after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    )
  } finally {
    await broker.stop()
  }
}

await main()
