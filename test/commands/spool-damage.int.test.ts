/**
 * A damaged spool loses only what is damaged, and says so: a spool `meta send` left (a real
 * broker that was down), damaged on disk as a bad sector or a stray write would, then listed
 * and sent to the broker once it is up.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readFileSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer} from '../../src/client/index.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {runCli, spawnBroker} from '../helpers/process.js'
import {tcpForwarder, type TcpForwarder} from '../helpers/tcp-relay.js'

/** `C000000`..`C000999`: 8 header + 8 fixed body + 7 payload bytes = 23 bytes per record. */
const LINES = Array.from({length: 1000}, (_, i) => `C${String(i).padStart(6, '0')}`)
const RECORD_BYTES = 23
const SEGMENT = '00000000000000000000.spool'

async function readTopic(port: number, topic: string): Promise<string[]> {
  const consumer = createConsumer({broker: `127.0.0.1:${port}`, topics: [topic], stopAtEnd: true})
  const out: string[] = []
  for await (const batch of consumer.batches()) out.push(...batch.messages.map((m) => m.data.toString()))
  return out
}

/** What `seq -f C%06g 0 999 | meta send --max-outage 1s` leaves with no broker: a spool of 1,000 records. */
async function leaveSpool(t: {after(fn: () => unknown): void}): Promise<{spool: string; topic: string; file: string; forwarder: TcpForwarder}> {
  const spool = await tmpDir(t)
  const forwarder = await tcpForwarder(t) // nothing behind it yet
  const topic = uniqueName('sc')
  const sent = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--max-outage', '1s'], {
    input: `${LINES.join('\n')}\n`,
  })
  assert.equal(sent.code, 1, sent.stderr)
  assert.match(sent.stderr, /1000 messages kept in /)
  const file = join(spool, topic, SEGMENT)
  assert.equal(readFileSync(file).length, 1000 * RECORD_BYTES)
  return {spool, topic, file, forwarder}
}

describe('a damaged spool', () => {
  it('one flipped byte in the middle: listed as a damaged range; every whole record sent, the range reported and kept in quarantine, exit 1', async (t) => {
    const {spool, topic, file, forwarder} = await leaveSpool(t)
    const data = readFileSync(file)
    const from = 500 * RECORD_BYTES
    data[from + 20]! ^= 0x01 // a payload byte of record 500
    writeFileSync(file, data)
    const damaged = data.subarray(from, from + RECORD_BYTES)

    const listed = await runCli(['spool', 'list', '--spool', spool, '--json'])
    assert.equal(listed.code, 0, listed.stderr)
    const {spools} = JSON.parse(listed.stdout) as {spools: Array<{messages: number; damaged: unknown[]}>}
    assert.deepEqual(
      spools.map((s) => [s.messages, s.damaged]),
      [[999, [{segment: SEGMENT, from, to: from + RECORD_BYTES, bytes: RECORD_BYTES, reason: 'checksum mismatch'}]]],
    )
    const table = await runCli(['spool', 'list', '--spool', spool])
    assert.match(table.stdout, new RegExp(`^ ${topic}\\s+999\\s+.*1 range \\(23 B\\)`, 'm'))
    assert.match(table.stdout, /^damaged ranges of \S+: bytes 11,500-11,523 of 00000000000000000000\.spool \(checksum mismatch\)$/m)

    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    forwarder.pointAt(broker.port)
    const sent = await runCli(['spool', 'send', '--spool', spool])
    assert.equal(sent.code, 1, sent.stderr)
    const dir = join(spool, topic)
    assert.match(
      sent.stderr,
      new RegExp(
        `^% the spool ${dir} of topic ${topic} is damaged: skipped 1 damaged range \\(23 B\\): bytes 11,500-11,523 of 00000000000000000000\\.spool \\(checksum mismatch\\); every whole record is sent; the damaged bytes are kept in ${dir}/quarantine$`,
        'm',
      ),
    )
    assert.match(sent.stderr, new RegExp(`^sent 999 messages from ${topic} \\(999\\); skipped 1 damaged range \\(23 B, kept in quarantine\\)$`, 'm'))
    assert.deepEqual(
      await readTopic(broker.port, topic),
      LINES.filter((_, i) => i !== 500),
      'every whole record, in order',
    )
    const quarantined = join(dir, 'quarantine', `${SEGMENT}.${from}-${from + RECORD_BYTES}.damaged`)
    assert.deepEqual(readFileSync(quarantined), damaged, 'the damaged bytes are kept')

    // Sent: what is left is the quarantine, listed, and nothing to send again.
    const after = JSON.parse((await runCli(['spool', 'list', '--spool', spool, '--json'])).stdout) as {
      spools: Array<{messages: number; damaged: unknown[]; quarantined: Array<{path: string; bytes: number}>}>
    }
    assert.deepEqual(
      after.spools.map((s) => [s.messages, s.damaged, s.quarantined]),
      [[0, [], [{path: quarantined, bytes: RECORD_BYTES}]]],
    )
    const again = await runCli(['spool', 'send', '--spool', spool])
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stderr, /^no spools to send$/m)
    assert.equal((await readTopic(broker.port, topic)).length, 999)
    const dropped = await runCli(['spool', 'drop', topic, '--spool', spool, '--execute'])
    assert.equal(dropped.code, 0, dropped.stderr)
    assert.equal(existsSync(dir), false)
  })

  it('200 zeroed bytes in the middle: meta send sends the spool it finds first, all but the records the zeroes touched, reports the range, exit 1', async (t) => {
    const {spool, topic, file, forwarder} = await leaveSpool(t)
    const data = readFileSync(file)
    data.fill(0, 10_000, 10_200)
    writeFileSync(file, data)
    // Records 434 (9,982..10,005) to 443 (10,189..10,212) overlap the zeroes.
    const lost = new Set(Array.from({length: 10}, (_, k) => 434 + k))

    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    forwarder.pointAt(broker.port)
    const sent = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${forwarder.port}`, '--spool', spool, '--json'], {input: 'after\n'})
    assert.equal(sent.code, 1, sent.stderr)
    assert.match(sent.stderr, /is damaged: skipped 1 damaged range \(230 B\): bytes 9,982-10,212 of 00000000000000000000\.spool \(checksum mismatch\)/)
    const summary = JSON.parse(sent.stdout) as {sent: number; spool: {leftover: number; resent: number; damaged: number; damagedBytes: number}}
    assert.deepEqual([summary.sent, summary.spool.leftover, summary.spool.resent, summary.spool.damaged, summary.spool.damagedBytes], [1, 990, 990, 1, 230])
    assert.deepEqual(await readTopic(broker.port, topic), [...LINES.filter((_, i) => !lost.has(i)), 'after'])
    assert.equal(readFileSync(join(spool, topic, 'quarantine', `${SEGMENT}.9982-10212.damaged`)).length, 230)
  })

  it('an incomplete last record (a write cut short) is cut off and said, not called damage: exit 0', async (t) => {
    const {spool, topic, file, forwarder} = await leaveSpool(t)
    truncateSync(file, 1000 * RECORD_BYTES - 5)
    const listed = JSON.parse((await runCli(['spool', 'list', '--spool', spool, '--json'])).stdout) as {spools: Array<{messages: number; damaged: unknown[]}>}
    assert.deepEqual(
      listed.spools.map((s) => [s.messages, s.damaged]),
      [[999, []]],
    )
    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    forwarder.pointAt(broker.port)
    const sent = await runCli(['spool', 'send', '--spool', spool])
    assert.equal(sent.code, 0, sent.stderr)
    assert.match(sent.stderr, new RegExp(`^% the spool \\S+ of topic ${topic} ended in an incomplete record \\(18 B, a write cut short\\): cut off$`, 'm'))
    assert.doesNotMatch(sent.stderr, /damaged/)
    assert.deepEqual(await readTopic(broker.port, topic), LINES.slice(0, 999))
  })
})
