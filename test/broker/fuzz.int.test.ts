/**
 * The protocol fuzz, in CI size: tens of thousands of mutated MetaQ commands (every request
 * kind, test/helpers/fuzz.ts) from a few connections at a `meta serve` child, seeded so a
 * failure reproduces (FUZZ_SEED=<seed> to replay one; `npm run fuzz` runs the long form).
 * Checks: the broker never exits, every connection the fuzzer half-closes is answered or
 * closed (no hang), a control put and get on a fresh connection still work, its RSS stays
 * bounded, and its log stays small (rate-limited warnings).
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {describe, it} from 'node:test'
import {tmpDir, withDeadline} from '../helpers/index.js'
import {fuzzBroker} from '../helpers/fuzz.js'
import {controlPutGet} from '../helpers/fuzz-control.js'
import {spawnBroker} from '../helpers/process.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20)
const COMMANDS = 100_000
const TIME_MS = 30_000
/** Generous next to the ~60 MB a fresh broker holds, far below the ~600 MB a fuzz run once reached. */
const RSS_BOUND_MB = 300
/** Lines the broker may log in one run (lifecycle, group and admin lines, limited warnings). */
const LOG_LINES_BOUND = 500

const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024

describe('protocol fuzz', () => {
  it(`survives ${COMMANDS} mutated commands (seed ${SEED}) and still serves a put and a get`, async (t) => {
    const proc = await spawnBroker(t, ['--data-dir', await tmpDir(t)])
    const pid = proc.child.pid!
    let maxRss = rssMb(pid)
    const result = await withDeadline(
      fuzzBroker({
        port: proc.port,
        seed: SEED,
        commands: COMMANDS,
        connections: 4,
        timeMs: TIME_MS,
        topics: ['fz-a', 'fz-b', 'fz-c'],
        onProgress: () => {
          assert.equal(proc.child.exitCode, null, `the broker exited during the fuzz (seed ${SEED}): ${proc.stderr().slice(-2000)}`)
          maxRss = Math.max(maxRss, rssMb(pid))
        },
      }),
      TIME_MS + 60_000,
      `the fuzzer to finish (seed ${SEED}): the broker stopped reading`,
    )
    t.diagnostic(
      `seed ${SEED}: ${result.sent} frames sent, ${result.answered} answered to the end, ${result.connectionsOpened} connections, ${result.stalls} stalled, ${(result.elapsedMs / 1000).toFixed(1)} s, broker RSS max ${maxRss.toFixed(0)} MB`,
    )
    for (const burst of result.stalledBursts) t.diagnostic(`stalled after: ${JSON.stringify(burst.slice(0, 2000))}`)
    assert.ok(result.answered >= 1000, `only ${result.answered} of ${result.sent} frames answered (seed ${SEED})`)
    assert.equal(result.stalls, 0, `${result.stalls} connections neither answered nor closed by the broker after the fuzzer half-closed them (seed ${SEED})`)
    assert.equal(await controlPutGet(proc.port, `fuzz-control-${SEED}`), 'ok', `seed ${SEED}`)
    assert.equal(proc.child.exitCode, null, `the broker exited (seed ${SEED}): ${proc.stderr().slice(-2000)}`)
    maxRss = Math.max(maxRss, rssMb(pid))
    assert.ok(maxRss < RSS_BOUND_MB, `broker RSS reached ${maxRss.toFixed(0)} MB (seed ${SEED})`)
    const lines = proc.stderr().split('\n').length
    assert.ok(lines < LOG_LINES_BOUND, `${lines} log lines for ${result.sent} frames (seed ${SEED})`)
  })
})
