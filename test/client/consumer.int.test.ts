/**
 * The consumer against a real broker: start positions (301 handling), stopping at the end
 * of several partitions including empty ones, long-poll wake-up on new data, growing the
 * fetch size for a big message, and realigning after a CRC failure at a misaligned offset.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {isMetaError} from '../../src/protocol/index.js'
import {clientFixture} from '../helpers/client.js'
import {waitFor} from '../helpers/index.js'

describe('Consumer', () => {
  it('reads every partition to the end it had at start, including empty ones', async (t) => {
    const f = await clientFixture(t, {numPartitions: 4})
    for (let i = 0; i < 30; i++) await f.producer.send(f.topic, `m${i}`, {partition: i % 3})
    const messages = await f.readAll()
    assert.equal(messages.length, 30)
    for (let p = 0; p < 3; p++) {
      const payloads = messages.filter((m) => m.partition === p).map((m) => m.data.toString())
      assert.deepEqual(
        payloads,
        Array.from({length: 10}, (_, k) => `m${p + 3 * k}`),
        `partition ${p} in order`,
      )
    }
  })

  it('ends at once when every partition is empty', async (t) => {
    const f = await clientFixture(t, {numPartitions: 2})
    assert.deepEqual(await f.readAll(), [])
  })

  it('starts at the end with "latest" and at a byte offset', async (t) => {
    const f = await clientFixture(t)
    const sent = await f.produce(5)
    assert.deepEqual(await f.readAll({from: 'latest'}), [])
    const fromThird = await f.readAll({from: sent[2].offset})
    assert.deepEqual(
      fromThird.map((m) => m.data.toString()),
      ['m2', 'm3', 'm4'],
    )
    assert.equal(fromThird[0].offset, sent[2].offset)
    assert.equal(fromThird[0].nextOffset, sent[3].offset)
    assert.equal(fromThird[0].id, sent[2].id)
    assert.ok(Math.abs(fromThird[0].timestampMs - Date.now()) < 60_000, 'timestamp comes from the id')
  })

  it('follows a 301 from below the log start', async (t) => {
    const f = await clientFixture(t)
    await f.producer.send(f.topic, 'only')
    const messages = await f.readAll({from: -100})
    assert.deepEqual(
      messages.map((m) => m.data.toString()),
      ['only'],
    )
  })

  it('delivers a new message to an idle consumer through the long poll', async (t) => {
    const f = await clientFixture(t)
    const consumer = f.consumer({maxWaitMs: 30_000})
    const iterator = consumer[Symbol.asyncIterator]()
    const first = iterator.next()
    await waitFor(() => f.broker.stats.polls.size === 1, {what: 'the consumer to park a long poll'})
    await f.producer.send(f.topic, 'wake up')
    const {value} = await first
    assert.equal(value.data.toString(), 'wake up')
    assert.equal(f.broker.stats.counters.getMiss, 0, 'no polling misses')
    await iterator.return!()
  })

  it('grows its fetch size for a message larger than maxSizeBytes', async (t) => {
    const f = await clientFixture(t)
    await f.producer.send(f.topic, 'small')
    await f.producer.send(f.topic, Buffer.alloc(200_000, 7))
    await f.producer.send(f.topic, 'after')
    const messages = await f.readAll({maxSizeBytes: 1024})
    assert.deepEqual(
      messages.map((m) => m.data.length),
      [5, 200_000, 5],
    )
  })

  it('realigns after a CRC failure at a misaligned offset without redelivering', async (t) => {
    const f = await clientFixture(t)
    const sent = []
    for (let i = 0; i < 4; i++) sent.push(await f.producer.send(f.topic, `message-${i}`))
    // Start 3 bytes into the second record: the bytes there do not form a valid record.
    const messages = await f.readAll({from: sent[1].offset + 3})
    assert.deepEqual(
      messages.map((m) => m.data.toString()),
      ['message-2', 'message-3'],
    )
  })

  it('asks for the next records before handing a batch over, and holds the answer while paused', async (t) => {
    const f = await clientFixture(t)
    await f.produce(20)
    // About two records per get; the queue holds one batch, so the consumer pauses after each.
    const consumer = f.consumer({stopAtEnd: true, maxSizeBytes: 50, maxBufferedBatches: 1})
    const iterator = consumer.batches()[Symbol.asyncIterator]()
    const gets = () => f.broker.stats.counters.cmdGet
    const first = await iterator.next()
    assert.deepEqual(
      first.value.messages.map((m: {data: Buffer}) => m.data.toString()),
      ['m0', 'm1'],
    )
    // The first batch went to the waiting reader, the second (m2, m3) fills the queue and
    // pauses the fetcher; the get for m4… went out before that batch was delivered (without
    // early gets there would be two), and its answer is held until the queue has room.
    await waitFor(() => gets() === 3, {what: 'the early get for the records after the queued batch'})
    const seen = first.value.messages.map((m: {data: Buffer}) => m.data.toString())
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve))
      const next = await iterator.next()
      if (next.done) break
      seen.push(...next.value.messages.map((m: {data: Buffer}) => m.data.toString()))
    }
    assert.deepEqual(
      seen,
      Array.from({length: 20}, (_, i) => `m${i}`),
      'every message once, in order',
    )
  })

  it('refuses a partition the topic does not have', async (t) => {
    const f = await clientFixture(t, {numPartitions: 2})
    await assert.rejects(f.readAll({partitions: [5]}), (err: Error) => isMetaError(err, 'INVALID_ARGUMENT') && /expected 0..1/.test(err.message))
  })

  it('reports positions after the messages it handed out', async (t) => {
    const f = await clientFixture(t)
    const a = await f.producer.send(f.topic, 'a')
    const consumer = f.consumer({stopAtEnd: true})
    const batches = []
    for await (const batch of consumer.batches()) batches.push(batch)
    assert.equal(batches[0].nextOffset, a.offset + 21)
    assert.equal(consumer.positions().get(`${f.topic}:0-0`), 21)
  })

  it('reads a later answer into the memory of a released batch, every payload intact', async (t) => {
    const f = await clientFixture(t)
    const payloadOf = (i: number) => {
      const b = Buffer.alloc(1024)
      for (let k = 0; k < b.length; k++) b[k] = (i * 31 + k * 7) & 0xff
      b.writeUInt32BE(i, 0)
      return b
    }
    const total = 5000 // ~5 MiB: five or more gets of up to a MiB, each read in several pieces
    for (let first = 0; first < total; first += 500) {
      await Promise.all(Array.from({length: 500}, (_, k) => f.producer.send(f.topic, payloadOf(first + k))))
    }
    const consumer = f.consumer({stopAtEnd: true})
    const seenMemory = new Set<ArrayBufferLike>()
    let reused = 0
    let next = 0
    let lastId = ''
    for await (const batch of consumer.batches()) {
      if (seenMemory.has(batch.body.buffer)) reused += 1
      seenMemory.add(batch.body.buffer)
      const records = batch.records()
      while (records.next()) {
        const data = Buffer.from(records.body.buffer, records.body.byteOffset + records.dataStart, records.dataEnd - records.dataStart)
        assert.ok(data.equals(payloadOf(next)), `message ${next} (offset ${records.offset}) is intact`)
        next += 1
      }
      const idBefore = batch.lastIdText()
      batch.release()
      assert.equal(batch.lastIdText(), idBefore, 'the last id is kept through release()')
      assert.throws(() => batch.records(), /read after release/)
      assert.throws(() => batch.messages, /read after release/)
      lastId = idBefore
    }
    assert.equal(next, total)
    assert.ok(reused > 0, `a later get's answer went into released memory (${seenMemory.size} distinct buffers)`)
    assert.notEqual(lastId, '')
  })
})
