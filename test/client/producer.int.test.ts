/**
 * The producer against a real broker: pipelined sends all acknowledged in order, MetaQ's
 * SendResult, each partition selector, explicit partitions and client-side validation.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connect, createServer, type AddressInfo} from 'node:net'
import {createConsumer, createProducer, stringHash, type SendResult} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'

async function sendMany(
  producer: ReturnType<typeof createProducer>,
  topic: string,
  count: number,
  payload: (i: number) => string,
  attribute?: (i: number) => string,
): Promise<SendResult[]> {
  const results: SendResult[] = new Array(count)
  await new Promise<void>((resolve) => {
    let sent = 0
    let done = 0
    const pump = () => {
      while (sent < count) {
        const i = sent++
        const more = producer.sendCallback(topic, payload(i), {attribute: attribute?.(i)}, (result) => {
          results[i] = result
          if (++done === count) resolve()
        })
        if (!more) {
          producer.once('drain', pump)
          return
        }
      }
    }
    pump()
  })
  return results
}

/** A loopback proxy to the broker that keeps every byte clients sent. */
async function recordingProxy(t: {after: (fn: () => unknown) => void}, port: number): Promise<{address: string; sent: () => string}> {
  const chunks: Buffer[] = []
  const server = createServer((client) => {
    const upstream = connect({host: '127.0.0.1', port})
    client.on('data', (d: Buffer) => {
      chunks.push(d)
      upstream.write(d)
    })
    upstream.pipe(client)
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close).on('close', close)
    upstream.on('error', close).on('close', close)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return {address: `127.0.0.1:${(server.address() as AddressInfo).port}`, sent: () => Buffer.concat(chunks).toString('latin1')}
}

describe('Producer', () => {
  it('batchPut: false sends one plain 7-token put with checksum per message, never put-batch', async (t) => {
    const broker = await startTestBroker(t)
    const proxy = await recordingProxy(t, broker.port)
    const topic = uniqueName()
    const plain = createProducer({broker: proxy.address, batchPut: false})
    t.after(() => plain.close())
    const results = await sendMany(plain, topic, 200, (i) => `m${i}`)
    assert.ok(results.every((r) => r.success))
    const wire = proxy.sent()
    const puts = wire.match(new RegExp(`put ${topic} 0 \\d+ 0 \\d+ -?\\d+\r\n`, 'g')) ?? []
    assert.equal(puts.length, 200, 'one put line per message, with flag, checksum and opaque')
    assert.doesNotMatch(wire, /put-batch/)
    // The default producer does batch to this broker: the recording tells the two apart.
    const batching = createProducer({broker: proxy.address})
    t.after(() => batching.close())
    assert.ok((await sendMany(batching, topic, 200, (i) => `b${i}`)).every((r) => r.success))
    assert.match(proxy.sent(), /put-batch /)
  })

  it('send() resolves to a SendResult with partition, offset and id', async (t) => {
    const broker = await startTestBroker(t)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const topic = uniqueName()
    const first = await producer.send(topic, 'hello', {attribute: 'k1'})
    assert.equal(first.success, true)
    assert.equal(first.topic, topic)
    assert.equal(first.partition, 0)
    assert.equal(first.offset, 0)
    assert.equal(typeof first.id, 'bigint')
    const second = await producer.send(topic, Buffer.from([0, 1, 2]))
    assert.equal(second.offset, 20 + 4 + 2 + 5, 'after the first record (header + attribute block + data)')
    assert.ok(second.id! > first.id!)
  })

  it('pipelines thousands of sends through a bounded window, in order per partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 3})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`, maxInFlight: 256})
    t.after(() => producer.close())
    const topic = uniqueName()
    const results = await sendMany(producer, topic, 20_000, (i) => `m${i}`)
    assert.ok(
      results.every((r) => r.success),
      'every send acknowledged',
    )
    assert.equal(producer.inFlight, 0)
    const counts = [0, 0, 0]
    for (const r of results) counts[r.partition] += 1
    assert.deepEqual(counts, [6667, 6667, 6666], 'round-robin over the 3 partitions')
    for (let p = 0; p < 3; p++) {
      const offsets = results.filter((r) => r.partition === p).map((r) => r.offset)
      assert.ok(
        offsets.every((o, i) => i === 0 || o > offsets[i - 1]),
        `offsets increase in partition ${p}`,
      )
    }
  })

  it('hash selector maps each attribute to one stable partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`, selector: 'hash'})
    t.after(() => producer.close())
    const topic = uniqueName()
    const results = await sendMany(
      producer,
      topic,
      400,
      (i) => `m${i}`,
      (i) => `key-${i % 10}`,
    )
    for (let k = 0; k < 10; k++) {
      const partitions = new Set(results.filter((_, i) => i % 10 === k).map((r) => r.partition))
      assert.deepEqual([...partitions], [stringHash(`key-${k}`) % 4], `key-${k} always in one partition`)
    }
  })

  it('random and custom selectors, and an explicit partition', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const random = createProducer({broker: `127.0.0.1:${broker.port}`, selector: 'random'})
    const custom = createProducer({broker: `127.0.0.1:${broker.port}`, selector: (_topic, partitions) => partitions.at(-1)!})
    t.after(() => Promise.all([random.close(), custom.close()]))
    const topic = uniqueName()
    const spread = new Set((await sendMany(random, topic, 200, (i) => `r${i}`)).map((r) => r.partition))
    assert.ok(spread.size > 1, 'random spreads')
    assert.deepEqual(new Set((await sendMany(custom, topic, 20, (i) => `c${i}`)).map((r) => r.partition)), new Set([3]))
    assert.equal((await random.send(topic, 'pinned', {partition: 2})).partition, 2)
  })

  it('reports broker refusals in the SendResult without throwing', async (t) => {
    const broker = await startTestBroker(t, {ini: '[system]\nnumPartitions=2\n[topic=orders]\n'})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`, retries: 0})
    t.after(() => producer.close())
    const refused = await producer.send('payments', 'x')
    assert.equal(refused.success, false)
    assert.match(refused.errorMessage!, /The server do not accept topic payments/)
    const wrong = await producer.send('orders', 'x', {partition: 5})
    assert.equal(wrong.success, false)
    assert.equal(wrong.errorMessage, 'invalid partition "5" for topic "orders": expected 0..1', 'checked before sending')
    await broker.topics.close('orders', 0, 0)
    const closed = await producer.send('orders', 'x', {partition: 0})
    assert.equal(closed.errorMessage, '403', 'MetaQ reports a closed partition as "403"')
  })

  it('refuses bad topic names and oversize messages before sending', async (t) => {
    const broker = await startTestBroker(t, {maxTransferBytes: 2048})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    assert.throws(() => producer.sendCallback('a b', 'x', {}, () => {}), /topic/)
    await producer.send(uniqueName(), 'warm up') // learn the broker's limit
    assert.throws(
      () => producer.sendCallback(uniqueName(), Buffer.alloc(3000), {}, () => {}),
      /message of 3000 bytes is larger than the broker's limit of 2028 bytes/,
    )
  })

  it('sends that a consumer reads back with attributes', async (t) => {
    const broker = await startTestBroker(t)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const topic = uniqueName()
    await producer.send(topic, 'one', {attribute: 'a1'})
    await producer.send(topic, 'two')
    const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [topic], stopAtEnd: true})
    const seen = []
    for await (const m of consumer) seen.push([m.data.toString(), m.attribute])
    assert.deepEqual(seen, [
      ['one', 'a1'],
      ['two', undefined],
    ])
  })
})
