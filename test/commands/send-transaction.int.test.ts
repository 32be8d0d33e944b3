/**
 * `meta send --transaction`: a whole input committed as one transaction; a failing input
 * (a record the broker cannot take) rolled back so that nothing of it is stored;
 * --transaction-size committing every N messages.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {collect, runCli, spawnCli} from '../helpers/process.js'
import {address, readAll} from '../cli/support.js'

describe('meta send --transaction', () => {
  it('commits seq 1 100000 as one transaction; a failing input afterwards leaves no trace', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2, maxTransferBytes: 4096})
    const topic = uniqueName('tx')
    const lines = Array.from({length: 100_000}, (_, i) => String(i + 1))
    const ok = await runCli(['send', '-t', topic, '-b', address(broker), '--transaction'], {input: `${lines.join('\n')}\n`, timeoutMs: 120_000})
    assert.equal(ok.code, 0, ok.stderr)
    assert.match(ok.stderr, /^sent 100,000 messages .*; committed in 1 transaction to partitions 0 \(50,000\), 1 \(50,000\)\n$/)
    const stored = await readAll(broker, topic)
    assert.equal(stored.length, 100_000)
    assert.deepEqual(new Set(stored.map((m) => m.data.toString())).size, 100_000)

    // Line 3 is larger than the broker takes: the whole input is rolled back.
    const failing = `a\nb\n${'x'.repeat(5000)}\nc\n`
    const bad = await runCli(['send', '-t', topic, '-b', address(broker), '-T', '--json'], {input: failing, timeoutMs: 60_000})
    assert.equal(bad.code, 1, bad.stderr)
    const summary = JSON.parse(bad.stdout) as {sent: number; skipped: number; transactions: {committed: number; rolledBack: number; rolledBackMessages: number}}
    assert.equal(summary.sent, 0)
    assert.equal(summary.skipped, 1)
    assert.deepEqual(summary.transactions, {committed: 0, rolledBack: 1, rolledBackMessages: 3})
    assert.equal((await readAll(broker, topic)).length, 100_000, 'nothing of the failing input is stored')
  })

  it('--transaction-size commits every N messages', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('txsize')
    const input = `${Array.from({length: 100}, (_, i) => `m${i}`).join('\n')}\n`
    const result = await runCli(['send', '-t', topic, '-b', address(broker), '-T', '--transaction-size', '30'], {input, timeoutMs: 60_000})
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stderr, /committed in 4 transactions to partition 0 \(100\)\n$/)
    const json = await runCli(['send', '-t', topic, '-b', address(broker), '-T', '--json'], {input: 'x1\nx2\n', timeoutMs: 60_000})
    const offsets = JSON.parse(json.stdout) as {partitions: Record<string, {first: number; last: number; count: number}>}
    // 10 records of 22 bytes (m0..m9) and 90 of 23 before: the batch starts at 2290.
    assert.deepEqual(offsets.partitions, {'0': {first: 2290, last: 2312, count: 2}})
    assert.deepEqual(
      (await readAll(broker, topic)).map((m) => m.data.toString()),
      [...input.trim().split('\n'), 'x1', 'x2'],
    )
    const usage = await runCli(['send', '-t', topic, '-b', address(broker), '--transaction-size', '30'], {input: 'x\n'})
    assert.equal(usage.code, 2, 'transaction-size needs --transaction')
  })

  it('Ctrl-C rolls the transaction back: nothing of the input is stored, exit 130', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('txint')
    const child = spawnCli(['send', '-t', topic, '-b', address(broker), '-T'])
    const done = collect(child, 30_000)
    child.stdin!.write(Array.from({length: 100}, (_, i) => `m${i}\n`).join(''))
    // The broker has taken every put into the transaction (nothing is visible yet).
    await waitFor(() => broker.stats.counters.cmdPut >= 100, {what: '100 transactional puts on the broker', timeoutMs: 30_000})
    child.kill('SIGINT')
    const result = await done
    child.stdin!.destroy()
    assert.equal(result.code, 130, result.stderr)
    assert.match(result.stderr, /^interrupted: sent 0 messages .*rolled back 1 transaction \(100 messages acknowledged into it not stored\)$/m)
    assert.equal((await readAll(broker, topic)).length, 0)
    assert.equal(broker.stats.counters.txRollback, 1)
  })
})
