/**
 * The consumer against a real broker: start positions (301 handling), stopping at the end
 * of several partitions including empty ones, long-poll wake-up on new data, growing the
 * fetch size for a big message, and realigning after a CRC failure at a misaligned offset.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createConsumer, createProducer, type Message} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'

async function collectAll(consumer: ReturnType<typeof createConsumer>): Promise<Message[]> {
  const out: Message[] = []
  for await (const m of consumer) out.push(m)
  return out
}

describe('Consumer', () => {
  it('reads every partition to the end it had at start, including empty ones', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 4})
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    for (let i = 0; i < 30; i++) await producer.send(topic, `m${i}`, {partition: i % 3})
    const messages = await collectAll(createConsumer({broker: url, topics: [topic], stopAtEnd: true}))
    assert.equal(messages.length, 30)
    for (let p = 0; p < 3; p++) {
      const payloads = messages.filter((m) => m.partition === p).map((m) => m.data.toString())
      assert.deepEqual(payloads, Array.from({length: 10}, (_, k) => `m${p + 3 * k}`), `partition ${p} in order`)
    }
  })

  it('ends at once when every partition is empty', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const messages = await collectAll(createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [uniqueName()], stopAtEnd: true}))
    assert.deepEqual(messages, [])
  })

  it('starts at the end with "latest" and at a byte offset', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    const sent = []
    for (let i = 0; i < 5; i++) sent.push(await producer.send(topic, `m${i}`))
    assert.deepEqual(await collectAll(createConsumer({broker: url, topics: [topic], from: 'latest', stopAtEnd: true})), [])
    const fromThird = await collectAll(createConsumer({broker: url, topics: [topic], from: sent[2].offset, stopAtEnd: true}))
    assert.deepEqual(fromThird.map((m) => m.data.toString()), ['m2', 'm3', 'm4'])
    assert.equal(fromThird[0].offset, sent[2].offset)
    assert.equal(fromThird[0].nextOffset, sent[3].offset)
    assert.equal(fromThird[0].id, sent[2].id)
    assert.ok(Math.abs(fromThird[0].timestampMs - Date.now()) < 60_000, 'timestamp comes from the id')
  })

  it('follows a 301 from below the log start', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    await producer.send(topic, 'only')
    const messages = await collectAll(createConsumer({broker: url, topics: [topic], from: -100, stopAtEnd: true}))
    assert.deepEqual(messages.map((m) => m.data.toString()), ['only'])
  })

  it('delivers a new message to an idle consumer through the long poll', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    const consumer = createConsumer({broker: url, topics: [topic], maxWaitMs: 30_000})
    const iterator = consumer[Symbol.asyncIterator]()
    const first = iterator.next()
    await waitFor(() => broker.stats.polls.size === 1, {what: 'the consumer to park a long poll'})
    await producer.send(topic, 'wake up')
    const {value} = await first
    assert.equal(value.data.toString(), 'wake up')
    assert.equal(broker.stats.counters.getMiss, 0, 'no polling misses')
    await iterator.return!()
  })

  it('grows its fetch size for a message larger than maxSizeBytes', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    await producer.send(topic, 'small')
    await producer.send(topic, Buffer.alloc(200_000, 7))
    await producer.send(topic, 'after')
    const messages = await collectAll(createConsumer({broker: url, topics: [topic], maxSizeBytes: 1024, stopAtEnd: true}))
    assert.deepEqual(messages.map((m) => m.data.length), [5, 200_000, 5])
  })

  it('realigns after a CRC failure at a misaligned offset without redelivering', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    const sent = []
    for (let i = 0; i < 4; i++) sent.push(await producer.send(topic, `message-${i}`))
    // Start 3 bytes into the second record: the bytes there do not form a valid record.
    const consumer = createConsumer({broker: url, topics: [topic], from: sent[1].offset + 3, stopAtEnd: true})
    const errors: Error[] = []
    consumer.on('error', (e) => errors.push(e))
    const messages = await collectAll(consumer)
    assert.deepEqual(messages.map((m) => m.data.toString()), ['message-2', 'message-3'])
  })

  it('refuses a partition the topic does not have', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [uniqueName()], partitions: [5]})
    await assert.rejects(collectAll(consumer), (err: Error) => isMetaError(err, 'INVALID_ARGUMENT') && /expected 0..1/.test(err.message))
  })

  it('reports positions after the messages it handed out', async (t) => {
    const broker = await startTestBroker(t)
    const url = `127.0.0.1:${broker.port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    const topic = uniqueName()
    const a = await producer.send(topic, 'a')
    const consumer = createConsumer({broker: url, topics: [topic], stopAtEnd: true})
    const batches = []
    for await (const batch of consumer.batches()) batches.push(batch)
    assert.equal(batches[0].nextOffset, a.offset + 21)
    assert.equal(consumer.positions().get(`${topic}:0-0`), 21)
  })
})
