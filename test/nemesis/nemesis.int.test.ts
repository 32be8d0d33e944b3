/**
 * A short nemesis run (bench/nemesis/run.ts) as part of the tests: the cluster of two broker
 * ids (each a master, a sync slave and an async slave) on a 3-node ZooKeeper ensemble, under
 * load, while faults are applied at random for 45 s; the checker must find no acknowledged
 * message lost, no split brain and no offset delivered as two different messages. The seed
 * is printed (and META_TEST_SEED replays it).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {randomInt} from 'node:crypto'
import {runNemesis, parseDuration} from '../../bench/nemesis/run.js'
import {summary} from '../../bench/nemesis/checker.js'
import {tmpDir} from '../helpers/index.js'

describe('the nemesis, briefly', () => {
  it('loses no acknowledged message and sees no split brain under 45 s of random faults', async (t) => {
    const seed = process.env.META_TEST_SEED === undefined ? randomInt(2 ** 31) : Number(process.env.META_TEST_SEED)
    const dir = await tmpDir(t, 'meta-nemesis-test-')
    const lines: string[] = []
    const report = await runNemesis({durationMs: 45_000, seed, historyFile: join(dir, 'history.jsonl'), log: (line) => lines.push(line)})
    const text = `seed ${seed} (META_TEST_SEED=${seed} replays it)\n${lines.join('\n')}\n${summary(report)}`
    t.diagnostic(text)
    assert.ok(report.puts.acknowledged > 100, `the load ran: ${text}`)
    assert.ok(report.counts.lost === 0 && report.counts.splitBrain === 0 && report.counts.divergent === 0, text)
  })

  it('takes --duration only from 10s to 2h', () => {
    assert.equal(parseDuration('90s'), 90_000)
    assert.equal(parseDuration('5m'), 300_000)
    assert.throws(() => parseDuration('1s'), /--duration "1s": expected a duration from 10s to 2h/)
    assert.throws(() => parseDuration('3h'), /expected a duration from 10s to 2h/)
    assert.throws(() => parseDuration('soon'), /--duration "soon"/)
  })
})
