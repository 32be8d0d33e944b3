/**
 * `meta topic list` and `meta topic describe` end to end: the built CLI against a real broker
 * in this process, configured with a topic that has data (3 and 1 records of 30 bytes in its
 * two partitions) and one configured without data. Tables and --json carry the broker's
 * numbers (a configured topic without data has its configured partitions); an unknown topic
 * is an error naming it.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import type {Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const INI = `[system]
numPartitions=2
[topic=orders]
[topic=quiet]
numPartitions=3
`

async function fixture(t: Cleanup): Promise<{url: string; sentAtMs: number}> {
  const broker = await startTestBroker(t, {ini: INI})
  const url = `127.0.0.1:${broker.port}`
  const producer = createProducer({broker: url})
  const sentAtMs = Date.now()
  for (let i = 0; i < 3; i++) await producer.send('orders', `message-${i}`.padEnd(10, '.'), {partition: 0})
  await producer.send('orders', 'message-3.', {partition: 1})
  await producer.close()
  return {url, sentAtMs}
}

function table(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s{2,}/))
}

describe('meta topic', () => {
  it('topic list prints partitions, messages and size per topic; --json has the numbers', async (t) => {
    const {url} = await fixture(t)
    const r = await runCli(['topic', 'list', '-b', url])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(table(r.stdout), [
      ['TOPIC', 'PARTITIONS', 'MESSAGES', 'SIZE'],
      ['orders', '2', '4', '120 B'],
      ['quiet', '3', '0', '0 B'],
    ])
    const json = JSON.parse((await runCli(['topic', 'list', '-b', url, '--json'])).stdout)
    assert.deepEqual(json, [
      {topic: 'orders', partitionCount: 2, messageCount: 4, sizeBytes: 120},
      {topic: 'quiet', partitionCount: 3, messageCount: 0, sizeBytes: 0},
    ])
  })

  it('topic describe prints each partition; --json has the numbers', async (t) => {
    const {url, sentAtMs} = await fixture(t)
    const r = await runCli(['topic', 'describe', 'orders', '-b', url])
    assert.equal(r.code, 0, r.stderr)
    const rows = table(r.stdout)
    assert.deepEqual(rows[0], ['PARTITION', 'LOG-START', 'LOG-END', 'MESSAGES', 'SIZE', 'SEGMENTS', 'LAST-APPEND'])
    assert.deepEqual(rows[1].slice(0, 6), ['0', '0', '90', '3', '90 B', '1'])
    assert.deepEqual(rows[2].slice(0, 6), ['1', '0', '30', '1', '30 B', '1'])
    assert.match(rows[1][6], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)

    const json = JSON.parse((await runCli(['topic', 'describe', 'orders', '-b', url, '--json'])).stdout)
    assert.equal(json.topic, 'orders')
    assert.deepEqual(
      json.partitions.map((p: Record<string, number>) => [p.partition, p.minOffset, p.maxOffset, p.messageCount, p.sizeBytes, p.segments]),
      [
        [0, 0, 90, 3, 90, 1],
        [1, 0, 30, 1, 30, 1],
      ],
    )
    assert.ok(json.partitions[0].lastAppendMs >= sentAtMs - 1000)
  })

  it('topic describe shows the partitions of a configured topic without data as empty', async (t) => {
    const {url} = await fixture(t)
    const r = await runCli(['topic', 'describe', 'quiet', '-b', url])
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(table(r.stdout).slice(1), [
      ['0', '0', '0', '0', '0 B', '0', '-'],
      ['1', '0', '0', '0', '0 B', '0', '-'],
      ['2', '0', '0', '0', '0 B', '0', '-'],
    ])
  })

  it('topic describe -p N shows one partition in detail, with the groups that committed offsets there', async (t) => {
    const {url} = await fixture(t)
    const admin = await connectAdmin({broker: url})
    await admin.commitOffsets('billing', [{topic: 'orders', partition: 0, offset: 30, msgId: '-1'}])
    await admin.commitOffsets('audit', [{topic: 'orders', partition: 1, offset: 0, msgId: '-1'}])
    admin.close()
    const r = await runCli(['topic', 'describe', 'orders', '-p', '0', '-b', url])
    assert.equal(r.code, 0, r.stderr)
    const [detail, groups] = r.stdout.trim().split('\n\n').map(table)
    assert.deepEqual(detail.slice(0, 8), [
      ['TOPIC', 'orders'],
      ['PARTITION', '0'],
      ['LOG-START', '0'],
      ['LOG-END', '90'],
      ['MESSAGES', '3'],
      ['SIZE', '90 B'],
      ['SEGMENTS', '1'],
      ['UNFLUSHED', detail[7][1]],
    ])
    assert.match(detail[8][1], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
    assert.deepEqual(
      groups.map((row) => row.slice(0, 4)),
      [
        ['GROUP', 'COMMITTED', 'LAG', 'LAG-BYTES'],
        ['billing', '30', '2', '60'],
      ],
    )
    const json = JSON.parse((await runCli(['topic', 'describe', 'orders', '-p', '1', '-b', url, '--json'])).stdout)
    assert.equal(json.partition, 1)
    assert.equal(json.stats.maxOffset, 30)
    assert.deepEqual(
      json.groups.map((g: Record<string, unknown>) => [g.group, g.committed, g.lagMessages, g.lagBytes]),
      [['audit', 0, 1, 30]],
    )
    const bad = await runCli(['topic', 'describe', 'orders', '-p', '5', '-b', url])
    assert.equal(bad.code, 1)
    assert.equal(bad.stderr, 'error [INVALID_ARGUMENT]: invalid partition "5" for topic "orders": expected 0..1\n')
  })

  it('topic describe of an unknown topic is an error naming it and the known topics', async (t) => {
    const {url} = await fixture(t)
    const r = await runCli(['topic', 'describe', 'nope', '-b', url])
    assert.equal(r.code, 1)
    assert.equal(r.stdout, '')
    assert.match(
      r.stderr,
      /^error \[NOT_FOUND\]: topic "nope" does not exist on broker 127\.0\.0\.1:\d+\nhint: topics on broker 127\.0\.0\.1:\d+: orders, quiet\n$/,
    )
    const close = await runCli(['topic', 'describe', 'ordrs', '-b', url])
    assert.equal(close.code, 1)
    assert.match(close.stderr, /^error \[NOT_FOUND\]: topic "ordrs" does not exist on broker 127\.0\.0\.1:\d+\nhint: did you mean "orders"\?\n$/)
    const bad = await runCli(['topic', 'describe', 'bad/name', '-b', url])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /error \[USAGE\]: invalid topic "bad\/name": must not contain "\/"/)
  })
})
