/**
 * Gets served from segment files (not the tail cache: the broker was restarted) use pooled
 * read buffers (src/storage/read-buffers.ts), given back once the socket wrote them and then
 * reused: two consumers reading the same log at the same time each get every byte right. So
 * do gets from the tail cache that span two of its blocks (copied out of both).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createConsumer, createProducer} from '../../src/client/index.js'
import {readBuffers} from '../../src/storage/index.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {RawClient, text} from '../helpers/raw-client.js'

const COUNT = 3000
const BYTES = 1000

function payload(i: number): Buffer {
  const data = Buffer.alloc(BYTES, i % 251)
  data.writeUInt32BE(i, 0)
  return data
}

/** COUNT messages written by a first broker, then a second on the same data (empty tail cache). */
async function restartedWithMessages(t: Cleanup, topic: string) {
  const dataPath = await tmpDir(t)
  const first = await startTestBroker(t, {dataPath})
  const producer = createProducer({broker: `127.0.0.1:${first.port}`})
  const sends = []
  for (let i = 0; i < COUNT; i++) sends.push(producer.send(topic, payload(i)))
  for (const result of await Promise.all(sends)) assert.ok(result.success, result.errorMessage)
  await producer.close()
  await first.close()
  return startTestBroker(t, {dataPath})
}

describe('gets from segment files with pooled read buffers', () => {
  it('two concurrent consumers read every message intact while the buffers are reused', async (t) => {
    const topic = uniqueName()
    const broker = await restartedWithMessages(t, topic)
    const reusedBefore = readBuffers.reused
    const read = async () => {
      const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [topic], stopAtEnd: true, maxSizeBytes: 256 * 1024})
      t.after(() => consumer.stop())
      let next = 0
      for await (const m of consumer) {
        assert.ok(m.data.equals(payload(next)), `message ${next} intact`)
        next += 1
      }
      return next
    }
    assert.deepEqual(await Promise.all([read(), read()]), [COUNT, COUNT])
    // ~3 MB in 256 KiB gets: a dozen reads per consumer, all but the first few on reused buffers.
    assert.ok(readBuffers.reused - reusedBefore >= 10, `buffers reused ${readBuffers.reused - reusedBefore} times`)
  })

  it('a buffer is reused only after the socket took its answer: 384 pipelined gets (98 MB) to a client that is not reading', async (t) => {
    const topic = uniqueName()
    const broker = await restartedWithMessages(t, topic)
    const client = await RawClient.connect(t, broker.port)
    client.socket.pause()
    const RECORD = 20 + BYTES
    const PER_GET = 250
    const PASSES = 32
    let requests = ''
    for (let pass = 0; pass < PASSES; pass++) {
      for (let k = 0; k < COUNT / PER_GET; k++) {
        requests += `get ${topic} g 0 ${k * PER_GET * RECORD} ${PER_GET * RECORD} ${pass * 100 + k}\r\n`
      }
    }
    client.send(requests)
    // The broker reads until this connection is at its memory bound (answers the kernel did not
    // take: its socket buffers are full), so later reads run while earlier answers still wait
    // in the broker's socket queue.
    const admin = await RawClient.connect(t, broker.port)
    const remote = `127.0.0.1:${client.socket.localPort}`
    await waitFor(
      async () =>
        text(await admin.request('stats meta-connections 1\r\n', 30_000))
          .split('\r\n')
          .find((line) => line.startsWith(`${remote} `))
          ?.includes(' reading false'),
      {what: 'the broker to stop reading the client at its memory bound', timeoutMs: 30_000, intervalMs: 50},
    )
    client.socket.resume()
    for (let n = 0; n < PASSES * (COUNT / PER_GET); n++) {
      const frame = await client.next(30_000)
      assert.equal(frame.type, 'value')
      const k = frame.opaque % 100
      const {messages, error} = decodeMessageSet(frame.body)
      assert.equal(error, undefined, `answer ${frame.opaque}: every record checks out`)
      assert.equal(messages.length, PER_GET)
      for (const [i, m] of messages.entries()) assert.ok(m.data.equals(payload(k * PER_GET + i)), `answer ${frame.opaque}, message ${i}`)
    }
  })
})

describe('gets from the tail cache that span two blocks', () => {
  it('copy every byte exactly into pooled buffers, which come back and are reused', async (t) => {
    const topic = uniqueName()
    const broker = await startTestBroker(t)
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    const sends = []
    for (let i = 0; i < COUNT; i++) sends.push(producer.send(topic, payload(i)))
    for (const result of await Promise.all(sends)) assert.ok(result.success, result.errorMessage)
    await producer.close()
    const reusedBefore = readBuffers.reused
    const allocatedBefore = readBuffers.allocated
    // ~3 MB in blocks of 4 KiB doubling to 1 MiB, read in 128 KiB gets: each pass has about
    // five gets over a boundary between blocks of 64 KiB or more (smaller copies are not pooled).
    for (let pass = 0; pass < 4; pass++) {
      const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [topic], stopAtEnd: true, maxSizeBytes: 128 * 1024})
      t.after(() => consumer.stop())
      let next = 0
      for await (const m of consumer) {
        assert.ok(m.data.equals(payload(next)), `pass ${pass}, message ${next} intact`)
        next += 1
      }
      assert.equal(next, COUNT)
    }
    const reused = readBuffers.reused - reusedBefore
    const allocated = readBuffers.allocated - allocatedBefore
    assert.ok(reused >= 12, `pooled copies reused ${reused} times`)
    assert.ok(allocated <= 4, `${allocated} buffers allocated for ${reused} reuses: given back, not leaked`)
  })
})
