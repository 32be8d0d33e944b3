/**
 * `meta offset show`, `meta group list` and `meta group describe` end to end: the built CLI
 * against a real broker in this process. Two partitions hold 10 and 4 records of 30 bytes
 * (20-byte header + 10-byte payload); the group committed 90 (message 3) on partition 0 and
 * nothing on partition 1, so its lag is 210 bytes / 7 messages and `-`. A live member makes
 * the group's generation, members and owners visible.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createGroupConsumer, createProducer} from '../../src/client/index.js'
import {startHeldMember} from '../helpers/members.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

interface Fixture {
  url: string
  topic: string
  group: string
}

async function fixture(t: Cleanup): Promise<Fixture> {
  const broker = await startTestBroker(t, {numPartitions: 2})
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName('orders')
  const group = uniqueName('billing')
  const producer = createProducer({broker: url})
  for (let i = 0; i < 10; i++) await producer.send(topic, `message-${i}`.padEnd(10, '.'), {partition: 0})
  for (let i = 0; i < 4; i++) await producer.send(topic, `message-${i}`.padEnd(10, '.'), {partition: 1})
  await producer.close()
  const admin = await connectAdmin({broker: url})
  await admin.commitOffsets(group, [{topic, partition: 0, offset: 90, msgId: '-1'}])
  admin.close()
  return {url, topic, group}
}

/** Rows of a table (header first), cells split on runs of spaces. */
function table(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s{2,}/))
}

async function cli(args: string[]) {
  const r = await runCli(args, {timeoutMs: 20_000})
  return r
}

describe('meta offset show', () => {
  it('prints committed offsets, log bounds and lag in bytes and messages; - where nothing is committed', async (t) => {
    const f = await fixture(t)
    const r = await cli(['offset', 'show', '-b', f.url, '-g', f.group, '-t', f.topic])
    assert.equal(r.code, 0, r.stderr)
    const rows = table(r.stdout)
    assert.deepEqual(rows[0], ['TOPIC', 'PARTITION', 'COMMITTED', 'LOG-START', 'LOG-END', 'LAG', 'LAG-BYTES', 'COMMITTED-AT'])
    assert.deepEqual(rows[1].slice(0, 7), [f.topic, '0', '90', '0', '300', '7', '210'])
    assert.match(rows[1][7], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    assert.deepEqual(rows[2], [f.topic, '1', '-', '0', '120', '-', '-', '-'])
  })

  it('--json carries the numbers; without --topic it shows the topics the group committed', async (t) => {
    const f = await fixture(t)
    const r = await cli(['offset', 'show', '-b', f.url, '-g', f.group, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const result = JSON.parse(r.stdout)
    assert.equal(result.group, f.group)
    assert.ok(result.partitions[0].committedAtMs > 0)
    assert.deepEqual(
      result.partitions.map((p: Record<string, unknown>) => ({...p, committedAtMs: undefined})),
      [
        {topic: f.topic, brokerId: 0, partition: 0, committed: 90, logStart: 0, logEnd: 300, lagBytes: 210, lagMessages: 7, committedAtMs: undefined},
        {topic: f.topic, brokerId: 0, partition: 1, committed: null, logStart: 0, logEnd: 120, lagBytes: null, lagMessages: null, committedAtMs: undefined},
      ],
    )
  })

  it('limits rows to --topic T:p and names an unknown group or partition', async (t) => {
    const f = await fixture(t)
    const one = JSON.parse((await cli(['offset', 'show', '-b', f.url, '-g', f.group, '-t', `${f.topic}:1`, '--json'])).stdout)
    assert.deepEqual(
      one.partitions.map((p: {partition: number}) => p.partition),
      [1],
    )
    const unknown = await cli(['offset', 'show', '-b', f.url, '-g', 'nobody'])
    assert.equal(unknown.code, 1)
    assert.match(unknown.stderr, /error \[NOT_FOUND\]: unknown group "nobody"/)
    const bad = await cli(['offset', 'show', '-b', f.url, '-g', f.group, '-t', `${f.topic}:5`])
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, new RegExp(`invalid partition "5" for topic "${f.topic}": expected 0\\.\\.1`))
  })
})

describe('meta group', () => {
  it('group list shows groups with members, generation and topics; --json has the numbers', async (t) => {
    const f = await fixture(t)
    const idle = uniqueName('idle')
    const admin = await connectAdmin({broker: f.url})
    await admin.commitOffsets(idle, [{topic: f.topic, partition: 1, offset: 0, msgId: '-1'}])
    admin.close()
    const member = createGroupConsumer({broker: f.url, group: f.group, topics: [f.topic], memberId: 'm-1', sessionTimeoutMs: 10_000})
    t.after(() => member.stop())
    void member.run({eachMessage: () => {}})
    await waitFor(
      async () => JSON.parse((await cli(['group', 'list', '-b', f.url, '--json'])).stdout).some((g: {memberCount: number}) => g.memberCount === 1),
      {
        what: 'the member to join',
        timeoutMs: 30_000,
      },
    )

    const r = await cli(['group', 'list', '-b', f.url])
    assert.equal(r.code, 0, r.stderr)
    const rows = table(r.stdout)
    assert.deepEqual(rows[0], ['GROUP', 'MEMBERS', 'GENERATION', 'TOPICS'])
    const byGroup = new Map(rows.slice(1).map((row) => [row[0], row]))
    assert.deepEqual(byGroup.get(f.group)?.slice(1, 2), ['1'])
    assert.ok(Number(byGroup.get(f.group)?.[2]) > 0)
    assert.equal(byGroup.get(f.group)?.[3], f.topic)
    assert.deepEqual(byGroup.get(idle), [idle, '0', '0', f.topic])

    const json = JSON.parse((await cli(['group', 'list', '-b', f.url, '--json'])).stdout)
    assert.deepEqual(
      json.find((g: {group: string}) => g.group === idle),
      {group: idle, generation: 0, memberCount: 0, topics: [f.topic]},
    )
  })

  it('group describe shows the summary, members and per-partition lag with owners', async (t) => {
    const f = await fixture(t)
    startHeldMember(t, {broker: f.url, group: f.group, topic: f.topic, memberId: 'm-1'})
    const detail = await waitFor(
      async () => {
        const r = await cli(['group', 'describe', f.group, '-b', f.url, '--json'])
        const d = JSON.parse(r.stdout)
        return d.partitions?.every((p: {owner: string | null}) => p.owner === 'm-1') ? d : undefined
      },
      {what: 'm-1 to own both partitions', timeoutMs: 30_000},
    )
    assert.equal(detail.group, f.group)
    assert.ok(detail.generation > 0)
    assert.deepEqual(
      detail.members.map((m: {id: string; topics: string[]}) => [m.id, m.topics]),
      [['m-1', [f.topic]]],
    )
    assert.deepEqual(detail.partitions[0], {
      topic: f.topic,
      brokerId: 0,
      partition: 0,
      committed: 90,
      logStart: 0,
      logEnd: 300,
      lagBytes: 210,
      lagMessages: 7,
      committedAtMs: detail.partitions[0].committedAtMs,
      owner: 'm-1',
    })
    assert.equal(detail.partitions[1].committed, null)
    assert.equal(detail.partitions[1].lagMessages, null)

    const r = await cli(['group', 'describe', f.group, '-b', f.url])
    assert.equal(r.code, 0, r.stderr)
    const [summary, members, partitions] = r.stdout.trim().split('\n\n').map(table)
    assert.deepEqual(summary, [
      ['GROUP', 'GENERATION', 'MEMBERS'],
      [f.group, String(detail.generation), '1'],
    ])
    assert.deepEqual(members[0], ['MEMBER', 'HOST', 'IDLE', 'SESSION-TIMEOUT', 'TOPICS', 'PARTITIONS'])
    assert.equal(members[1][0], 'm-1')
    assert.match(members[1][1], /^127\.0\.0\.1:\d+$/)
    assert.match(members[1][2], /^\d+(\.\d)?(ms|s)$|^\d+m\d+s$/)
    assert.equal(members[1][3], '10s')
    assert.equal(members[1][5], `${f.topic}:0,${f.topic}:1`)
    assert.deepEqual(partitions, [
      ['TOPIC', 'PARTITION', 'COMMITTED', 'LOG-START', 'LOG-END', 'LAG', 'LAG-BYTES', 'OWNER'],
      [f.topic, '0', '90', '0', '300', '7', '210', 'm-1'],
      [f.topic, '1', '-', '0', '120', '-', '-', 'm-1'],
    ])
  })

  it('group describe of an unknown group is an error naming it (exit 1, JSON error with --json)', async (t) => {
    const f = await fixture(t)
    const r = await cli(['group', 'describe', 'ghost', '-b', f.url])
    assert.equal(r.code, 1)
    assert.equal(r.stdout, '')
    assert.match(r.stderr, /^error \[NOT_FOUND\]: unknown group "ghost": it has no members and no committed offsets\n/)
    const json = await cli(['group', 'describe', 'ghost', '-b', f.url, '--json'])
    assert.equal(json.code, 1)
    assert.equal(JSON.parse(json.stdout).error.code, 'NOT_FOUND')
  })
})
