/**
 * Streaming commands end when their reader goes away, also when nothing more is to be written
 * (as GNU `tail -f | head -1` does): `meta tail` following (plain, --group, a topic pattern) and
 * `meta stats --watch` under `| head -1` in bash (stdout a pipe), and `meta tail` whose stdout is a
 * socket the parent closes (node's spawn). No message arrives after the first one, so only the
 * watch on stdout can end them; each must exit 0 with nothing on stderr but status lines, within
 * a generous deadline. The time from the reader leaving to the exit is reported (diagnostic).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {startTestBroker} from '../helpers/broker.js'
import {scaledMs, uniqueName} from '../helpers/index.js'
import {BIN, spawnCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'

/** Far beyond the watch's latency; a tail that waits for the next message never makes it. */
const EXIT_DEADLINE_MS = scaledMs(10_000)

interface PipeRun {
  code: number | null
  stdout: string
  stderr: string
  /** From the reader's line arriving (head printed it and exits) to the pipeline's end. */
  exitAfterReaderMs: number
}

/** `bash -c 'set -o pipefail; $META <args> | head -1'`: killed (and failed) at the deadline. */
function pipeToHead(args: string): Promise<PipeRun> {
  const child = spawn('bash', ['-c', `set -o pipefail; $META ${args} | head -1`], {
    env: {...process.env, NO_COLOR: '1', OCLIF_SKIP_NEW_VERSION_CHECK: 'true', META: `${process.execPath} ${BIN}`},
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let stdout = ''
  let stderr = ''
  let lineAt: number | undefined
  let timer: NodeJS.Timeout | undefined
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    if (lineAt === undefined && stdout.includes('\n')) {
      lineAt = performance.now()
      timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), EXIT_DEADLINE_MS)
    }
  })
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const startDeadline = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), scaledMs(60_000))
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(startDeadline)
      clearTimeout(timer)
      resolve({code, stdout, stderr, exitAfterReaderMs: lineAt === undefined ? Number.NaN : performance.now() - lineAt})
    })
  })
}

function assertEndedCleanly(r: PipeRun, expected: string): void {
  assert.equal(r.code, 0, `exit status ${r.code} (killed at the deadline if null): ${r.stderr}`)
  assert.equal(r.stdout, expected)
  assert.doesNotMatch(r.stderr, /Error|\n\s+at /)
  assert.ok(r.exitAfterReaderMs < EXIT_DEADLINE_MS, `exited ${r.exitAfterReaderMs} ms after the reader left`)
}

describe('streaming commands exit when their reader leaves, with nothing more to write', () => {
  it('meta tail -t T (following) | head -1', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('gone')
    await produce(broker, topic, [{payload: 'first'}])
    const r = await pipeToHead(`tail -t ${topic} -b ${address(broker)}`)
    assertEndedCleanly(r, 'first\n')
    t.diagnostic(`exit ${r.exitAfterReaderMs.toFixed(0)} ms after head left`)
  })

  it('meta tail --group G | head -1', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('gone')
    await produce(broker, topic, [{payload: 'first'}])
    const r = await pipeToHead(`tail -t ${topic} --group ${uniqueName('g')} -o beginning -b ${address(broker)}`)
    assertEndedCleanly(r, 'first\n')
    assert.doesNotMatch(r.stderr, /Reached end/)
    t.diagnostic(`exit ${r.exitAfterReaderMs.toFixed(0)} ms after head left`)
  })

  it("meta tail -t 'prefix-*' (a pattern, following) | head -1", async (t) => {
    const broker = await startTestBroker(t)
    const prefix = uniqueName('pat')
    await produce(broker, `${prefix}-a`, [{payload: 'first'}])
    const r = await pipeToHead(`tail -t '${prefix}-*' -b ${address(broker)}`)
    assertEndedCleanly(r, 'first\n')
    t.diagnostic(`exit ${r.exitAfterReaderMs.toFixed(0)} ms after head left`)
  })

  it('meta stats --watch 1h | head -1', async (t) => {
    const broker = await startTestBroker(t)
    const r = await pipeToHead(`stats --watch 1h -b ${address(broker)}`)
    assert.equal(r.code, 0, `exit status ${r.code} (killed at the deadline if null): ${r.stderr}`)
    assert.match(r.stdout, /^--- Every 3600s: meta stats/)
    assert.equal(r.stderr, '')
    t.diagnostic(`exit ${r.exitAfterReaderMs.toFixed(0)} ms after head left`)
  })

  it('meta tail with stdout a socket whose reader closes it', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('gone')
    await produce(broker, topic, [{payload: 'first'}])
    const child = spawnCli(['tail', '-t', topic, '-b', address(broker)])
    t.after(() => child.kill('SIGKILL'))
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()))
    const leftAt = performance.now()
    child.stdout!.destroy()
    const exit = await new Promise<{code: number | null; ms: number}>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no exit ${EXIT_DEADLINE_MS} ms after the reader left: ${stderr}`)), EXIT_DEADLINE_MS)
      child.on('exit', (code) => {
        clearTimeout(timer)
        resolve({code, ms: performance.now() - leftAt})
      })
    })
    assert.equal(exit.code, 0, stderr)
    assert.doesNotMatch(stderr, /Error|\n\s+at /)
    t.diagnostic(`exit ${exit.ms.toFixed(0)} ms after the reader closed the socket`)
  })
})
