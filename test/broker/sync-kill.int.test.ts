/**
 * Synchronous replication under `kill -9` of the master, the suite's short form of the soak
 * (sync-kill-cycles.ts; `npm run soak:sync-kill` is the long one): 20 cycles per flush mode,
 * 40 in all, the kill 0.1–0.6 s into the load of plain puts and put-batches (up to 200 in
 * flight). After every restart each partition accepts puts within 15 s, and no acknowledged
 * message is lost: both logs hold them all and are byte-identical.
 */
import {describe, it} from 'node:test'
import {runKillCycles} from './sync-kill-cycles.js'

const short = {cycles: 20, killAfterMs: [100, 600] as [number, number], minAckedPerCycle: 20}

describe('sync replication under kill -9 of the master (short form)', () => {
  it('threshold flush: every partition takes puts again within 15 s of each restart, and no acknowledged message is lost', async (t) => {
    await runKillCycles(t, {...short, flushArgs: []})
  })

  it('group commit: every partition takes puts again within 15 s of each restart, and no acknowledged message is lost', async (t) => {
    await runKillCycles(t, {...short, flushArgs: ['--group-commit']})
  })
})
