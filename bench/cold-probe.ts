/**
 * A fresh broker's cold start in CPU per put: one embedded broker, RUNS consecutive runs of
 * COUNT plain 100 B puts from the C generator, printing per run the broker's CPU µs per put
 * (user + system, and system alone) and its minor page faults. CPU, unlike msg/s, holds on a
 * loaded machine; /proc ticks are 10 ms, so keep COUNT × µs well above that.
 *   node --import tsx bench/cold-probe.ts                     (COUNT=200000 RUNS=5 ROUNDS=1)
 *   NODE_ARGS="--initial-old-space-size=64" …                 (node options of the broker)
 *   BUNDLES=/tmp/base-bundle,dist/bundle ROUNDS=3 …           (alternate two builds' bundles)
 *   WAIT_MS=3000 …                                            (idle time after listening)
 *   PERF_DIR=/tmp/p NODE_ARGS=--perf-basic-prof …             (`perf record` of each run)
 */
import {spawn} from 'node:child_process'
import {once} from 'node:events'
import {readFileSync} from 'node:fs'
import {loadavg} from 'node:os'
import {fileURLToPath} from 'node:url'
import {startEmbeddedBroker} from '../src/cli/bench/embedded.js'
import {runGenerator, writePipeline} from './c-put-generator.js'

/** Minor page faults of a process so far (/proc/<pid>/stat). */
const minflt = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7])
}
/** System CPU ms of a process so far. */
const sysMs = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]) * 10
}

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const COUNT = Number(process.env.COUNT ?? 200_000)
const RUNS = Number(process.env.RUNS ?? 5)
const ROUNDS = Number(process.env.ROUNDS ?? 1)
const BUNDLES = (process.env.BUNDLES ?? '').split(',').filter(Boolean)
const NODE_ARGS = (process.env.NODE_ARGS ?? '').split(' ').filter(Boolean)

for (let round = 0; round < ROUNDS; round++) {
  for (const bundle of BUNDLES.length > 0 ? BUNDLES : ['']) {
    if (bundle) process.env.META_BUNDLE_DIR = bundle
    else delete process.env.META_BUNDLE_DIR
    const pipeline = writePipeline(`cold-${process.pid}-${round}`, 100, 1000)
    const broker = await startEmbeddedBroker({self: [BIN], flush: 'threshold', nodeArgs: NODE_ARGS})
    if (process.env.WAIT_MS) await new Promise((r) => setTimeout(r, Number(process.env.WAIT_MS)))
    const start = broker.cpuMs()!
    const us: string[] = []
    const faults: number[] = []
    const sys: string[] = []
    let ms0 = 0
    try {
      for (let r = 0; r < RUNS; r++) {
        const before = broker.cpuMs()!
        const f0 = minflt(broker.pid)
        const s0 = sysMs(broker.pid)
        const perf = process.env.PERF_DIR
          ? spawn('perf', ['record', '-F', '1999', '-p', String(broker.pid), '-o', `${process.env.PERF_DIR}/run${r + 1}.data`], {stdio: 'ignore'})
          : undefined
        if (perf) await new Promise((ok) => setTimeout(ok, 300))
        const run = runGenerator(broker.address, pipeline, COUNT)
        if (perf) {
          perf.kill('SIGINT')
          await once(perf, 'exit')
        }
        const after = broker.cpuMs()!
        faults.push(minflt(broker.pid) - f0)
        sys.push((((sysMs(broker.pid) - s0) * 1000) / COUNT).toFixed(2))
        if (r === 0) ms0 = run.ms
        us.push((((after - before) * 1000) / COUNT).toFixed(2))
      }
    } finally {
      await broker.stop()
    }
    console.log(
      `${bundle || 'default'} | start cpu ${start.toFixed(0)} ms | µs/put ${us.join(' ')} | sys ${sys.join(' ')} | faults ${faults.join(' ')} | run1 ${Math.round((COUNT * 1000) / ms0)}/s | load ${loadavg()[0].toFixed(1)}`,
    )
  }
}
