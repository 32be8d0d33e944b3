/**
 * The producer's local transactions against a real broker: sends inside a transaction resolve
 * with id and partition (offset -1) and are invisible until commit; commit shows all of them;
 * rollback and a failed send leave nothing; the transactional put-batch path and the plain
 * transactional put path (a broker without the capability) both work.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, readPartition} from '../helpers/raw-client.js'
import {uniqueName} from '../helpers/index.js'
import {createProducer} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/errors.js'

describe('producer transactions', () => {
  it('commit makes every message visible; sends resolve with id and partition, offset -1', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const reader = await RawClient.connect(t, broker.port)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const topic = uniqueName()
    const tx = producer.beginTransaction({timeoutSeconds: 30})
    assert.match(tx.key, /^TX:[^:]+:1$/)
    const results = await Promise.all(Array.from({length: 10}, (_, i) => producer.send(topic, `m${i}`)))
    for (const r of results) {
      assert.equal(r.success, true, r.errorMessage)
      assert.equal(r.offset, -1)
      assert.equal(typeof r.id, 'bigint')
    }
    assert.deepEqual([...(await readPartition(reader, topic, 0)), ...(await readPartition(reader, topic, 1))], [], 'invisible before commit')
    const summary = await producer.commit()
    assert.equal(summary.messages, 10)
    // Fresh partitions: each batch starts at 0; five 22-byte records end with one at 88.
    assert.deepEqual(
      summary.partitions.map((p) => [p.partition, p.messages, p.firstOffset, p.lastOffset]),
      [
        [0, 5, 0, 88],
        [1, 5, 0, 88],
      ],
    )
    assert.deepEqual(await readPartition(reader, topic, 0), ['m0', 'm2', 'm4', 'm6', 'm8'])
    assert.deepEqual(await readPartition(reader, topic, 1), ['m1', 'm3', 'm5', 'm7', 'm9'])
    assert.equal(producer.currentTransaction, undefined)
    // Outside a transaction sends are plain again.
    const plain = await producer.send(topic, 'after', {partition: 0})
    assert.ok(plain.offset >= 0)
  })

  it('rollback leaves nothing; a failed send makes commit roll back and reject', async (t) => {
    const broker = await startTestBroker(t)
    const reader = await RawClient.connect(t, broker.port)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const topic = uniqueName()
    producer.beginTransaction()
    await producer.send(topic, 'gone')
    await producer.rollback()
    assert.deepEqual(await readPartition(reader, topic, 0), [])

    producer.beginTransaction()
    assert.equal((await producer.send(topic, 'a')).success, true)
    const bad = await producer.send(topic, 'b', {partition: 7})
    assert.equal(bad.success, false)
    await assert.rejects(producer.commit(), (error) => isMetaError(error, 'TRANSACTION_ERROR') && /rolled back/.test((error as Error).message))
    assert.deepEqual(await readPartition(reader, topic, 0), [])
    producer.beginTransaction()
    assert.throws(() => producer.beginTransaction(), /still open/)
    await producer.rollback()
  })

  it('a message too large for a batch goes as a plain transactional put', async (t) => {
    const broker = await startTestBroker(t)
    const reader = await RawClient.connect(t, broker.port)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const topic = uniqueName()
    producer.beginTransaction()
    const big = 'x'.repeat(300 * 1024)
    const [r1, r2] = await Promise.all([producer.send(topic, big), producer.send(topic, 'small')])
    assert.equal(r1.success, true, r1.errorMessage)
    assert.equal(r2.success, true, r2.errorMessage)
    assert.equal((await producer.commit()).messages, 2)
    assert.deepEqual(
      (await readPartition(reader, topic, 0)).map((m) => m.length),
      [big.length, 5],
    )
  })
})
