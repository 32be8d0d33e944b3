/**
 * `meta tail` where a new user trips, through the built CLI against a real broker:
 * a mistyped topic is named (error with -e, one warning and a wait without), a byte offset
 * inside a message is realigned (or past the end: clamped) and said, a group member says which
 * partitions it owns on joining and after a rebalance, --json is one object per message, and
 * --broadcast gives every member every message. Every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {readFile} from 'node:fs/promises'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {collect, exited, runCli, spawnCli} from '../helpers/process.js'
import {address, produce, readAll} from '../cli/support.js'

const DEADLINE_MS = 30_000

describe('meta tail: topics that do not exist', () => {
  it('-e: names the topic and the close ones, exit 1, nothing on stdout', async (t) => {
    const broker = await startTestBroker(t)
    await produce(broker, 'orders', [{payload: 'x'}])
    const r = await runCli(['tail', '-t', 'ordres', '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1)
    assert.equal(r.stdout, '')
    assert.equal(r.stderr, `error [NOT_FOUND]: topic "ordres" does not exist on broker ${address(broker)}\nhint: did you mean "orders"?\n`)
    const none = await runCli(['tail', '-t', 'nosuchtopic', '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(none.code, 1)
    assert.equal(
      none.stderr,
      `error [NOT_FOUND]: topic "nosuchtopic" does not exist on broker ${address(broker)}\nhint: topics on broker ${address(broker)}: orders\n`,
    )
  })

  it('without -e: says so once on stderr and waits; prints the topic once it appears', async (t) => {
    const broker = await startTestBroker(t)
    await produce(broker, 'orders', [{payload: 'x'}])
    const topic = uniqueName('later')
    const child = spawnCli(['tail', '-t', topic, '-b', address(broker), '-c', '1'])
    const done = collect(child, DEADLINE_MS)
    let stderr = ''
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
    await waitFor(() => stderr.includes('waiting for it'), {what: 'the warning about the missing topic'})
    await produce(broker, topic, [{payload: 'first'}])
    const r = await done
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'first\n')
    assert.equal(
      r.stderr,
      `% topic "${topic}" does not exist on broker ${address(broker)} (yet): waiting for it; topics on broker ${address(broker)}: orders\n`,
    )
  })
})

describe('meta tail -o <byte offset>', () => {
  it('inside a message: starts at the next message and says so; past the end: says where the end is', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('offsets')
    await produce(broker, topic, [{payload: 'aaaaaaaaaa'}, {payload: 'bbbbbbbbbb'}, {payload: 'cccccccccc'}])
    const [, second, third] = await readAll(broker, topic)
    const inside = second.offset + 5
    const r = await runCli(['tail', '-t', topic, '-p', '0', '-o', String(inside), '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, 'cccccccccc\n')
    assert.equal(
      r.stderr,
      `% offset ${inside} is inside a message of topic ${topic} [0]: starting at the next message, offset ${third.offset}\n` +
        `% Reached end of topic ${topic} [0] at offset ${third.nextOffset}\n`,
    )
    const exact = await runCli(['tail', '-t', topic, '-o', String(second.offset), '-e', '-q', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(exact.stdout, 'bbbbbbbbbb\ncccccccccc\n')
    assert.equal(exact.stderr, '')
    const past = await runCli(['tail', '-t', topic, '-o', '99999', '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(past.code, 0, past.stderr)
    assert.equal(past.stdout, '')
    assert.match(past.stderr, new RegExp(`^% offset 99999 is past the end of topic ${topic} \\[0\\] at ${third.nextOffset}: starting at the end\\n`))
  })
})

describe('meta tail --json', () => {
  it('prints one JSON object per message, as -J does', async (t) => {
    const broker = await startTestBroker(t)
    const topic = uniqueName('json')
    await produce(broker, topic, [{payload: 'one', attribute: 'k'}, {payload: 'two'}])
    const json = await runCli(['tail', '-t', topic, '-e', '-q', '--json', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    const jsonl = await runCli(['tail', '-t', topic, '-e', '-q', '-J', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(json.code, 0, json.stderr)
    assert.equal(json.stdout, jsonl.stdout)
    const lines = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as {payload: string; attribute: string | null; topic: string})
    assert.deepEqual(
      lines.map((l) => [l.topic, l.payload, l.attribute]),
      [
        [topic, 'one', 'k'],
        [topic, 'two', null],
      ],
    )
  })
})

describe('meta tail --group: assignments on stderr', () => {
  it('each member says which partitions it owns on joining and after every rebalance; -q silences it', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName('assign')
    const group = uniqueName('group')
    await produce(broker, topic, [{payload: 'x', partition: 0}])
    const spawnMember = () => {
      const child = spawnCli(['tail', '-t', topic, '-b', address(broker), '--group', group, '--session-timeout', '10s'])
      t.after(() => child.kill('SIGKILL'))
      const out = {stderr: ''}
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (out.stderr += d))
      return {child, out}
    }
    const a = spawnMember()
    await waitFor(() => a.out.stderr.includes(`% group ${group}: assigned ${topic} [0], ${topic} [1]\n`), {
      what: `member A's first assignment in: ${a.out.stderr}`,
      timeoutMs: DEADLINE_MS,
    })
    const b = spawnMember()
    await waitFor(() => /% group \S+: assigned /.test(b.out.stderr), {what: `member B's assignment in: ${b.out.stderr}`, timeoutMs: DEADLINE_MS})
    await waitFor(() => a.out.stderr.includes(`% group ${group} rebalanced: assigned`), {
      what: `member A's rebalance line in: ${a.out.stderr}`,
      timeoutMs: DEADLINE_MS,
    })
    const owned = (s: string) => /assigned (.*?)(?: \(revoked .*\))?\n(?![\s\S]*assigned)/.exec(s)?.[1]
    assert.deepEqual([owned(a.out.stderr), owned(b.out.stderr)].sort(), [`${topic} [0]`, `${topic} [1]`])
    assert.match(a.out.stderr, /rebalanced: assigned .* \(revoked .*\)\n/)
    for (const m of [a, b]) m.child.kill('SIGINT')
    for (const m of [a, b]) assert.equal((await exited(m.child)).code, 0)

    const quiet = await runCli(['tail', '-t', topic, '-b', address(broker), '--group', uniqueName('group'), '-e', '-q'], {timeoutMs: DEADLINE_MS})
    assert.equal(quiet.code, 0, quiet.stderr)
    assert.equal(quiet.stderr, '')
  })
})

describe('meta tail --broadcast', () => {
  it('every member reads every partition, keeping its offsets in a local file', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName('broadcast')
    const dir = await tmpDir(t)
    await produce(broker, topic, [
      {payload: 'p0', partition: 0},
      {payload: 'p1', partition: 1},
    ])
    const member = (n: number) =>
      runCli(['tail', '-t', topic, '-b', address(broker), '--group', 'cache', '--broadcast', '--offsets-file', join(dir, `offsets-${n}.json`), '-e', '-q'], {
        timeoutMs: DEADLINE_MS,
      })
    const [one, two] = await Promise.all([member(1), member(2)])
    for (const r of [one, two]) {
      assert.equal(r.code, 0, r.stderr)
      assert.deepEqual(r.stdout.trim().split('\n').sort(), ['p0', 'p1'])
    }
    const saved = JSON.parse(await readFile(join(dir, 'offsets-1.json'), 'utf8')) as Record<string, unknown[]>
    assert.equal(Object.values(saved)[0].length, 2, 'both partitions committed locally')
    const again = await member(1)
    assert.equal(again.stdout, '', 'a broadcast member resumes from its own offsets')
    const bad = await runCli(['tail', '-t', topic, '--broadcast', '-b', address(broker)])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--group/)
  })
})
