/**
 * How consumer errors reach the application, against a real broker: an
 * error retrying cannot fix (a topic the broker refuses, a partition the topic does not
 * have) ends the for-await loop with that error, rejects run() and reaches 'error'
 * listeners, instead of a silent retry loop; an error retrying can fix (the broker
 * restarting) is retried and reported as 'fetchError', and consumption goes on.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createConsumer, createProducer, StandaloneTopology, type FetchErrorEvent, type Partition} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {clientFixture} from '../helpers/client.js'
import {tmpDir, waitFor, withDeadline, type Cleanup} from '../helpers/index.js'

/**
 * A topology that lists partitions without asking the broker, as a stale or foreign source of
 * partition lists would (a ZooKeeper that still lists a topic, a config that says 4 partitions).
 */
function topologyListing(t: Cleanup, url: string, partitions: number[]): StandaloneTopology {
  const topology = new StandaloneTopology({broker: url})
  const listed = async (): Promise<Partition[]> => partitions.map((partition) => ({brokerId: 0, partition}))
  topology.subscribePartitions = listed
  topology.publishPartitions = listed
  t.after(() => topology.close())
  return topology
}

describe('consumer errors', () => {
  it('a topic the broker does not accept ends the for-await loop with TOPIC_NOT_ACCEPTED', async (t) => {
    const f = await clientFixture(t, {ini: '[system]\nnumPartitions=2\n[topic=orders]\n'})
    const consumer = f.consumer({topics: ['payments'], topology: topologyListing(t, f.url, [0])})
    const loop = (async () => {
      for await (const m of consumer) assert.fail(`unexpected message ${m.offset}`)
    })()
    await assert.rejects(withDeadline(loop, 10_000, 'the loop to end'), (error: Error) => {
      assert.ok(isMetaError(error, 'TOPIC_NOT_ACCEPTED'), String(error))
      assert.match(error.message, /^cannot fetch payments partition 0-0: The topic `payments` in partition `0` is not exists$/)
      return true
    })
    const gets = f.broker.stats.counters.cmdGet
    assert.ok(gets <= 2, `no retry loop: ${gets} gets`)
  })

  it('a partition the topic does not have rejects run() and reaches error listeners once', async (t) => {
    const f = await clientFixture(t, {numPartitions: 2})
    await f.produce(1)
    const consumer = f.consumer({partitions: [1, 3], topology: topologyListing(t, f.url, [0, 1, 2, 3])})
    const heard: Error[] = []
    consumer.on('error', (error: Error) => heard.push(error))
    const handled: string[] = []
    await assert.rejects(withDeadline(consumer.run({eachMessage: (m) => void handled.push(m.data.toString())}), 10_000, 'run() to end'), (error: Error) =>
      isMetaError(error, 'INVALID_PARTITION'),
    )
    assert.equal(heard.length, 1)
    assert.ok(isMetaError(heard[0], 'INVALID_PARTITION'))
    assert.equal(heard[0].details?.partition, 3)
  })

  it('a broker restart is retried, reported as fetchError, and consumption goes on', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await startTestBroker(t, {dataPath})
    const port = first.port
    const url = `127.0.0.1:${port}`
    const producer = createProducer({broker: url})
    t.after(() => producer.close())
    assert.ok((await producer.send('restarts', 'before')).success)
    const consumer = createConsumer({broker: url, topics: ['restarts']})
    t.after(() => consumer.stop())
    const retried: FetchErrorEvent[] = []
    consumer.on('fetchError', (event: FetchErrorEvent) => retried.push(event))
    const seen: string[] = []
    const loop = (async () => {
      for await (const m of consumer) seen.push(m.data.toString())
    })()
    await waitFor(() => seen.length === 1, {what: 'the first message'})
    await first.close()
    await waitFor(() => retried.length > 0, {what: 'a fetchError while the broker is down'})
    assert.ok(retried.every((e) => e.error.retriable && e.topic === 'restarts' && e.partition === 0 && e.retryInMs > 0))
    await startTestBroker(t, {dataPath, serverPort: port})
    await waitFor(async () => (await producer.send('restarts', 'after')).success, {what: 'a send after the restart', timeoutMs: 15_000})
    await waitFor(() => seen.includes('after'), {what: 'the message sent after the restart'})
    await consumer.stop()
    await loop
  })
})
