/**
 * The producer's bounds and its isolation from application code, against
 * a real broker: a send callback that throws neither drops the connection nor strands the
 * other messages, and reaches 'error' listeners; maxQueuedBytes bounds what is on its way to
 * the broker while every message still goes, in order; a broker that comes back with fewer
 * partitions makes the producer look them up again.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {BrokerConnection, createProducer, StandaloneTopology, type SendResult} from '../../src/client/index.js'
import {encodeVersion, isMetaError} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {clientFixture} from '../helpers/client.js'
import {tmpDir, uniqueName, withDeadline} from '../helpers/index.js'

describe('Producer limits and callbacks', () => {
  it('a send callback that throws reaches error listeners; the connection and the other sends carry on', async (t) => {
    const f = await clientFixture(t)
    const topology = new StandaloneTopology({broker: f.url})
    t.after(() => topology.close())
    let disconnects = 0
    topology.conn.on('disconnect', () => (disconnects += 1))
    const producer = createProducer({topology})
    t.after(() => producer.close())
    const reported: Error[] = []
    producer.on('error', (error) => reported.push(error as Error))
    await producer.send(f.topic, 'warm up')
    const results: SendResult[] = []
    // One turn: the three go to the broker together (one put-batch), so a throw in the first
    // callback would once have stranded the others.
    producer.sendCallback(f.topic, 'a', {}, () => {
      throw new Error('bug in the application')
    })
    producer.sendCallback(f.topic, 'b', {}, (r) => results.push(r))
    producer.sendCallback(f.topic, 'c', {}, (r) => results.push(r))
    await withDeadline(producer.flush(), 10_000, 'every send to complete')
    assert.deepEqual(
      results.map((r) => r.success),
      [true, true],
    )
    assert.deepEqual(
      reported.map((e) => e.message),
      ['bug in the application'],
    )
    assert.ok((await producer.send(f.topic, 'd')).success)
    assert.equal(disconnects, 0, 'the connection was not dropped')
  })

  it('a response callback that throws does not drop a BrokerConnection', async (t) => {
    const f = await clientFixture(t)
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: f.broker.port})
    t.after(() => conn.close())
    const reported: Error[] = []
    conn.on('error', (error: Error) => reported.push(error))
    let disconnects = 0
    conn.on('disconnect', () => (disconnects += 1))
    await new Promise<void>((resolve) => {
      conn.request(
        (out, opaque) => encodeVersion(out, {opaque}),
        () => {
          resolve()
          throw new Error('thrown by the caller')
        },
      )
    })
    assert.equal(await conn.version(), '1.4.6.2', 'the next request is answered on the same connection')
    assert.deepEqual(
      reported.map((e) => e.message),
      ['thrown by the caller'],
    )
    assert.equal(disconnects, 0)
  })

  it('maxQueuedBytes bounds the bytes on their way to the broker; the rest wait and all go, in order', async (t) => {
    const f = await clientFixture(t)
    const maxQueuedBytes = 64 * 1024
    const producer = createProducer({broker: f.url, maxQueuedBytes})
    t.after(() => producer.close())
    const payload = Buffer.alloc(10 * 1024, 0x61)
    let peak = 0
    let refusedAt = -1
    const pending: Array<Promise<SendResult>> = []
    for (let i = 0; i < 50; i++) {
      pending.push(
        new Promise((resolve) => {
          const more = producer.sendCallback(f.topic, payload, {}, (r) => {
            peak = Math.max(peak, producer.inFlightBytes)
            resolve(r)
          })
          if (!more && refusedAt < 0) refusedAt = i
        }),
      )
      peak = Math.max(peak, producer.inFlightBytes)
    }
    assert.equal(producer.queuedBytes, 50 * payload.length, 'all 50 accepted')
    assert.ok(producer.inFlightBytes <= maxQueuedBytes, `${producer.inFlightBytes} bytes in flight right after sending`)
    assert.equal(refusedAt, 6, 'sendCallback says "wait for drain" once the queue holds maxQueuedBytes')
    const drained = new Promise<void>((resolve) => producer.once('drain', () => resolve()))
    const results = await withDeadline(Promise.all(pending), 20_000, 'all 50 sends')
    await drained
    assert.ok(peak <= maxQueuedBytes, `peak ${peak} bytes in flight`)
    assert.ok(results.every((r) => r.success))
    const offsets = results.map((r) => r.offset)
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
      'stored in the order sent',
    )
    assert.equal(producer.queuedBytes, 0)
  })

  it('a message larger than maxQueuedBytes still goes, alone', async (t) => {
    const f = await clientFixture(t)
    const producer = createProducer({broker: f.url, maxQueuedBytes: 1000})
    t.after(() => producer.close())
    const [big, small] = await Promise.all([producer.send(f.topic, Buffer.alloc(5000)), producer.send(f.topic, 'after')])
    assert.ok(big.success && small.success)
    assert.ok(small.offset > big.offset)
  })

  it('looks partitions up again when the broker comes back with fewer (INVALID_PARTITION)', async (t) => {
    const topic = uniqueName()
    const first = await startTestBroker(t, {numPartitions: 4, dataPath: await tmpDir(t)})
    const port = first.port
    const producer = createProducer({broker: `127.0.0.1:${port}`, retries: 3})
    t.after(() => producer.close())
    for (let i = 0; i < 4; i++) assert.ok((await producer.send(topic, `before-${i}`)).success)
    await first.close()
    await startTestBroker(t, {numPartitions: 2, dataPath: await tmpDir(t), serverPort: port})
    const results: SendResult[] = []
    for (let i = 0; i < 8; i++) results.push(await producer.send(topic, `after-${i}`))
    assert.deepEqual(
      results.filter((r) => !r.success).map((r) => r.error?.code),
      [],
    )
    assert.ok(results.every((r) => r.partition < 2))
    const pinned = await producer.send(topic, 'pinned', {partition: 3})
    assert.ok(!pinned.success && isMetaError(pinned.error, 'INVALID_ARGUMENT'), 'a partition the caller chose is not moved')
  })
})
