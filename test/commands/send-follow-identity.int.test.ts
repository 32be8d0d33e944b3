/**
 * `meta send --follow` knows a file by its inode and its content: spawned `meta send`
 * processes against a real in-process broker (one partition: the topic's order is the order
 * of sending), while the test rotates, truncates and rewrites files as logrotate, a shell or
 * an editor would — with `meta send` running (and a poll interval long enough that a truncate
 * and the next write land between two polls) and while it is stopped.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type {ChildProcess} from 'node:child_process'
import {appendFileSync, copyFileSync, mkdirSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {collect, spawnCli, type CliResult} from '../helpers/process.js'
import {address, readAll} from '../cli/support.js'

interface Follower {
  child: ChildProcess
  done: Promise<CliResult>
  stderr(): string
}

/** `meta send -t topic --follow … args` with the state directory `state`. */
function follow(t: Cleanup, broker: Broker, topic: string, state: string, args: string[]): Follower {
  const child = spawnCli(['send', '-t', topic, '-b', address(broker), '--follow', ...args], {META_STATE_DIR: state})
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = collect(child, 180_000)
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {child, done, stderr: () => stderr}
}

async function stop(follower: Follower): Promise<CliResult> {
  follower.child.kill('SIGTERM')
  const result = await follower.done
  assert.equal(result.code, 0, result.stderr)
  return result
}

async function payloads(broker: Broker, topic: string): Promise<string[]> {
  return (await readAll(broker, topic)).map((m) => m.data.toString())
}

/** Poll the topic until it holds `n` messages (or more); returns them. */
async function stored(broker: Broker, topic: string, n: number, what: string): Promise<string[]> {
  let last: string[] = []
  await waitFor(
    async () => {
      last = await payloads(broker, topic)
      return last.length >= n
    },
    {timeoutMs: 60_000, what: `${what} (${n} messages)`},
  )
  return last
}

function lines(from: number, to: number, prefix = 'line-'): string {
  let text = ''
  for (let i = from; i <= to; i++) text += `${prefix}${i}\n`
  return text
}

function range(from: number, to: number, prefix = 'line-'): string[] {
  return Array.from({length: to - from + 1}, (_, i) => `${prefix}${from + i}`)
}

const registryOf = (state: string, topic: string) => join(state, 'registry', `${topic}.json`)

describe('meta send --follow: files known by inode and content', () => {
  it("a rename rotation while meta send is stopped, with a '*.log' glob: the old file is read to its end, then the new one; each line once", async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, '')
    const topic = uniqueName('rotstop')
    // A logger writing 5 lines every 5 ms (about 1000 lines/s) the whole time.
    let next = 1
    const pacer = setInterval(() => {
      appendFileSync(log, lines(next, next + 4))
      next += 5
    }, 5)
    t.after(() => clearInterval(pacer))
    const first = follow(t, broker, topic, state, ['--from-beginning', join(dir, '*.log')])
    await stored(broker, topic, 300, 'lines sent by the first run')
    await stop(first)
    const stoppedAt = next
    await waitFor(() => next > stoppedAt + 300, {what: 'lines written to app.log while meta send is stopped'})
    // logrotate's create: app.log → app.log.1 (no longer matched by the glob), a new app.log.
    clearInterval(pacer)
    renameSync(log, `${log}.1`)
    const rotatedLast = next - 1
    writeFileSync(log, '')
    const again = setInterval(() => {
      appendFileSync(log, lines(next, next + 4))
      next += 5
    }, 5)
    t.after(() => clearInterval(again))
    const second = follow(t, broker, topic, state, [join(dir, '*.log')])
    await waitFor(() => next > rotatedLast + 300, {what: 'lines written to the new app.log'})
    clearInterval(again)
    const total = next - 1
    const got = await stored(broker, topic, total, `every line, line-${total} the last`)
    const result = await stop(second)
    assert.match(result.stderr, new RegExp(`^% "${log}" was renamed to "${log}.1" while meta send was stopped: reading it to its end first$`, 'm'))
    assert.deepEqual(got, range(1, total), 'each line once, the rotated file first')
  })

  it('truncated and written again between two polls (a long --follow-interval): the new line is sent whole, never its end alone', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'x.log')
    writeFileSync(log, 'pre\n')
    const topic = uniqueName('regrow')
    const follower = follow(t, broker, topic, state, ['--from-beginning', '--follow-interval', '3s', log])
    await stored(broker, topic, 1, 'pre')
    appendFileSync(log, 'after1\n')
    await stored(broker, topic, 2, 'after1')
    // `: > x.log; echo after-truncate >> x.log`: larger than what was read, in one interval.
    truncateSync(log, 0)
    appendFileSync(log, 'after-truncate\n')
    assert.deepEqual(await stored(broker, topic, 3, 'after-truncate'), ['pre', 'after1', 'after-truncate'])
    // Truncated and written again to exactly the size that was read: noticed by the content too.
    truncateSync(log, 0)
    appendFileSync(log, 'same-size-line\n')
    assert.equal(statSync(log).size, 'after-truncate\n'.length)
    assert.deepEqual(await stored(broker, topic, 4, 'same-size-line'), ['pre', 'after1', 'after-truncate', 'same-size-line'])
    const result = await stop(follower)
    assert.equal(result.stderr.split(`% "${log}" was truncated: reading it from its start\n`).length, 3, result.stderr)
    assert.deepEqual(await payloads(broker, topic), ['pre', 'after1', 'after-truncate', 'same-size-line'])
  })

  it('copytruncate with a long --follow-interval: the lines written after the truncation, more than were read before, are sent whole, each once', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, lines(1, 20))
    const topic = uniqueName('copytrunc')
    const follower = follow(t, broker, topic, state, ['--from-beginning', '--follow-interval', '3s', join(dir, '*.log')])
    await stored(broker, topic, 20, 'the first lines')
    appendFileSync(log, lines(21, 25))
    // logrotate copytruncate: copy to app.log.1 (not matched), truncate, and the logger goes on at
    // once, all within one of the follower's passes: it is held still meanwhile (a file watch
    // could otherwise wake it between two of these steps, a case of its own).
    follower.child.kill('SIGSTOP')
    copyFileSync(log, `${log}.1`)
    truncateSync(log, 0)
    appendFileSync(log, lines(26, 100, 'after-'))
    follower.child.kill('SIGCONT')
    await waitFor(async () => (await payloads(broker, topic)).includes('after-100'), {timeoutMs: 60_000, what: 'after-100, the last line after the truncation'})
    await stop(follower)
    const got = await payloads(broker, topic)
    assert.deepEqual(got.slice(0, 20), range(1, 20))
    assert.deepEqual(got.slice(-75), range(26, 100, 'after-'), 'every line after the truncation, whole')
    // 21..25 were written just before the copy: read before the truncation, or gone with it (in app.log.1, not followed).
    assert.deepEqual(got.slice(20, -75), range(21, 20 + got.length - 95))
  })

  it('while stopped: a file rewritten in place (same inode, bigger) and one truncated and grown past the saved position are read from their start', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const rewritten = join(dir, 'rewritten.log')
    const regrown = join(dir, 'regrown.log')
    writeFileSync(rewritten, lines(1, 10, 'a-'))
    writeFileSync(regrown, lines(1, 10, 'b-'))
    const topic = uniqueName('whilestopped')
    const first = follow(t, broker, topic, state, ['--from-beginning', rewritten, regrown])
    await stored(broker, topic, 20, 'both files')
    await stop(first)
    const inode = statSync(rewritten).ino
    writeFileSync(rewritten, lines(1, 30, 'new-a-')) // an editor's save, or a new file given the freed inode
    assert.equal(statSync(rewritten).ino, inode)
    truncateSync(regrown, 0)
    appendFileSync(regrown, lines(1, 40, 'new-b-'))
    const second = follow(t, broker, topic, state, [rewritten, regrown])
    const got = await stored(broker, topic, 90, 'both files again')
    const result = await stop(second)
    assert.deepEqual(
      got.filter((p) => p.startsWith('new-a-')),
      range(1, 30, 'new-a-'),
    )
    assert.deepEqual(
      got.filter((p) => p.startsWith('new-b-')),
      range(1, 40, 'new-b-'),
    )
    assert.equal(
      got.length,
      90,
      `nothing else: ${got
        .slice(20)
        .filter((p) => !p.startsWith('new-'))
        .join(' ')}`,
    )
    assert.match(
      result.stderr,
      new RegExp(`^% "${rewritten}" holds other content than when meta send stopped \\(replaced or rewritten\\): reading it from its start$`, 'm'),
    )
  })

  it('a registry of version 1 is read and written back as version 2 with fingerprints; a registered file gone while stopped is said', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    const gone = join(dir, 'gone.log')
    writeFileSync(log, lines(1, 10))
    const topic = uniqueName('v1')
    const info = statSync(log, {bigint: true})
    const offset = lines(1, 6).length // lines 1..6 were sent by an older meta send
    const registry = registryOf(state, topic)
    mkdirSync(join(state, 'registry'), {recursive: true})
    writeFileSync(
      registry,
      JSON.stringify({
        version: 1,
        files: [
          {path: log, dev: String(info.dev), ino: String(info.ino), offset},
          {path: gone, dev: String(info.dev), ino: '999999999', offset: 42},
        ],
      }),
    )
    const follower = follow(t, broker, topic, state, [join(dir, '*.log')])
    assert.deepEqual(await stored(broker, topic, 4, 'the lines after the saved offset'), range(7, 10))
    appendFileSync(log, lines(11, 12))
    await stored(broker, topic, 6, 'lines appended')
    const result = await stop(follower)
    assert.match(
      result.stderr,
      new RegExp(`^% "${gone}" \\(inode 999999999\\) is gone: what was written to it after byte 42 before meta send started cannot be read$`, 'm'),
    )
    const saved = JSON.parse(readFileSync(registry, 'utf8')) as {
      version: number
      files: Array<{path: string; offset: number; fingerprint?: {bytes: number; sha256: string}}>
    }
    assert.equal(saved.version, 2)
    assert.deepEqual(
      saved.files.map((f) => [f.path, f.offset, f.fingerprint?.bytes]),
      [[log, lines(1, 12).length, lines(1, 12).length]],
    )
    assert.match(saved.files[0].fingerprint!.sha256, /^[0-9a-f]{64}$/)
  })
})
