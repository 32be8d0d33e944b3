/**
 * A spool on a disk that fills up: a real 2 MiB tmpfs as `--spool`, a real broker killed and
 * started again behind a forwarder. `meta send` stops reading instead of crashing, says why
 * once, resumes when there is space, and loses nothing; `meta spool send` that fails midway on
 * the full disk, run again, sends nothing twice.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync, unlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer, type Message} from '../../src/client/index.js'
import {scaledMs, tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {collect, exited, runCli, spawnBroker, spawnCli} from '../helpers/process.js'
import {tcpForwarder, tcpValve} from '../helpers/tcp-relay.js'
import {fillUp, mountTmpfs} from '../helpers/tmpfs.js'

const TMPFS_BYTES = 2 * 1024 * 1024
const PAD = 'x'.repeat(60)

async function readTopic(port: number, topic: string): Promise<Message[]> {
  const consumer = createConsumer({broker: `127.0.0.1:${port}`, topics: [topic], stopAtEnd: true})
  const messages: Message[] = []
  for await (const batch of consumer.batches()) messages.push(...batch.messages)
  return messages
}

function line(i: number): string {
  return `line-${String(i).padStart(6, '0')}-${PAD}`
}

/** The line numbers stored, in storage order. */
function lineNumbers(messages: Message[]): number[] {
  return messages.map((m) => Number(m.data.toString().slice(5, 11)))
}

/** No JavaScript stack trace reached the user. */
function assertNoStack(stderr: string): void {
  assert.doesNotMatch(stderr, /^\s+at .+[(:]\d+/m, `a stack trace on stderr:\n${stderr}`)
  assert.doesNotMatch(stderr, /Uncaught|Error: ENOSPC/, stderr)
}

describe('a spool on a disk that fills up', () => {
  it('meta send pauses its input while the spool cannot be written, says so once, resumes when space returns, and loses nothing through a broker outage', async (t) => {
    const spool = mountTmpfs(t, TMPFS_BYTES)
    const data = await tmpDir(t)
    const forwarder = await tcpForwarder(t)
    let broker = await spawnBroker(t, ['-d', data])
    forwarder.pointAt(broker.port)
    const topic = uniqueName('full')
    const child = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--json'])
    t.after(() => child.kill('SIGKILL'))
    const done = collect(child, 180_000)
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    const STALLED =
      /^% cannot write the spool \S+ of topic \S+: no space left on device \(ENOSPC\); input paused, [\d,]+ messages kept in the spool and [\d,]+ messages? \([^)]+\) held in memory until it can be written$/gm
    const RESUMED = /^% the spool of topic \S+ can be written again: input resumed$/gm
    const count = (re: RegExp) => (stderr.match(re) ?? []).length

    for (let i = 1; i <= 100; i++) child.stdin!.write(`${line(i)}\n`)
    await waitFor(async () => (await readTopic(broker.port, topic)).length === 100, {timeoutMs: 30_000, what: '100 lines stored'})
    // Room that comes back later: the spool fills what is left first.
    const reserve = join(spool, 'reserve')
    writeFileSync(reserve, Buffer.alloc(512 * 1024))
    broker.child.kill('SIGKILL')
    await exited(broker.child)

    // 4 MiB more: twice what the whole disk holds.
    const total = 100 + Math.ceil((4 * 1024 * 1024) / (line(0).length + 1))
    for (let i = 101; i <= total; i++) child.stdin!.write(`${line(i)}\n`)
    await waitFor(() => count(STALLED) >= 1, {timeoutMs: 60_000, what: 'the spool to fill the disk'})
    assert.equal(count(STALLED), 1, `said once per stall:\n${stderr}`)
    assert.equal(child.exitCode, null, 'meta send still runs')
    await waitFor(() => (child.stdin!.writableLength > 0 ? true : undefined), {what: 'input held back'})
    assertNoStack(stderr)

    // `meta spool list` counts the spool a running meta send holds (read without its lock).
    const listed = await runCli(['spool', 'list', '--spool', spool, '--json'])
    assert.equal(listed.code, 0, listed.stderr)
    const {spools} = JSON.parse(listed.stdout) as {spools: Array<{topic: string; messages: number; inUseBy: number; destination: {broker: string}}>}
    assert.equal(spools.length, 1)
    assert.equal(spools[0]!.inUseBy, child.pid)
    assert.ok(spools[0]!.messages > 1000, `counted while in use: ${spools[0]!.messages}`)
    assert.deepEqual(spools[0]!.destination, {broker: `127.0.0.1:${forwarder.port}`})

    unlinkSync(reserve)
    await waitFor(() => count(RESUMED) >= 1, {timeoutMs: 30_000, what: 'writing to resume once there is space'})

    broker = await spawnBroker(t, ['-d', data])
    forwarder.pointAt(broker.port)
    child.stdin!.end()
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    assertNoStack(result.stderr)
    const summary = JSON.parse(result.stdout) as {sent: number; failed: number; unacknowledged: number; spool: {spooled: number; pending: number}}
    assert.deepEqual([summary.sent, summary.failed, summary.unacknowledged, summary.spool.pending], [total, 0, 0, 0])
    const stored = new Set(lineNumbers(await readTopic(broker.port, topic)))
    for (let i = 1; i <= total; i++) assert.ok(stored.has(i), `line ${i} stored`)
    assert.deepEqual(readdirSync(spool), [], 'the spool is gone once sent')
  })

  it('meta send gives up after --max-outage with a clear error and the spool kept; meta spool send failing midway on the full disk sends nothing twice when run again', async (t) => {
    const spool = mountTmpfs(t, TMPFS_BYTES)
    const forwarder = await tcpForwarder(t) // no broker behind it yet
    const topic = uniqueName('midway')
    const total = Math.ceil((3 * 1024 * 1024) / (line(0).length + 1))
    const send = spawnCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--max-outage', '2s'])
    send.stdin!.on('error', () => {}) // EPIPE: meta send stops reading before the end
    send.stdin!.end(Array.from({length: total}, (_, i) => `${line(i + 1)}\n`).join(''))
    const gaveUp = await collect(send, 60_000)
    assert.equal(gaveUp.code, 1, gaveUp.stderr)
    assertNoStack(gaveUp.stderr)
    assert.equal((gaveUp.stderr.match(/^% cannot write the spool /gm) ?? []).length, 1, gaveUp.stderr)
    const gaveUpLine =
      /^error \[\w+\]: gave up after .*: ([\d,]+) messages kept in \S+; ([\d,]+) more could not be written to it \(no space left on device \(ENOSPC\)\) and are not kept$/m.exec(
        gaveUp.stderr,
      )
    assert.ok(gaveUpLine, gaveUp.stderr)
    const kept = Number(gaveUpLine[1]!.replaceAll(',', ''))
    // The lines not kept are named (the first of them in full), not dropped in silence.
    assert.match(gaveUp.stderr, new RegExp(`^line ${kept + 1}: send failed: not kept: the spool \\S+ could not be written`, 'm'))

    const listed = JSON.parse((await runCli(['spool', 'list', '--spool', spool, '--json'])).stdout) as {spools: Array<{messages: number}>}
    assert.deepEqual(
      listed.spools.map((s) => s.messages),
      [kept],
    )

    // A broker behind a valve that stops passing requests part way: what it stored is answered, the rest never reaches it.
    const data = await tmpDir(t)
    const broker = await spawnBroker(t, ['-d', data])
    const valve = await tcpValve(t, {host: '127.0.0.1', port: broker.port})
    valve.closeAfter(1024 * 1024)
    forwarder.pointAt(valve.port)
    // The acknowledgement timeout grows with the machine's load: an answer that comes late would
    // leave a stored message in doubt, which the next run rightly sends again.
    const ackTimeout = `${scaledMs(2000)}ms`
    const failed = await runCli(['spool', 'send', '--spool', spool, '--max-outage', '1s', '--ack-timeout', ackTimeout, '--json'], {timeoutMs: 60_000})
    assert.equal(failed.code, 1, failed.stderr)
    assertNoStack(failed.stderr)
    const first = JSON.parse(failed.stdout) as {sent: Record<string, number>; pending: number}
    const sentFirst = first.sent[topic]!
    assert.ok(
      sentFirst > 0 && sentFirst < kept,
      `failed midway: ${sentFirst} of ${kept} sent (${valve.passed()} bytes passed)\n${failed.stderr}\n${failed.stdout}`,
    )
    assert.equal(first.pending, kept - sentFirst)
    assert.deepEqual(
      lineNumbers(await readTopic(broker.port, topic)),
      Array.from({length: sentFirst}, (_, i) => i + 1),
    )

    // Run again (to its own destination, the forwarder, now straight to the broker): only the rest is sent.
    forwarder.pointAt(broker.port)
    const again = await runCli(['spool', 'send', '--spool', spool], {timeoutMs: 60_000})
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stderr, new RegExp(`^sent ${(kept - sentFirst).toLocaleString('en-US')} messages from ${topic} `, 'm'))
    assert.deepEqual(
      lineNumbers(await readTopic(broker.port, topic)),
      Array.from({length: kept}, (_, i) => i + 1),
      'every kept line once, in order',
    )
    assert.deepEqual(readdirSync(spool), [])
  })

  it('a disk too full to create a spool at all fails the outage at once, in words, naming the lines not sent', async (t) => {
    const spool = mountTmpfs(t, 1024 * 1024)
    fillUp(spool)
    const forwarder = await tcpForwarder(t) // no broker behind it
    const topic = uniqueName('nospace')
    const result = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--max-outage', '1s'], {input: 'a\nb\n'})
    assert.equal(result.code, 1, result.stderr)
    assertNoStack(result.stderr)
    assert.match(
      result.stderr,
      new RegExp(
        `^error \\[STORAGE_ERROR\\]: cannot keep messages of topic ${topic} in a spool under \\S+: cannot open the spool \\S+: no space left on device \\(ENOSPC\\)$`,
        'm',
      ),
    )
    assert.match(result.stderr, /^line 1: send failed: /m)
    assert.match(result.stderr, /^line 2: send failed: /m)
  })
})
