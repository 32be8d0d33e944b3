/**
 * StandaloneGroupAdmin against a real broker: partitions, bounds and the side-index seeks of
 * a topic with records of known sizes (20-byte header + payload), committed offsets round
 * trip, group listing and description with a live member, and the errors for unknown topics
 * and groups.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createGroupConsumer, createProducer} from '../../src/client/index.js'
import {connectGroupAdmin, type GroupOffsetsAdmin} from '../../src/client/group-admin.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {messageIdTimestamp} from '../../src/protocol/message-id.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

const RECORD_BYTES = 30 // 20-byte header + 10-byte payload

async function admin(t: Cleanup, port: number): Promise<GroupOffsetsAdmin> {
  const a = await connectGroupAdmin({broker: `127.0.0.1:${port}`})
  t.after(() => a.close())
  return a
}

describe('StandaloneGroupAdmin', () => {
  it('answers partitions, bounds, seeks and counts in byte offsets and messages', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 3, brokerId: 7})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName()
    const producer = createProducer({broker: url})
    const sent = []
    for (let i = 0; i < 10; i++) sent.push(await producer.send(topic, `payload-${String(i).padStart(2, '0')}`, {partition: 1}))
    await producer.close()
    assert.ok(sent.every((s) => s.success))
    const a = await admin(t, broker.port)

    assert.deepEqual(await a.partitions(topic), [0, 1, 2])
    assert.equal(a.brokerIdOf(topic, 1), 7)
    assert.deepEqual(await a.bounds(topic, 1), {start: 0, end: 10 * RECORD_BYTES})
    assert.deepEqual(await a.bounds(topic, 2), {start: 0, end: 0}, 'a partition without data')

    assert.equal(await a.seekLast(topic, 1, 3), 7 * RECORD_BYTES)
    assert.equal(await a.seekLast(topic, 1, 50), 0, 'more than the log holds: the start')
    assert.equal(await a.shift(topic, 1, 4 * RECORD_BYTES, -2), 2 * RECORD_BYTES)
    assert.equal(await a.shift(topic, 1, 4 * RECORD_BYTES, 100), 10 * RECORD_BYTES, 'clamped to the end')
    assert.equal(await a.shift(topic, 1, 4 * RECORD_BYTES + 5, 0), 5 * RECORD_BYTES, 'inside a record: the next boundary')
    assert.equal(await a.count(topic, 1, 2 * RECORD_BYTES, 10 * RECORD_BYTES), 8)

    const fifth = messageIdTimestamp(sent[5].id!)
    const firstAtFifth = sent.findIndex((s) => messageIdTimestamp(s.id!) >= fifth)
    assert.equal(await a.seekTime(topic, 1, fifth), firstAtFifth * RECORD_BYTES)
    assert.equal(await a.seekTime(topic, 1, Date.now() + 60_000), 10 * RECORD_BYTES, 'after the last message: the end')

    for (const call of [a.seekTime(topic, 2, 0), a.seekLast(topic, 2, 1), a.shift(topic, 2, 0, 1), a.count(topic, 2, 0, 100)]) {
      assert.equal(await call, 0, 'a partition without a log answers 0')
    }
  })

  it('refuses a topic the broker does not accept, naming it', async (t) => {
    const broker = await startTestBroker(t, {ini: '[topic=orders]\nnumPartitions=2\n'})
    const a = await admin(t, broker.port)
    assert.deepEqual(await a.partitions('orders'), [0, 1])
    await assert.rejects(a.partitions('nope'), (error) => isMetaError(error, 'INVALID_ARGUMENT') && /unknown topic "nope"/.test(error.message))
  })

  it('commits, fetches, lists and describes groups, with live members', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName()
    const group = uniqueName('group')
    const a = await admin(t, broker.port)

    await assert.rejects(a.describeGroup(group), (error) => isMetaError(error, 'NOT_FOUND'))
    assert.deepEqual(await a.fetchOffsets(group), [])
    // Two records of 10 bytes: partition 1 ends at 60; the broker refuses commits past the end.
    const producer = createProducer({broker: url})
    for (let i = 0; i < 2; i++) assert.ok((await producer.send(topic, 'ten bytes!', {partition: 1})).success)
    await producer.close()
    await assert.rejects(a.commitOffsets(group, [{topic, partition: 1, offset: 61, msgId: '-1'}]), (error) => isMetaError(error))
    await a.commitOffsets(group, [{topic, partition: 1, offset: 60, msgId: '-1'}])
    const [offset] = await a.fetchOffsets(group, [topic])
    assert.equal(offset.offset, 60)
    assert.ok(offset.committedAtMs! > 0)
    assert.deepEqual(await a.fetchOffsets(group, ['other']), [])

    const member = createGroupConsumer({broker: url, group, topics: [topic], memberId: 'm1', sessionTimeoutMs: 5000})
    t.after(() => member.stop())
    void member.run({eachMessage: () => {}})
    const described = await waitFor(
      async () => {
        const d = await a.describeGroup(group)
        return d.members.length === 1 && d.members[0].owned.length === 2 ? d : undefined
      },
      {what: 'member m1 to own both partitions'},
    )
    assert.equal(described.members[0].id, 'm1')
    assert.match(described.members[0].host, /^127\.0\.0\.1:\d+$/)
    const listed = (await a.listGroups()).find((g) => g.group === group)
    assert.deepEqual(listed && {members: listed.members, topics: listed.topics}, {members: 1, topics: [topic]})
    assert.ok(listed!.generation > 0)
  })
})
