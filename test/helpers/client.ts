/**
 * The setup client integration tests share: a real broker in this process, its address, a
 * fresh topic, a producer, and consumers and group members that stop after the test.
 *
 *   const f = await clientFixture(t, {numPartitions: 3})
 *   await f.produce(10)                                     // m0 … m9, all acknowledged
 *   const messages = await f.readAll()                      // a consumer from the earliest, to the end
 *   const member = f.member('group-a', 'a')                 // a group member of f.topic
 */
import assert from 'node:assert/strict'
import {
  AdminClient,
  BrokerConnection,
  createConsumer,
  createGroupConsumer,
  createProducer,
  type Consumer,
  type ConsumerOptions,
  type GroupConsumer,
  type GroupConsumerOptions,
  type Message,
  type Producer,
  type SendOptions,
  type SendResult,
} from '../../src/client/index.js'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker, type TestBrokerOptions} from './broker.js'
import {uniqueName, type Cleanup} from './index.js'

export interface ClientFixture {
  broker: Broker
  /** `127.0.0.1:<port>` */
  url: string
  /** A topic no other test uses. */
  topic: string
  /** A producer to the broker (closed after the test). */
  producer: Producer
  /** Send `<prefix><i>` for i in 0..count-1 to `topic` (default f.topic), one after another; all must succeed. */
  produce(count: number, prefix?: string, options?: SendOptions & {topic?: string}): Promise<SendResult[]>
  /** A consumer of f.topic (stopped after the test); options override the defaults. */
  consumer(options?: Partial<ConsumerOptions>): Consumer
  /** Every message of f.topic from the earliest offset to the end it has now. */
  readAll(options?: Partial<ConsumerOptions>): Promise<Message[]>
  /** A member of `group` reading f.topic, with short session and commit intervals (stopped after the test). */
  member(group: string, memberId: string, options?: Partial<GroupConsumerOptions>): GroupConsumer
}

export async function clientFixture(t: Cleanup, brokerOptions: TestBrokerOptions = {}): Promise<ClientFixture> {
  const broker = await startTestBroker(t, brokerOptions)
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName()
  const producer = createProducer({broker: url})
  t.after(() => producer.close())
  const fixture: ClientFixture = {
    broker,
    url,
    topic,
    producer,
    async produce(count, prefix = 'm', options = {}) {
      const {topic: target = topic, ...sendOptions} = options
      const results: SendResult[] = []
      for (let i = 0; i < count; i++) {
        const result = await producer.send(target, `${prefix}${i}`, sendOptions)
        assert.ok(result.success, result.errorMessage)
        results.push(result)
      }
      return results
    },
    consumer(options = {}) {
      const consumer = createConsumer({broker: url, topics: [topic], ...options})
      t.after(() => consumer.stop())
      return consumer
    },
    async readAll(options = {}) {
      const messages: Message[] = []
      for await (const m of fixture.consumer({stopAtEnd: true, ...options})) messages.push(m)
      return messages
    },
    member(group, memberId, options = {}) {
      const consumer = createGroupConsumer({broker: url, group, topics: [topic], memberId, sessionTimeoutMs: 1000, commitIntervalMs: 100, ...options})
      t.after(() => consumer.stop())
      return consumer
    },
  }
  return fixture
}

/** Each partition of a broker at 127.0.0.1:port as `topic-p` → `min..max` (to compare a slave with its master). */
export async function partitionEnds(port: number): Promise<Map<string, string>> {
  const admin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port}))
  try {
    return new Map((await admin.partitions()).map((p) => [`${p.topic}-${p.partition}`, `${p.minOffset}..${p.maxOffset}`]))
  } finally {
    admin.close()
  }
}
