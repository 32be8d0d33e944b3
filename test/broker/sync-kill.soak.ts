/**
 * The long form of the kill -9 fault test of synchronous replication (sync-kill-cycles.ts):
 * `npm run soak:sync-kill`, 10 cycles per flush mode with the kill 0.3–1.5 s into the load
 * (`META_SYNC_KILL_CYCLES=40` for more). The suite runs a short form (sync-kill.int.test.ts).
 */
import {describe, it} from 'node:test'
import {runKillCycles} from './sync-kill-cycles.js'

const cycles = Number(process.env.META_SYNC_KILL_CYCLES ?? 10)
const long = {cycles, killAfterMs: [300, 1500] as [number, number], minAckedPerCycle: 100}

describe('sync replication under kill -9 of the master', () => {
  it('threshold flush: every partition takes puts again within 15 s of each restart, and no acknowledged message is lost', async (t) => {
    await runKillCycles(t, {...long, flushArgs: []})
  })

  it('group commit: every partition takes puts again within 15 s of each restart, and no acknowledged message is lost', async (t) => {
    await runKillCycles(t, {...long, flushArgs: ['--group-commit']})
  })
})
