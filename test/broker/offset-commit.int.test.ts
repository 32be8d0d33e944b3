/**
 * offset-commit validation (docs/protocol.md#standalone-consumer-groups): the broker's offset store
 * refuses a commit for a partition the topic does not have, or at an offset beyond the end of the
 * partition's log, with a 400 naming the value and the range; nothing of a refused commit is
 * stored.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {uniqueName} from '../helpers/index.js'

function commitFrame(group: string, offsets: unknown[], opaque: number): string {
  const body = JSON.stringify(offsets)
  return `offset-commit ${group} ${Buffer.byteLength(body)} ${opaque}\r\n${body}`
}

async function fetched(client: RawClient, group: string): Promise<Array<{topic: string; partition: number; offset: number}>> {
  return JSON.parse(text(await client.request(`offset-fetch ${group} 0 99\r\n`)))
}

describe('offset-commit', () => {
  it('refuses a partition the topic does not have, and an offset beyond the log end', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const ack = await client.request(`put ${topic} 0 5 0 -1 1\r\nhello`)
    assert.equal(ack.type === 'result' && ack.code, 200)
    const end = 25 // one record: 20-byte header + 5 bytes

    const noPartition = await client.request(commitFrame('g', [{topic, partition: 99, offset: 1e13, msgId: '-1'}], 2))
    assert.equal(noPartition.type === 'result' && noPartition.code, 400)
    assert.match(text(noPartition), new RegExp(`invalid partition 99 for topic "${topic}": expected 0\\.\\.1`))

    const pastEnd = await client.request(commitFrame('g', [{topic, partition: 0, offset: 1e13, msgId: '-1'}], 3))
    assert.equal(pastEnd.type === 'result' && pastEnd.code, 400)
    assert.match(text(pastEnd), new RegExp(`invalid offset 10000000000000 for "${topic}" partition 0: expected 0\\.\\.${end}`))

    const emptyPartition = await client.request(commitFrame('g', [{topic, partition: 1, offset: 7, msgId: '-1'}], 4))
    assert.equal(emptyPartition.type === 'result' && emptyPartition.code, 400, 'a partition with no data ends at 0')

    const mixed = await client.request(
      commitFrame(
        'g',
        [
          {topic, partition: 0, offset: end, msgId: '-1'},
          {topic, partition: 0, offset: end + 1, msgId: '-1'},
        ],
        5,
      ),
    )
    assert.equal(mixed.type === 'result' && mixed.code, 400, 'one bad entry refuses the whole commit')
    assert.deepEqual(await fetched(client, 'g'), [], 'nothing of a refused commit is stored')

    const refusedTopic = await client.request(commitFrame('g', [{topic: 'bad/topic', partition: 0, offset: 0, msgId: '-1'}], 6))
    assert.equal(refusedTopic.type === 'result' && refusedTopic.code, 400)

    for (const [partition, offset] of [
      [0, end],
      [0, 0],
      [1, 0],
    ]) {
      const ok = await client.request(commitFrame('g', [{topic, partition, offset, msgId: '-1'}], 7))
      assert.equal(ok.type === 'result' && ok.code, 200, `partition ${partition} offset ${offset} is valid`)
    }
    assert.deepEqual(
      (await fetched(client, 'g')).map((o) => [o.partition, o.offset]),
      [
        [0, 0],
        [1, 0],
      ],
    )
  })

  it('refuses a malformed body with 400 naming the entry and field (protocol decodeCommittedOffsets)', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    const bad = await client.request(
      commitFrame(
        'g',
        [
          {topic, partition: 0, offset: 0},
          {topic, partition: 'x', offset: 0},
        ],
        1,
      ),
    )
    assert.equal(bad.type === 'result' && bad.code, 400)
    assert.equal(text(bad), 'invalid offset-commit body: "[1].partition" is "x": expected an integer >= 0 [code=BAD_REQUEST]')
    assert.deepEqual(await fetched(client, 'g'), [], 'nothing of a refused commit is stored')
  })

  it('refuses a topic that this broker does not accept', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\nnumPartitions=1\n[topic=known]\n'})
    const client = await RawClient.connect(t, broker.port)
    const refused = await client.request(commitFrame('g', [{topic: 'unknown', partition: 0, offset: 0, msgId: '-1'}], 1))
    assert.equal(refused.type === 'result' && refused.code, 400)
    assert.match(text(refused), /unknown/)
    const ok = await client.request(commitFrame('g', [{topic: 'known', partition: 0, offset: 0, msgId: '-1'}], 2))
    assert.equal(ok.type === 'result' && ok.code, 200)
  })
})
