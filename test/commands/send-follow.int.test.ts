/**
 * `meta send --follow` end to end: spawned `meta send` processes follow files in a temp dir
 * while the test writes, renames and truncates them as a logger and logrotate would; the topic
 * is read back from a real in-process broker (one partition, so the order is the file order)
 * and polled until it holds what was written. Restarts go through SIGTERM and kill -9.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type {ChildProcess} from 'node:child_process'
import {appendFileSync, existsSync, readFileSync, renameSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {collect, runCli, spawnCli, type CliResult} from '../helpers/process.js'
import {address, readAll} from '../cli/support.js'
import {tcpForwarder} from '../helpers/tcp-relay.js'

interface Follower {
  child: ChildProcess
  done: Promise<CliResult>
  stderr(): string
}

/** `meta send -t topic --follow …` with the state directory `state`; killed after the test. */
function follow(t: Cleanup, broker: Broker | string, topic: string, state: string, args: string[]): Follower {
  const child = spawnCli(['send', '-t', topic, '-b', typeof broker === 'string' ? broker : address(broker), '--follow', '--follow-interval', '20ms', ...args], {
    META_STATE_DIR: state,
  })
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const done = collect(child, 120_000)
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return {child, done, stderr: () => stderr}
}

async function payloads(broker: Broker, topic: string): Promise<string[]> {
  return (await readAll(broker, topic)).map((m) => m.data.toString())
}

/** Poll the topic until it holds `n` messages; returns them. */
async function stored(broker: Broker, topic: string, n: number, what: string): Promise<string[]> {
  let last: string[] = []
  await waitFor(
    async () => {
      last = await payloads(broker, topic)
      return last.length >= n
    },
    {timeoutMs: 30_000, what: `${what} (${n} messages; have ${last.length})`},
  )
  return last
}

/** The registry holds an entry for `path` (the follower's first pass is done). */
async function registered(state: string, topic: string, path: string): Promise<void> {
  const file = join(state, 'registry', `${topic}.json`)
  await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes(JSON.stringify(path)), {timeoutMs: 20_000, what: `${path} in the registry`})
}

function lines(from: number, to: number, prefix = 'line-'): string {
  let text = ''
  for (let i = from; i <= to; i++) text += `${prefix}${i}\n`
  return text
}

function range(from: number, to: number, prefix = 'line-'): string[] {
  return Array.from({length: to - from + 1}, (_, i) => `${prefix}${from + i}`)
}

async function stop(follower: Follower, signal: NodeJS.Signals): Promise<CliResult> {
  follower.child.kill(signal)
  return follower.done
}

describe('meta send --follow', () => {
  it('reads a file renamed away to its end (its partial last line too), then the new file from its start', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, lines(1, 100))
    const topic = uniqueName('rotate')
    const follower = follow(t, broker, topic, state, ['--from-beginning', log])
    await stored(broker, topic, 100, 'the first lines')
    appendFileSync(log, lines(101, 150))
    renameSync(log, `${log}.1`)
    // A writer that has not reopened its log yet still writes to the renamed file.
    appendFileSync(`${log}.1`, `${lines(1, 3, 'late-')}partial-last`)
    writeFileSync(log, lines(151, 200))
    await stored(broker, topic, 204, 'the rotated file and the new one')
    const result = await stop(follower, 'SIGTERM')
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(await payloads(broker, topic), [...range(1, 150), ...range(1, 3, 'late-'), 'partial-last', ...range(151, 200)])
  })

  it('reads a file truncated in place from its start again', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, lines(1, 50))
    const topic = uniqueName('truncate')
    const follower = follow(t, broker, topic, state, ['--from-beginning', log])
    await stored(broker, topic, 50, 'the lines before the truncation')
    truncateSync(log, 0)
    appendFileSync(log, lines(51, 60)) // shorter than before: the size shows the truncation
    await stored(broker, topic, 60, 'the lines after the truncation')
    appendFileSync(log, lines(61, 70))
    await stored(broker, topic, 70, 'lines appended after that')
    const result = await stop(follower, 'SIGINT')
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(await payloads(broker, topic), range(1, 70))
  })

  it('a quoted glob picks up a file that appears later, from its start; other names are not read', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    writeFileSync(join(dir, 'a.log'), lines(1, 5, 'a-'))
    const topic = uniqueName('glob')
    const follower = follow(t, broker, topic, state, ['--from-beginning', join(dir, '*.log')])
    await stored(broker, topic, 5, 'a.log')
    writeFileSync(join(dir, 'c.txt'), lines(1, 3, 'c-'))
    writeFileSync(join(dir, 'b.log'), lines(1, 4, 'b-'))
    await stored(broker, topic, 9, 'b.log, created after the start')
    appendFileSync(join(dir, 'a.log'), lines(6, 7, 'a-'))
    await stored(broker, topic, 11, 'lines appended to a.log')
    const result = await stop(follower, 'SIGTERM')
    assert.equal(result.code, 0, result.stderr)
    const got = await payloads(broker, topic)
    assert.deepEqual(
      got.filter((p) => p.startsWith('a-')),
      range(1, 7, 'a-'),
    )
    assert.deepEqual(
      got.filter((p) => p.startsWith('b-')),
      range(1, 4, 'b-'),
    )
    assert.equal(got.length, 11, `nothing of c.txt: ${got.join(' ')}`)
  })

  it('says once that a path is a directory, not a file, and that a glob matches nothing yet; follows what appears later', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const topic = uniqueName('notices')
    const glob = join(dir, '*.later')
    const follower = follow(t, broker, topic, state, [dir, glob])
    const notices = [
      `% "${dir}" is a directory: not followed (a glob such as '${dir}/*.log' follows the files in it)\n`,
      `% no file matches "${glob}" yet: following the files that appear\n`,
    ]
    await waitFor(() => notices.every((n) => follower.stderr().includes(n)), {timeoutMs: 20_000, what: `the notices, have: ${follower.stderr()}`})
    writeFileSync(join(dir, 'x.later'), lines(1, 3, 'x-'))
    assert.deepEqual(await stored(broker, topic, 3, 'x.later, created after the start'), range(1, 3, 'x-'))
    const result = await stop(follower, 'SIGTERM')
    assert.equal(result.code, 0, result.stderr)
    for (const notice of notices) assert.equal(result.stderr.split(notice).length, 2, `said once: ${notice}`)
  })

  it('files the registry never saw start at their end (a line being written is sent whole); --from-beginning reads them whole', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, `${lines(1, 10)}half`)
    const atEnd = uniqueName('end')
    const whole = uniqueName('whole')
    const fromEnd = follow(t, broker, atEnd, state, [log])
    const fromStart = follow(t, broker, whole, state, ['--from-beginning', log])
    await registered(state, atEnd, log)
    await registered(state, whole, log)
    appendFileSync(log, ` done\n${lines(11, 20)}`)
    assert.deepEqual(await stored(broker, atEnd, 11, 'the lines appended (default: from the end)'), ['half done', ...range(11, 20)])
    assert.deepEqual(await stored(broker, whole, 21, 'the whole file (--from-beginning)'), [...range(1, 10), 'half done', ...range(11, 20)])
    for (const follower of [fromEnd, fromStart]) assert.equal((await stop(follower, 'SIGTERM')).code, 0, follower.stderr())
  })

  it('SIGTERM, then a restart: every line written all along is sent exactly once', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, lines(1, 10, 'old-'))
    const topic = uniqueName('restart')
    let next = 1
    const pacer = setInterval(() => {
      appendFileSync(log, lines(next, next + 4))
      next += 5
    }, 5)
    t.after(() => clearInterval(pacer))
    const first = follow(t, broker, topic, state, [log])
    await stored(broker, topic, 200, 'lines sent by the first run')
    const result = await stop(first, 'SIGTERM')
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stderr, /^interrupted: sent [\d,]+ messages/m)
    const writtenAtStop = next
    await waitFor(() => next > writtenAtStop + 200, {what: 'lines written while meta send is stopped'})
    const second = follow(t, broker, topic, state, [log])
    await waitFor(() => next > writtenAtStop + 600, {what: 'lines written after the restart'})
    clearInterval(pacer)
    const total = next - 1
    await waitFor(async () => (await payloads(broker, topic)).includes(`line-${total}`), {timeoutMs: 30_000, what: `line-${total}, the last one written`})
    assert.equal((await stop(second, 'SIGTERM')).code, 0, second.stderr())
    const got = await payloads(broker, topic)
    const firstSent = Number(got[0].slice(5))
    assert.ok(!got.some((p) => p.startsWith('old-')), 'lines there before the first run are not sent (default: from the end)')
    assert.deepEqual(await payloads(broker, topic), range(firstSent, total), 'each line once, in order')
  })

  it('kill -9, then a restart: nothing lost; only lines past the saved position are sent again', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, '')
    const topic = uniqueName('kill9')
    let next = 1
    const pacer = setInterval(() => {
      appendFileSync(log, lines(next, next + 4))
      next += 5
    }, 5)
    t.after(() => clearInterval(pacer))
    const first = follow(t, broker, topic, state, ['--from-beginning', log])
    await stored(broker, topic, 300, 'lines sent by the first run')
    const registry = join(state, 'registry', `${topic}.json`)
    await waitFor(() => /"offset": [1-9]/.test(readFileSync(registry, 'utf8')), {what: 'a position saved after acknowledgements'})
    first.child.kill('SIGKILL')
    await first.done
    const saved = JSON.parse(readFileSync(registry, 'utf8')) as {files: Array<{offset: number}>}
    const savedOffset = saved.files[0].offset
    const safe = readFileSync(log, 'utf8').slice(0, savedOffset).split('\n').length - 1 // lines settled before the kill
    const second = follow(t, broker, topic, state, [log])
    await waitFor(() => next > 1000, {what: 'lines written after the restart'})
    clearInterval(pacer)
    const total = next - 1
    await waitFor(async () => new Set(await payloads(broker, topic)).size === total, {timeoutMs: 30_000, what: `all ${total} lines stored`})
    assert.equal((await stop(second, 'SIGTERM')).code, 0, second.stderr())
    const got = await payloads(broker, topic)
    const counts = new Map<string, number>()
    for (const p of got) counts.set(p, (counts.get(p) ?? 0) + 1)
    for (let i = 1; i <= total; i++) {
      const n = counts.get(`line-${i}`) ?? 0
      assert.ok(n >= 1, `line-${i} stored`)
      if (i <= safe) assert.equal(n, 1, `line-${i} was before the saved position: sent once`)
    }
    assert.ok(safe > 0, 'the registry was saved while the first run was sending')
  })

  it('--spool: lines read during a broker outage wait in the spool; SIGTERM then, and a restart after it, sends them once, not again from the file', async (t) => {
    const data = await tmpDir(t)
    let broker = await startTestBroker(t, {numPartitions: 1, dataPath: data})
    const forwarder = await tcpForwarder(t)
    forwarder.pointAt(broker.port)
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, '')
    const topic = uniqueName('outage')
    let next = 1
    const pacer = setInterval(() => {
      appendFileSync(log, lines(next, next + 4))
      next += 5
    }, 5)
    t.after(() => clearInterval(pacer))
    const via = `127.0.0.1:${forwarder.port}`
    const first = follow(t, via, topic, state, ['--from-beginning', '--spool-dir', join(state, 'spool'), log])
    await stored(broker, topic, 100, 'lines before the outage')
    await broker.close()
    await waitFor(() => /^% broker not taking messages/m.test(first.stderr()), {timeoutMs: 20_000, what: 'the spool taking over'})
    const outageFrom = next
    await waitFor(() => next > outageFrom + 200, {what: 'lines written during the outage'})
    const result = await stop(first, 'SIGTERM')
    assert.equal(result.code, 0, `stopped with lines in the spool: ${result.stderr}`)
    const outageTo = next - 1
    broker = await startTestBroker(t, {numPartitions: 1, dataPath: data})
    forwarder.pointAt(broker.port)
    const second = follow(t, via, topic, state, ['--spool-dir', join(state, 'spool'), log])
    await waitFor(() => next > outageTo + 200, {what: 'lines written after the restart'})
    clearInterval(pacer)
    const total = next - 1
    await waitFor(async () => (await payloads(broker, topic)).includes(`line-${total}`), {timeoutMs: 30_000, what: `line-${total}, the last one written`})
    assert.equal((await stop(second, 'SIGTERM')).code, 0, second.stderr())
    const got = await payloads(broker, topic)
    const counts = new Map<string, number>()
    for (const p of got) counts.set(p, (counts.get(p) ?? 0) + 1)
    for (let i = 1; i <= total; i++) assert.ok(counts.has(`line-${i}`), `line-${i} stored`)
    // Lines first read during the outage were never sent before the stop: a second copy would mean the file was read again.
    for (let i = outageFrom + 100; i <= outageTo; i++) assert.equal(counts.get(`line-${i}`), 1, `line-${i}, read during the outage, stored once`)
  })

  it('waits for a file not there yet; after a restart, a file rotated or truncated while stopped is read from its start', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const rotated = join(dir, 'rotated.log')
    const truncated = join(dir, 'truncated.log')
    writeFileSync(truncated, lines(1, 20, 't-'))
    const topic = uniqueName('away')
    const first = follow(t, broker, topic, state, [rotated, truncated])
    await registered(state, topic, truncated)
    await waitFor(() => first.stderr().includes(`% "${rotated}" does not exist (yet): following it once it appears\n`), {
      timeoutMs: 20_000,
      what: 'the notice for the missing file',
    })
    writeFileSync(rotated, lines(1, 3, 'r-')) // appears after the start: read from its start
    appendFileSync(truncated, lines(21, 22, 't-'))
    await stored(broker, topic, 5, 'the new file and the lines appended')
    assert.equal((await stop(first, 'SIGTERM')).code, 0, first.stderr())
    renameSync(rotated, `${rotated}.1`)
    writeFileSync(rotated, lines(4, 5, 'r-'))
    writeFileSync(truncated, lines(23, 24, 't-'))
    const second = follow(t, broker, topic, state, [rotated, truncated])
    const got = await stored(broker, topic, 9, 'the files changed while stopped')
    assert.equal((await stop(second, 'SIGTERM')).code, 0, second.stderr())
    assert.deepEqual(
      got.filter((p) => p.startsWith('r-')),
      range(1, 5, 'r-'),
    )
    assert.deepEqual(
      got.filter((p) => p.startsWith('t-')),
      range(21, 24, 't-'),
    )
  })

  it('usage: stdin, -T and no FILE are refused (exit 2); a registry in use is refused (exit 1)', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const state = await tmpDir(t)
    const log = join(state, 'a.log')
    writeFileSync(log, '')
    const run = (args: string[]) => runCli(['send', '-t', 'usage', '-b', address(broker), '--follow', ...args], {env: {META_STATE_DIR: state}})
    for (const [args, message] of [
      [['-'], /'-' \(stdin\) cannot be followed/],
      [[], /expected at least one FILE/],
      [['-T', log], /--transaction=true cannot also be provided when using --follow/],
    ] as const) {
      const result = await run([...args])
      assert.equal(result.code, 2, result.stderr)
      assert.match(result.stderr, message)
    }
    const topic = uniqueName('locked')
    const first = follow(t, broker, topic, state, [log])
    await registered(state, topic, log)
    const second = await runCli(['send', '-t', topic, '-b', address(broker), '--follow', log], {env: {META_STATE_DIR: state}})
    assert.equal(second.code, 1, second.stderr)
    assert.match(second.stderr, /error \[DATA_DIR_LOCKED\]: the registry ".*" is in use by process \d+/)
    assert.equal((await stop(first, 'SIGTERM')).code, 0, first.stderr())
  })

  it('a glob that also matches the rotated name: the renamed file goes on where it was, each line once', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const dir = await tmpDir(t)
    const state = await tmpDir(t)
    const log = join(dir, 'app.log')
    writeFileSync(log, lines(1, 50))
    const topic = uniqueName('rotglob')
    const follower = follow(t, broker, topic, state, ['--from-beginning', `${log}*`])
    await stored(broker, topic, 50, 'the first lines')
    appendFileSync(log, lines(51, 60))
    renameSync(log, `${log}.1`)
    appendFileSync(`${log}.1`, lines(61, 70))
    writeFileSync(log, lines(71, 80))
    await stored(broker, topic, 80, 'both files')
    appendFileSync(`${log}.1`, lines(81, 85))
    appendFileSync(log, lines(86, 90))
    await stored(broker, topic, 90, 'lines appended to both after the rotation')
    const result = await stop(follower, 'SIGTERM')
    assert.equal(result.code, 0, result.stderr)
    const got = await payloads(broker, topic)
    assert.deepEqual(
      [...got].sort((a, b) => Number(a.slice(5)) - Number(b.slice(5))),
      range(1, 90),
      'each line once',
    )
    assert.deepEqual(got.slice(0, 80), range(1, 80), 'the old file to its end, then the new one')
  })
})
