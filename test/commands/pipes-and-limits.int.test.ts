/**
 * `meta` in shell pipelines and with out-of-range durations, through the built CLI: a reader
 * that leaves early (`| head -1`) is a normal end (exit 0 under `set -o pipefail`, nothing more
 * said on stderr), and a duration outside its floor and ceiling is a usage error rather than a
 * busy loop. The pipelines run in bash; every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'
import {BIN, collect, runCli, type CliResult} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'

const DEADLINE_MS = 30_000

/** `bash -c 'set -o pipefail; <pipeline>'` where $META runs the built CLI. */
function pipeline(script: string): Promise<CliResult> {
  const child = spawn('bash', ['-c', `set -o pipefail; ${script}`], {
    env: {...process.env, NO_COLOR: '1', META: `${process.execPath} ${BIN}`},
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return collect(child, DEADLINE_MS)
}

describe('meta in a pipeline whose reader leaves early', () => {
  for (const args of ['help', '--help', 'tail --help', 'stats --help']) {
    it(`meta ${args} | head -1 exits 0`, async () => {
      const r = await pipeline(`$META ${args} | head -1`)
      assert.equal(r.code, 0, `exit status ${r.code}: ${r.stderr}`)
      assert.equal(r.stdout.split('\n').length, 2, r.stdout)
      assert.equal(r.stderr, '')
    })
  }

  it('meta tail -e | head -1: exit 0, and no "Reached end" once the reader has gone', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('piped')
    const payload = 'x'.repeat(200)
    await produce(
      broker,
      topic,
      Array.from({length: 3000}, () => ({payload})),
    )
    const r = await pipeline(`$META tail -t ${topic} -e -b ${address(broker)} | head -1`)
    assert.equal(r.code, 0, `exit status ${r.code}: ${r.stderr}`)
    assert.equal(r.stdout, `${payload}\n`)
    assert.doesNotMatch(r.stderr, /Reached end/)
  })
})

describe('duration flags have a floor and a ceiling', () => {
  it('meta stats --watch 0s, 0 and 2h are refused (exit 2), naming the range', async () => {
    for (const value of ['0s', '0', '50ms', '2h']) {
      const r = await runCli(['stats', '--watch', value, '-b', '127.0.0.1:1'], {timeoutMs: DEADLINE_MS})
      assert.equal(r.code, 2, `--watch ${value}: ${r.stderr}`)
      assert.equal(r.stdout, '')
      assert.match(r.stderr, new RegExp(`^error \\[USAGE\\]: invalid --watch "${value}": expected a duration from 100ms to 1h\\n`))
    }
  })

  it('meta tail --timeout 0s and send --ack-timeout 1ms are refused (exit 2)', async () => {
    const tail = await runCli(['tail', '-t', 'x', '--timeout', '0s', '-b', '127.0.0.1:1'], {timeoutMs: DEADLINE_MS})
    assert.equal(tail.code, 2, tail.stderr)
    assert.match(tail.stderr, /invalid --timeout "0s": expected a duration from 10ms to 7d/)
    const send = await runCli(['send', '-t', 'x', '--ack-timeout', '1ms', '-b', '127.0.0.1:1'], {input: 'hi\n', timeoutMs: DEADLINE_MS})
    assert.equal(send.code, 2, send.stderr)
    assert.match(send.stderr, /invalid --ack-timeout "1ms": expected a duration from 100ms to 10m/)
  })
})
