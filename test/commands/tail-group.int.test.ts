/**
 * `meta tail --group` through the built CLI against a real standalone broker: two members split
 * the partitions; a member killed with SIGKILL is replaced after the session timeout; a member
 * that exits resumes where the group left off. Also the side-index start positions -N and @time.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {exited, runCli, spawnCli} from '../helpers/process.js'
import {uniqueName, waitFor} from '../helpers/index.js'

async function produce(url: string, topic: string, payloads: string[], partitions?: number): Promise<void> {
  const producer = createProducer({broker: url})
  let i = 0
  for (const p of payloads) await producer.send(topic, p, partitions === undefined ? {} : {partition: i++ % partitions})
  await producer.close()
}

describe('meta tail --group', () => {
  it('splits partitions between two members and hands them over when one is killed', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName()
    const group = uniqueName('group')
    const outputs = ['', '']
    const members = [0, 1].map((i) => {
      const child = spawnCli(['tail', '-t', topic, '-b', url, '--group', group, '--session-timeout', '1s', '-q', '-f', '%p %s\\n'])
      t.after(() => child.kill('SIGKILL'))
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (outputs[i] += d))
      return child
    })
    const admin = await connectAdmin({broker: url})
    t.after(() => admin.close())
    const owners = async () =>
      (await admin.describeGroup(group)).members.map((m) =>
        m.owned
          .map((o) => o.partition)
          .sort()
          .join(','),
      )
    await waitFor(async () => (await owners()).sort().join('|') === '0,1|2,3', {what: 'two members owning 2 partitions each', timeoutMs: 20_000})

    await produce(
      url,
      topic,
      Array.from({length: 8}, (_, i) => `m${i}`),
      4,
    )
    await waitFor(() => outputs.join('').trim().split('\n').length === 8, {what: 'all 8 messages printed', timeoutMs: 10_000})
    const partitionsOf = (text: string) =>
      new Set(
        text
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ')[0]),
      )
    const [a, b] = outputs.map(partitionsOf)
    assert.equal([...a].filter((p) => b.has(p)).length, 0, 'no partition printed by both members')
    assert.deepEqual(
      outputs
        .join('')
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[1])
        .sort(),
      Array.from({length: 8}, (_, i) => `m${i}`).sort(),
    )

    members[0].kill('SIGKILL')
    await exited(members[0])
    await waitFor(async () => (await owners()).join('|') === '0,1,2,3', {what: 'the survivor to own every partition', timeoutMs: 15_000})
    const before = outputs[1]
    await produce(url, topic, ['late0', 'late1', 'late2', 'late3'], 4)
    await waitFor(() => ['late0', 'late1', 'late2', 'late3'].every((m) => outputs[1].slice(before.length).includes(m)), {
      what: 'the survivor to print the late messages',
    })
    members[1].kill('SIGTERM')
    assert.equal((await exited(members[1])).code, 0)
  })

  it('resumes where the group left off, and reads without committing with --no-commit', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName()
    const group = uniqueName('group')
    await produce(url, topic, ['a', 'b', 'c'])
    const first = await runCli(['tail', '-t', topic, '-b', url, '--group', group, '-e', '-q'])
    assert.equal(first.code, 0, first.stderr)
    assert.deepEqual(first.stdout.trim().split('\n').sort(), ['a', 'b', 'c'])
    await produce(url, topic, ['d', 'e'])
    const peek = await runCli(['tail', '-t', topic, '-b', url, '--group', group, '-e', '-q', '--no-commit'])
    assert.deepEqual(peek.stdout.trim().split('\n').sort(), ['d', 'e'])
    const second = await runCli(['tail', '-t', topic, '-b', url, '--group', group, '-e', '-q'])
    assert.deepEqual(second.stdout.trim().split('\n').sort(), ['d', 'e'], 'the peek did not move the group')
    const third = await runCli(['tail', '-t', topic, '-b', url, '--group', group, '-e', '-q'])
    assert.equal(third.stdout, '', 'nothing new')
  })

  it('refuses --group with -p, and -o stored without --group', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const both = await runCli(['tail', '-t', 'x', '-b', url, '--group', 'g', '-p', '0', '-e'])
    assert.equal(both.code, 2)
    assert.match(both.stderr, /--partition=0 cannot also be provided when using --group/)
    const stored = await runCli(['tail', '-t', 'x', '-b', url, '-o', 'stored', '-e'])
    assert.equal(stored.code, 2)
    assert.match(stored.stderr, /-o stored needs a consumer group: add --group <name>/)
  })
})

describe('meta tail -o with the side index', () => {
  it('starts at the last N messages (-N), after N (+N), and at a time (@)', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName()
    await produce(url, topic, ['old1', 'old2'])
    const split = Date.now()
    await waitFor(() => Date.now() > split, {what: 'the clock to move past the old messages'})
    await produce(url, topic, ['new1', 'new2', 'new3'])
    const last = await runCli(['tail', '-t', topic, '-b', url, '-o', '-2', '-e', '-q'])
    assert.deepEqual(last.stdout.trim().split('\n'), ['new2', 'new3'])
    const skip = await runCli(['tail', '-t', topic, '-b', url, '-o', '+3', '-e', '-q'])
    assert.deepEqual(skip.stdout.trim().split('\n'), ['new2', 'new3'])
    const time = await runCli(['tail', '-t', topic, '-b', url, '-o', `@${new Date(split + 1).toISOString()}`, '-e', '-q'])
    assert.deepEqual(time.stdout.trim().split('\n'), ['new1', 'new2', 'new3'])
    const hour = await runCli(['tail', '-t', topic, '-b', url, '-o', '@-1h', '-e', '-q'])
    assert.equal(hour.stdout.trim().split('\n').length, 5)
  })
})
