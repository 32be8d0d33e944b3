/**
 * `meta bench produce|consume|e2e --embedded` end to end with tiny counts: each starts its
 * own broker child process, runs, stops it, and prints a summary whose JSON shape is
 * checked here. No timing assertions (speed is measured by `npm run bench`).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {runCli} from '../helpers/process.js'

const SUMMARY_KEYS = [
  'mode',
  'broker',
  'embedded',
  'flush',
  'topic',
  'messageBytes',
  'partitions',
  'connections',
  'maxInFlight',
  'rate',
  'messages',
  'failed',
  'unacknowledged',
  'bytes',
  'elapsedMs',
  'msgsPerSec',
  'mbPerSec',
  'latency',
  'cpu',
  'put',
  'verify',
].sort()
const LATENCY_KEYS = ['kind', 'p50', 'p95', 'p99', 'p999', 'max', 'mean', 'count'].sort()

async function bench(args: string[], timeoutMs = 60_000) {
  const r = await runCli(['bench', ...args, '--embedded', '--json', '--quiet'], {timeoutMs})
  assert.equal(r.code, 0, r.stderr)
  const summary = JSON.parse(r.stdout)
  assert.deepEqual(Object.keys(summary).sort(), SUMMARY_KEYS)
  assert.equal(summary.embedded, true)
  assert.match(summary.broker, /^127\.0\.0\.1:\d+$/)
  assert.equal(typeof summary.elapsedMs, 'number')
  assert.equal(typeof summary.msgsPerSec, 'number')
  assert.equal(typeof summary.cpu.clientUsPerMsg, 'number')
  assert.equal(typeof summary.cpu.brokerUsPerMsg, 'number')
  return summary
}

describe('meta bench', () => {
  it('meta bench produce --embedded reports messages, throughput and ack latency', async () => {
    const s = await bench(['produce', '--count', '500', '--size', '64', '--partitions', '2', '--connections', '2', '--flush', 'group-commit'])
    assert.equal(s.mode, 'produce')
    assert.equal(s.flush, 'group-commit')
    assert.equal(s.partitions, 2)
    assert.equal(s.connections, 2)
    assert.equal(s.messages, 500)
    assert.equal(s.failed, 0)
    assert.equal(s.bytes, 500 * 64)
    assert.deepEqual(Object.keys(s.latency).sort(), LATENCY_KEYS)
    assert.equal(s.latency.kind, 'ack')
    assert.equal(s.latency.count, 500)
    assert.equal(s.put, 'batch')
    assert.equal(s.verify, null)
    assert.ok(s.latency.p50 <= s.latency.p99 && s.latency.p99 <= s.latency.max)
  })

  it('meta bench produce --plain-put --verify reads every acknowledged message back and checks it', async () => {
    const s = await bench(['produce', '--plain-put', '--verify', '--max-in-flight', '1000', '--count', '3000', '--size', '100'])
    assert.equal(s.put, 'plain')
    assert.equal(s.maxInFlight, 1000)
    assert.equal(s.messages, 3000)
    assert.equal(s.failed, 0)
    assert.equal(s.verify.acknowledged, 3000)
    assert.equal(s.verify.messages, 3000, 'the warm-up message is not one of the run')
    assert.equal(typeof s.verify.msgsPerSec, 'number')
    assert.equal(typeof s.verify.cpu.brokerUsPerMsg, 'number')
    const small = await runCli(['bench', 'produce', '--embedded', '--verify', '--size', '4', '--count', '10'])
    assert.notEqual(small.code, 0, small.stderr)
    assert.doesNotMatch(small.stderr, /embedded broker/, 'refused before a broker starts')
    assert.match(small.stderr, /--size 4 with --verify: expected at least 8 bytes/)
  })

  it('meta bench produce -s 1048000 bounds the bytes in flight: it ends after --duration and every put is acknowledged', async () => {
    // Before: a window of 4096 puts of 1 MB (4 GB in flight) ran for minutes past --duration and
    // reported every put as failed although the broker stored them. The deadline catches a hang.
    const s = await bench(['produce', '--size', '1048000', '--duration', '2s'], 90_000)
    assert.equal(s.maxInFlight, 64, '64 MiB of 1 MB messages')
    assert.ok(s.messages > 0)
    assert.equal(s.failed, 0)
    assert.equal(s.unacknowledged, 0)
    assert.equal(s.bytes, s.messages * 1048000)
  })

  it('meta bench consume --embedded fills an empty topic, then replays it', async () => {
    const s = await bench(['consume', '--count', '1000', '--size', '100'])
    assert.equal(s.mode, 'consume')
    assert.equal(s.flush, 'threshold')
    assert.equal(s.messages, 1000)
    assert.equal(s.bytes, 100_000)
    assert.equal(s.latency, null)
  })

  it('meta bench e2e --embedded measures end-to-end latency at a rate', async () => {
    const s = await bench(['e2e', '--count', '300', '--rate', '3000', '--warmup', '100ms'])
    assert.equal(s.mode, 'e2e')
    assert.equal(s.rate, 3000)
    assert.equal(s.messages, 300)
    assert.equal(s.failed, 0)
    assert.equal(s.latency.kind, 'end-to-end')
    assert.equal(s.latency.count, 300)
  })

  it('meta bench prints a human summary, and refuses --flush without --embedded', async () => {
    const r = await runCli(['bench', 'produce', '--embedded', '--count', '100', '--interval', '0'])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^produce: 100 messages of 100 B in [\d.]+ s {2}→ {2}[\d,]+ msg\/s {2}[\d.]+ MB\/s\n {2}ack latency: p50 /)
    const bad = await runCli(['bench', 'produce', '--flush', 'group-commit'])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--embedded/)
  })

  it('meta bench tx --embedded reports committed transactions per second for each size', async () => {
    const r = await runCli(['bench', 'tx', '--embedded', '--json', '--quiet', '--duration', '300ms', '--per-tx', '1,5'], {timeoutMs: 60_000})
    assert.equal(r.code, 0, r.stderr)
    const s = JSON.parse(r.stdout) as {
      embedded: boolean
      runs: Array<{messagesPerTx: number; transactions: number; msgsPerSec: number; failed: number; latency: {p50: number}}>
    }
    assert.equal(s.embedded, true)
    assert.deepEqual(
      s.runs.map((run) => run.messagesPerTx),
      [1, 5],
    )
    for (const run of s.runs) {
      assert.ok(run.transactions > 0, 'transactions were committed')
      assert.equal(run.failed, 0)
      assert.equal(typeof run.latency.p50, 'number')
    }
  })
})
