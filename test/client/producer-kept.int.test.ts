/**
 * Producer.sendKept and handOver, the producer's side of SpoolingProducer's window: kept sends
 * leave the list as they are answered, in any order, and an outage takes the unanswered ones
 * of a topic in send order, across partitions. A real broker behind a relay that can go silent.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createProducer, type SendResult} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {tcpRelay} from '../helpers/tcp-relay.js'

describe('Producer.sendKept', () => {
  it("keeps sends until answered, in any order; handOver takes a topic's unanswered ones in send order", async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 2})
    const relay = await tcpRelay(t, {host: '127.0.0.1', port: broker.port})
    const producer = createProducer({broker: `127.0.0.1:${relay.port}`, retries: 0})
    t.after(() => producer.close())
    const topic = uniqueName('kept')
    const other = uniqueName('other')
    const answered: string[] = []
    const failures: string[] = []
    producer.onKeptFailure = (failedTopic, result) => failures.push(`${failedTopic} ${result.error?.code}`)
    const send = (to: string, name: string, partition: number): void => {
      producer.sendKept(to, Buffer.from(name), {partition, attribute: `a-${name}`}, (result) => {
        assert.equal(result.success, true, `${name}: ${result.errorMessage}`)
        answered.push(name)
      })
    }

    // One turn: the producer puts each partition's sends in one batch, so c (p0) is answered before b (p1).
    send(topic, 'a', 0)
    send(topic, 'b', 1)
    send(topic, 'c', 0)
    send(topic, 'd', 1)
    assert.equal(producer.keptCount, 4)
    await producer.flush()
    assert.deepEqual(answered, ['a', 'c', 'b', 'd'])
    assert.equal(producer.keptCount, 0)

    // The broker goes silent: what is sent now stays unanswered (but x, refused at once, which leaves from the middle).
    relay.cut()
    send(topic, 'e', 1)
    send(other, 'o', 0)
    producer.sendKept(topic, Buffer.from('x'), {partition: 7}, (result) => answered.push(`x ${result.error?.code}`))
    send(topic, 'f', 0)
    send(topic, 'g', 1)
    producer.sendCallback(topic, Buffer.from('not kept'), {partition: 0}, () => answered.push('not kept'))
    assert.deepEqual(answered.slice(4), ['x INVALID_ARGUMENT'])
    assert.deepEqual(failures, [`${topic} INVALID_ARGUMENT`])
    assert.equal(producer.keptCount, 4)
    assert.equal(producer.keptOf(topic), 3)

    const taken: string[] = []
    const handed: Array<[string, boolean]> = []
    producer.handOver(
      topic,
      (result: SendResult, context: string) => handed.push([context, result.success]),
      (payload, attribute, partition) => {
        taken.push(`${Buffer.from(payload).toString()} ${attribute} p${partition}`)
        return `record ${taken.length}`
      },
    )
    assert.deepEqual(taken, ['e a-e p1', 'f a-f p0', 'g a-g p1'])
    assert.equal(producer.keptOf(topic), 0)
    assert.equal(producer.keptCount, 1, "the other topic's send stays kept")

    // Answers of handed-over sends go to handOver's callback, with the context take returned.
    relay.heal()
    await waitFor(() => handed.length === 3 && answered.includes('o'), {what: 'the answers after the heal'})
    assert.deepEqual(handed.map(([context, success]) => `${context} ${success}`).sort(), ['record 1 true', 'record 2 true', 'record 3 true'])
    assert.deepEqual(
      answered.filter((name) => name === 'e' || name === 'f' || name === 'g'),
      [],
    )
    await producer.flush()
    assert.ok(answered.includes('not kept'))
    assert.equal(producer.keptCount, 0)
  })
})
