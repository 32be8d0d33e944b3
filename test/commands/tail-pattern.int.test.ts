/**
 * `meta tail -t 'logs-*'` and `--topic-pattern REGEX` end to end: the built CLI against a real
 * broker in this process. Every matching topic is read (and only those), -J names each
 * record's topic, -e ends at the end offsets of the start, a topic that appears while
 * following is picked up, and --group consumes every matching topic (its offsets committed).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {collect, runCli, spawnCli} from '../helpers/process.js'

async function produce(url: string, topic: string, payloads: string[]): Promise<void> {
  const producer = createProducer({broker: url})
  try {
    for (const payload of payloads) assert.equal((await producer.send(topic, payload, {partition: 0})).success, true)
  } finally {
    await producer.close()
  }
}

describe('meta tail with topic patterns', () => {
  it('-e with a glob reads every matching topic to its end, -J names each topic', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const prefix = uniqueName('logs')
    await produce(url, `${prefix}-a`, ['a1', 'a2'])
    await produce(url, `${prefix}-b`, ['b1'])
    await produce(url, `other-${prefix}`, ['x'])
    const r = await runCli(['tail', '-t', `${prefix}-*`, '-e', '-J', '-q', '-b', url], {timeoutMs: 30_000})
    assert.equal(r.code, 0, r.stderr)
    const records = r.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as {topic: string; payload: string})
    assert.deepEqual(records.map((m) => `${m.topic}:${m.payload}`).sort(), [`${prefix}-a:a1`, `${prefix}-a:a2`, `${prefix}-b:b1`])

    const regex = await runCli(['tail', '--topic-pattern', `${prefix}-[b]|other-.*`, '-e', '-f', '%t %s\\n', '-q', '-b', url])
    assert.equal(regex.code, 0, regex.stderr)
    assert.deepEqual(regex.stdout.trim().split('\n').sort(), [`${prefix}-b b1`, `other-${prefix} x`])
  })

  it('refuses a pattern nothing matches with -e, and a bad regex, naming them', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const none = await runCli(['tail', '-t', 'nothing-here-*', '-e', '-b', url])
    assert.equal(none.code, 1)
    assert.match(none.stderr, /no topic on broker .* matches "nothing-here-\*": expected at least one with -e/)
    const bad = await runCli(['tail', '--topic-pattern', 'logs-(', '-e', '-b', url])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /--topic-pattern "logs-\(": expected a regular expression/)
    const interval = await runCli(['tail', '-t', 'x-*', '--rescan-interval', '10ms', '-b', url])
    assert.equal(interval.code, 2)
    assert.match(interval.stderr, /invalid --rescan-interval "10ms": expected a duration from 100ms to 5m/)
    const long = await runCli(['tail', '-t', 'x-*', '--rescan-interval', '6m', '-b', url])
    assert.equal(long.code, 2)
    assert.match(long.stderr, /invalid --rescan-interval "6m": expected a duration from 100ms to 5m/)
  })

  it('following, picks up a matching topic that appears later and ends on SIGINT', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const prefix = uniqueName('follow')
    await produce(url, `${prefix}-1`, ['first'])
    const child = spawnCli(['tail', '-t', `${prefix}-*`, '--rescan-interval', '200ms', '-f', '%t %s\\n', '-b', url])
    t.after(() => child.kill('SIGKILL'))
    const done = collect(child, 60_000)
    let stdout = ''
    child.stdout!.on('data', (d: string) => (stdout += d))
    await waitFor(() => stdout.includes(`${prefix}-1 first`), {what: 'the first topic read', timeoutMs: 20_000})
    await produce(url, `${prefix}-2`, ['later'])
    await produce(url, `unrelated-${prefix}`, ['no'])
    await waitFor(() => stdout.includes(`${prefix}-2 later`), {what: `the new topic read, in: ${stdout}`, timeoutMs: 20_000})
    child.kill('SIGINT')
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    assert.doesNotMatch(result.stdout, /unrelated/)
    assert.match(result.stderr, new RegExp(`new topic matching "${prefix}-\\*": ${prefix}-2`))
  })

  it('--group consumes every matching topic and commits its offsets there', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const prefix = uniqueName('grp')
    await produce(url, `${prefix}-a`, ['a1'])
    await produce(url, `${prefix}-b`, ['b1', 'b2'])
    const group = uniqueName('g')
    const r = await runCli(['tail', '-t', `${prefix}-*`, '--group', group, '-e', '-f', '%t %s\\n', '-q', '-b', url], {timeoutMs: 45_000})
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(r.stdout.trim().split('\n').sort(), [`${prefix}-a a1`, `${prefix}-b b1`, `${prefix}-b b2`])
    const admin = await connectAdmin({broker: url})
    t.after(() => admin.close())
    const committed = await admin.fetchOffsets(group)
    assert.deepEqual([...new Set(committed.map((o) => o.topic))].sort(), [`${prefix}-a`, `${prefix}-b`])
    // Read again as the group: nothing is left.
    const again = await runCli(['tail', '-t', `${prefix}-*`, '--group', group, '-e', '-q', '-b', url], {timeoutMs: 45_000})
    assert.equal(again.code, 0, again.stderr)
    assert.equal(again.stdout, '')
  })
})
