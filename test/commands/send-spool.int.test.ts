/**
 * `meta send` riding through broker outages with its disk spool: real `meta serve` processes
 * stopped with SIGTERM and kill -9 and started again on the same data directory, behind a
 * forwarder so the address `meta send` was given stays the same.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer, type Message} from '../../src/client/index.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {collect, exited, spawnBroker, spawnCli, type BrokerProcess} from '../helpers/process.js'
import {tcpForwarder, tcpRelay} from '../helpers/tcp-relay.js'

const PARTITIONS = 4

async function readTopic(port: number, topic: string): Promise<Message[]> {
  const consumer = createConsumer({broker: `127.0.0.1:${port}`, topics: [topic], stopAtEnd: true})
  const messages: Message[] = []
  for await (const batch of consumer.batches()) messages.push(...batch.messages)
  return messages
}

/** Every line i in 1..n stored; per partition the first copies of lines in input order. */
function assertAllInOrder(messages: Message[], n: number): void {
  const seen = new Set<number>()
  const perPartition = new Map<number, number[]>()
  for (const m of [...messages].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
    const i = Number(m.data.toString().slice(5))
    if (seen.has(i)) continue // at-least-once: a copy whose acknowledgement was lost
    seen.add(i)
    perPartition.set(m.partition, [...(perPartition.get(m.partition) ?? []), i])
  }
  for (let i = 1; i <= n; i++) assert.ok(seen.has(i), `line-${i} stored`)
  for (const [p, list] of perPartition)
    assert.deepEqual(
      list,
      [...list].sort((a, b) => a - b),
      `partition ${p} keeps input order`,
    )
}

async function stopBroker(broker: BrokerProcess, signal: NodeJS.Signals): Promise<void> {
  broker.child.kill(signal)
  await exited(broker.child)
}

function spoolBytes(dir: string): number {
  let total = 0
  for (const topic of readdirSync(dir)) {
    for (const name of readdirSync(join(dir, topic))) if (name.endsWith('.spool')) total += statSync(join(dir, topic, name)).size
  }
  return total
}

function spoolText(dir: string, topic: string): string {
  try {
    return readdirSync(join(dir, topic))
      .filter((n) => n.endsWith('.spool'))
      .map((n) => readFileSync(join(dir, topic, n), 'latin1'))
      .join('')
  } catch {
    return ''
  }
}

describe('meta send with a spool', () => {
  it('with the default flags a paced pipe rides through a SIGTERM restart and a kill -9 of the broker: every line stored, in order, exit 0', async (t) => {
    const data = await tmpDir(t)
    const state = await tmpDir(t) // no --spool: the spool is $META_STATE_DIR/spool
    const forwarder = await tcpForwarder(t)
    let broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    const topic = uniqueName('paced')
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`], {META_STATE_DIR: state})
    const done = collect(child, 120_000)
    let stderr = ''
    child.stderr!.on('data', (d: string) => (stderr += d))
    const count = (re: RegExp) => (stderr.match(re) ?? []).length
    const OUTAGE = /^% broker not taking messages/gm
    const BACK = /^% broker is back/gm
    let next = 1
    const writeSome = (count: number) => {
      for (const end = next + count; next < end; next++) child.stdin!.write(`line-${next}\n`)
    }
    // The pipe keeps flowing all along, as `tail -F` would.
    const pacer = setInterval(() => writeSome(5), 10)
    t.after(() => clearInterval(pacer))
    const stored = async (n: number) => (await readTopic(broker.port, topic)).length >= n

    await waitFor(() => stored(100), {timeoutMs: 30_000, what: '100 lines stored'})
    await stopBroker(broker, 'SIGTERM')
    await waitFor(() => count(OUTAGE) === 1, {timeoutMs: 30_000, what: 'spooling to start'})
    const stoppedAt = next
    await waitFor(() => next > stoppedAt + 300, {timeoutMs: 30_000, what: 'lines written during the outage'})
    broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    await waitFor(() => count(BACK) === 1, {timeoutMs: 60_000, what: 'the broker back'})

    await stopBroker(broker, 'SIGKILL')
    await waitFor(() => count(OUTAGE) === 2, {timeoutMs: 30_000, what: 'spooling to start again'})
    const killedAt = next
    await waitFor(() => next > killedAt + 300, {timeoutMs: 30_000, what: 'lines written while the broker is dead'})
    broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    clearInterval(pacer)
    const total = next - 1
    child.stdin!.end()
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    const outageLines =
      result.stderr.match(
        new RegExp(`^% broker not taking messages of topic .*: keeping them in the spool ${join(state, 'spool', topic)} until it does$`, 'gm'),
      ) ?? []
    const backLines = result.stderr.match(/^% broker is back: sending the spool of topic /gm) ?? []
    assert.equal(outageLines.length, 2, result.stderr)
    assert.equal(backLines.length, 2, result.stderr)
    // Status lines only: the library's own warnings (connection lost, …) stay below the default log level.
    assert.doesNotMatch(result.stderr, /WARN|connection lost/, result.stderr)
    assert.match(
      result.stderr,
      new RegExp(`^sent ${total.toLocaleString('en-US')} messages .*written to the spool during an outage, [\\d,]+ sent from the spool`, 'm'),
    )
    assertAllInOrder(await readTopic(broker.port, topic), total)
    assert.deepEqual(readdirSync(join(state, 'spool')), [], 'the spool is gone once sent')
  })

  it('the count said when the broker is back is the count the summary gives as sent from the spool', async (t) => {
    const data = await tmpDir(t)
    const spool = await tmpDir(t)
    const forwarder = await tcpForwarder(t)
    let broker = await spawnBroker(t, ['-d', data])
    forwarder.pointAt(broker.port)
    const topic = uniqueName('counts')
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool])
    const done = collect(child, 60_000)
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    child.stdin!.write('line-1\n')
    await waitFor(async () => (await readTopic(broker.port, topic)).length === 1, {timeoutMs: 30_000, what: 'the first line stored'})
    await stopBroker(broker, 'SIGKILL')
    child.stdin!.write('line-2\nline-3\n')
    await waitFor(() => /^% broker not taking messages/m.test(stderr), {timeoutMs: 30_000, what: 'the outage'})
    await waitFor(() => spoolText(spool, topic).includes('line-3'), {timeoutMs: 30_000, what: 'line-3 in the spool'})
    child.stdin!.end()
    broker = await spawnBroker(t, ['-d', data])
    forwarder.pointAt(broker.port)
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    const back = /^% broker is back: sending the spool of topic \S+ \(([\d,]+) messages?\)$/m.exec(result.stderr)
    const summary = /([\d,]+) sent from the spool/.exec(result.stderr)
    assert.ok(back && summary, result.stderr)
    assert.equal(back[1], summary[1], result.stderr)
    assert.equal(back[1], '2')
    assertAllInOrder(await readTopic(broker.port, topic), 3)
  })

  it('--spool-max: a full spool stops the input (back-pressure) and loses nothing', async (t) => {
    const data = await tmpDir(t)
    const spool = await tmpDir(t)
    const forwarder = await tcpForwarder(t)
    let broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    const topic = uniqueName('bounded')
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--spool-max', '1MiB', '--json'])
    const done = collect(child, 120_000)
    child.stdin!.write('line-1\n')
    await waitFor(async () => (await readTopic(broker.port, topic)).length === 1, {timeoutMs: 30_000, what: 'the first line stored'})
    await stopBroker(broker, 'SIGKILL')

    // 4 MiB more: four times what the spool may hold.
    const lines = Math.floor((4 * 1024 * 1024) / 100)
    const pad = 'x'.repeat(88)
    let taken = 0 // bytes the child's stdin pipe has taken
    const total = lines + 1
    for (let i = 2; i <= total; i++) {
      const line = `line-${String(i).padStart(6, '0')}-${pad}\n`
      child.stdin!.write(line, () => (taken += line.length))
    }
    await waitFor(() => spoolBytes(spool) >= 1024 * 1024, {timeoutMs: 30_000, what: 'the spool to fill'})
    await waitFor(() => (child.stdin!.writableLength > 0 ? true : undefined), {what: 'input held back'})
    const takenWhenFull = taken
    assert.ok(takenWhenFull < 2 * 1024 * 1024, `input stopped near the bound: ${takenWhenFull} bytes taken`)
    assert.ok(spoolBytes(spool) < 1024 * 1024 + 512 * 1024, `spool stays near its bound: ${spoolBytes(spool)} bytes`)

    broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    child.stdin!.end()
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    const summary = JSON.parse(result.stdout) as {sent: number; spool: {spooled: number; resent: number; pending: number}}
    assert.equal(summary.sent, total)
    assert.ok(summary.spool.spooled > 0)
    assert.equal(summary.spool.pending, 0)
    const messages = await readTopic(broker.port, topic)
    const got = new Set(messages.map((m) => Number(m.data.toString().slice(5, 11).replace(/-.*/, ''))))
    for (let i = 1; i <= total; i++) assert.ok(got.has(i), `line ${i} stored`)
  })

  it('meta send killed during an outage leaves its spool; the next meta send sends it first', async (t) => {
    const data = await tmpDir(t)
    const state = await tmpDir(t) // the default flags: the spool is $META_STATE_DIR/spool
    const spool = join(state, 'spool')
    const forwarder = await tcpForwarder(t)
    let broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    const topic = uniqueName('leftover')
    const args = ['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`]
    const first = spawnCli(args, {META_STATE_DIR: state})
    const firstDone = collect(first, 60_000)
    for (let i = 1; i <= 50; i++) first.stdin!.write(`line-${i}\n`)
    await waitFor(async () => (await readTopic(broker.port, topic)).length === 50, {timeoutMs: 30_000, what: '50 lines stored'})
    await stopBroker(broker, 'SIGKILL')
    for (let i = 51; i <= 100; i++) first.stdin!.write(`line-${i}\n`)
    await waitFor(() => spoolText(spool, topic).includes('line-100'), {timeoutMs: 30_000, what: 'line-100 in the spool'})
    first.kill('SIGKILL')
    await firstDone

    broker = await spawnBroker(t, ['-d', data, '--partitions', String(PARTITIONS)])
    forwarder.pointAt(broker.port)
    const input = Array.from({length: 50}, (_, i) => `line-${101 + i}\n`).join('')
    const second = spawnCli([...args, '--json'], {META_STATE_DIR: state})
    second.stdin!.end(input)
    const result = await collect(second, 60_000)
    assert.equal(result.code, 0, result.stderr)
    const summary = JSON.parse(result.stdout) as {sent: number; spool: {leftover: number; resent: number; pending: number}}
    assert.equal(summary.sent, 50)
    assert.ok(summary.spool.leftover >= 50, `leftover ${summary.spool.leftover}`)
    assert.equal(summary.spool.resent, summary.spool.leftover)
    assert.equal(summary.spool.pending, 0)
    assertAllInOrder(await readTopic(broker.port, topic), 150)
    assert.deepEqual(readdirSync(spool), [], 'the spool is gone once sent')
  })

  it('meta send stopped by SIGTERM with a healthy broker keeps its unacknowledged window in the spool; the next meta send sends it first', async (t) => {
    // The healthy path keeps the window in memory only: SIGTERM (unlike kill -9) must write it out.
    // A relay that goes silent holds the acknowledgements, with no error on either side.
    const state = await tmpDir(t)
    const spool = join(state, 'spool')
    const broker = await spawnBroker(t, ['-d', await tmpDir(t), '--partitions', String(PARTITIONS)])
    const relay = await tcpRelay(t, {host: '127.0.0.1', port: broker.port})
    const topic = uniqueName('window')
    const first = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${relay.port}`, '--json'], {META_STATE_DIR: state})
    const firstDone = collect(first, 60_000)
    for (let i = 1; i <= 20; i++) first.stdin!.write(`line-${i}\n`)
    await waitFor(async () => (await readTopic(broker.port, topic)).length === 20, {timeoutMs: 30_000, what: '20 lines stored'})
    relay.cut()
    for (let i = 21; i <= 50; i++) first.stdin!.write(`line-${i}\n`)
    await waitFor(() => relay.held().includes('line-50'), {timeoutMs: 30_000, what: 'line-50 sent into the silent relay'})
    assert.deepEqual(readdirSync(state), [], 'nothing spooled while the broker is healthy')
    first.kill('SIGTERM')
    const stopped = await firstDone
    assert.equal(stopped.code, 143, stopped.stderr)
    const firstSummary = JSON.parse(stopped.stdout) as {sent: number; unacknowledged: number}
    assert.deepEqual([firstSummary.sent, firstSummary.unacknowledged], [20, 30])
    const kept = spoolText(spool, topic)
    for (let i = 21; i <= 50; i++) assert.ok(kept.includes(`line-${i}`), `line-${i} in the spool`)

    // The same destination (the spool is for the relay's address): the relay passes bytes again.
    relay.heal()
    const second = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${relay.port}`, '--json'], {META_STATE_DIR: state})
    second.stdin!.end(Array.from({length: 10}, (_, i) => `line-${51 + i}\n`).join(''))
    const result = await collect(second, 60_000)
    assert.equal(result.code, 0, result.stderr)
    const summary = JSON.parse(result.stdout) as {sent: number; spool: {leftover: number; resent: number; pending: number}}
    assert.equal(summary.sent, 10)
    assert.deepEqual([summary.spool.leftover, summary.spool.resent, summary.spool.pending], [30, 30, 0])
    assertAllInOrder(await readTopic(broker.port, topic), 60)
    assert.deepEqual(readdirSync(spool), [], 'the spool is gone once sent')
  })

  it('--max-outage gives up (exit 1) and keeps the spool, also when the broker was never reached', async (t) => {
    const spool = await tmpDir(t)
    const forwarder = await tcpForwarder(t) // nothing behind it
    const topic = uniqueName('never')
    // --spool-dir: the name --spool had before, still accepted.
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool-dir', spool, '--max-outage', '1s'])
    child.stdin!.end('a\nb\nc\n')
    const result = await collect(child, 60_000)
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, /gave up after an outage of \d+ s \(max outage 1 s\): 3 messages kept in /)
    assert.match(spoolText(spool, topic), /a[\s\S]*b[\s\S]*c/)
  })

  it('with the default flags a broker never reached fails at once (a typo in -b must not hang) and nothing is spooled', async (t) => {
    const state = await tmpDir(t)
    const forwarder = await tcpForwarder(t) // nothing behind it
    const fast = spawnCli(['send', '-t', uniqueName('typo'), '-b', `127.0.0.1:${forwarder.port}`], {META_STATE_DIR: state})
    fast.stdin!.end('d\n')
    const failed = await collect(fast, 30_000)
    assert.equal(failed.code, 1)
    assert.match(failed.stderr, /^error \[CONNECTION_FAILED\]: cannot reach broker/m, 'without --max-outage a broker never reached fails at once')
    assert.deepEqual(readdirSync(state), [], 'nothing spooled')
  })

  it('with the default flags and a healthy broker nothing is written to the state directory', async (t) => {
    const state = await tmpDir(t)
    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    const topic = uniqueName('healthy')
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.port}`, '--json'], {META_STATE_DIR: state})
    child.stdin!.end(Array.from({length: 5000}, (_, i) => `line-${i + 1}\n`).join(''))
    const result = await collect(child, 60_000)
    assert.equal(result.code, 0, result.stderr)
    const summary = JSON.parse(result.stdout) as {sent: number; spool: {spooled: number; resent: number; pending: number}}
    assert.equal(summary.sent, 5000)
    assert.deepEqual([summary.spool.spooled, summary.spool.resent, summary.spool.pending], [0, 0, 0])
    assert.deepEqual(readdirSync(state), [])
  })

  it('--no-spool (and -T, which implies it) fails fast: a lost broker ends meta send with exit 1 and no spool', async (t) => {
    const spool = await tmpDir(t) // $META_STATE_DIR: where the spool would be
    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    const topic = uniqueName('nospool')
    for (const flag of ['--no-spool', '-T']) {
      // --no-spool's broker is killed: -T then meets a dead one.
      const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${broker.port}`, flag], {META_STATE_DIR: spool})
      const done = collect(child, 60_000)
      child.stdin!.on('error', () => {}) // EPIPE: the pacer may write once more after meta send gave up
      child.stdin!.write('one\n')
      if (flag !== '-T') {
        await waitFor(async () => (await readTopic(broker.port, topic)).length >= 1, {timeoutMs: 30_000, what: 'the first line stored'})
        await stopBroker(broker, 'SIGKILL')
        const pacer = setInterval(() => child.stdin!.writable && child.stdin!.write('more\n'), 10)
        const result = await done
        clearInterval(pacer)
        assert.equal(result.code, 1, result.stderr)
        assert.match(result.stderr, /giving up: /)
      } else {
        child.stdin!.end()
        const result = await done
        assert.equal(result.code, 1, result.stderr) // the broker is gone: -T fails at once, nothing spooled
      }
      assert.deepEqual(readdirSync(spool), [], `${flag}: no spool written`)
    }
  })

  it('the spool flags: --spool-max and --max-outage need the spool, --spool DIR goes with neither --no-spool nor -T (usage errors)', async (t) => {
    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    const base = ['send', '-t', uniqueName('flags'), '-b', `127.0.0.1:${broker.port}`]
    for (const [extra, message] of [
      [['--max-outage', '1m', '--no-spool'], /--max-outage applies to the spool: expected no --no-spool with it/],
      [['--spool-max', '1GiB', '-T'], /--spool-max applies to the spool: expected no --transaction with it/],
      [['--spool', '/tmp', '-T'], /--spool cannot go with --transaction/],
      [['--no-spool', '--spool', '/tmp'], /--spool DIR and --no-spool: expected one of them/],
      [['--spool-max', '1KiB'], /invalid --spool-max "1KiB": expected 1\.0 MiB\.\.1\.0 TiB/],
      // The library's bounds (1 s..30 days), named by the flag parser with the value given.
      [['--max-outage', '500ms'], /invalid --max-outage "500ms": expected a duration from 1s to 30d/],
      [['--max-outage', '31d'], /invalid --max-outage "31d": expected a duration from 1s to 30d/],
    ] as const) {
      const child = spawnCli([...base, ...extra])
      child.stdin!.end('x\n')
      const result = await collect(child, 30_000)
      assert.equal(result.code, 2, `${extra.join(' ')}: ${result.stderr}`)
      assert.match(result.stderr, message)
    }
  })
})
