/**
 * meta across a 3-node ZooKeeper ensemble (docs/invariants.md#faults-and-what-holds): brokers and
 * clients keep working through a ZooKeeper leader election; with the quorum lost, brokers
 * without failover keep serving puts and gets of the partitions they master (as MetaQ does),
 * and discovery and group rebalances resume when the quorum is back; a broker whose ZooKeeper
 * session expires while its clients still reach it keeps serving them and registers again.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createConsumer, createGroupConsumer, createProducer, type GroupConsumer, type Message, type SendResult} from '../../src/client/index.js'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {startZkEnsemble, type ZkEnsemble} from '../helpers/zk-ensemble.js'
import {zkChildren, zkRead} from '../helpers/zookeeper.js'
import {suiteScope, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {after, before} from 'node:test'

async function brokers(t: Cleanup, zkConnect: string, root: string, count: number): Promise<Broker[]> {
  const list: Broker[] = []
  for (let id = 0; id < count; id++) {
    list.push(
      await startTestBroker(t, {
        ini: `[system]\nbrokerId=${id}\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`,
        zkConnect,
      }),
    )
  }
  return list
}

/** Send `count` messages one after another; the results in order. */
async function sendSome(producer: ReturnType<typeof createProducer>, topic: string, prefix: string, count: number): Promise<SendResult[]> {
  const results: SendResult[] = []
  for (let i = 0; i < count; i++) results.push(await producer.send(topic, `${prefix}-${i}`))
  return results
}

/** Every message of `topic` in the cluster, read from the start with a ZooKeeper consumer. */
async function readAll(zk: string, root: string, topic: string): Promise<string[]> {
  const consumer = createConsumer({zk, zkRoot: root, topics: [topic], stopAtEnd: true})
  const seen: string[] = []
  for await (const batch of consumer.batches()) for (const m of batch.messages) seen.push(m.data.toString())
  return seen
}

describe('meta on a 3-node ZooKeeper ensemble', () => {
  let ensemble: ZkEnsemble
  const scope = suiteScope()
  before(async () => {
    ensemble = await startZkEnsemble(scope)
  })
  after(() => scope.run())

  it('keeps taking puts and delivering to a group through a ZooKeeper leader election; discovery works after', async (t) => {
    const root = `/${uniqueName('meta')}`
    await brokers(t, ensemble.connect, root, 2)
    const topic = uniqueName('elect')
    const producer = createProducer({zk: ensemble.connect, zkRoot: root})
    t.after(() => producer.close())
    const first = await sendSome(producer, topic, 'before', 8)
    assert.ok(
      first.every((r) => r.success),
      first.find((r) => !r.success)?.errorMessage,
    )
    const zk = await ensemble.client()
    await waitFor(async () => (await zkChildren(zk, `${root}/brokers/topics-pub/${topic}`)).length === 2, {
      what: 'the topic on both brokers',
      timeoutMs: 30_000,
    })

    const seen = new Set<string>()
    const member = createGroupConsumer({zk: ensemble.connect, zkRoot: root, group: uniqueName('g'), topics: [topic], commitIntervalMs: 100})
    t.after(() => member.stop())
    void member.run({eachMessage: (m: Message) => void seen.add(m.data.toString())})
    await waitFor(() => first.every((_, i) => seen.has(`before-${i}`)), {what: 'the group to read the first messages', timeoutMs: 30_000})

    const leader = await ensemble.leader()
    await leader.stop()
    // Through the election (brokers and clients lose their server when it was theirs).
    const during = await sendSome(producer, topic, 'during', 20)
    assert.deepEqual(
      during.filter((r) => !r.success).map((r) => r.errorMessage),
      [],
      'every put during the election is acknowledged',
    )
    await ensemble.waitForQuorum({excluding: [leader.id]})
    await waitFor(() => during.every((_, i) => seen.has(`during-${i}`)), {what: 'the group to read the puts made during the election', timeoutMs: 30_000})

    // Discovery after the election: a new producer and a new reader find both brokers.
    const later = createProducer({zk: ensemble.connect, zkRoot: root})
    t.after(() => later.close())
    const after = await sendSome(later, topic, 'after', 8)
    assert.ok(after.every((r) => r.success))
    assert.deepEqual(new Set(after.map((r) => r.brokerId)), new Set([0, 1]), 'the new producer finds both brokers')
    const all = await readAll(ensemble.connect, root, topic)
    for (const [prefix, list] of [
      ['before', first],
      ['during', during],
      ['after', after],
    ] as const) {
      list.forEach((_, i) => assert.ok(all.includes(`${prefix}-${i}`), `${prefix}-${i} read back`))
    }
    await leader.start()
    await ensemble.waitForQuorum()
  })

  it('without a quorum, brokers keep serving puts and gets; discovery and rebalances resume when it is back', async (t) => {
    const root = `/${uniqueName('meta')}`
    const [b0] = await brokers(t, ensemble.connect, root, 2)
    const topic = uniqueName('quorum')
    const producer = createProducer({zk: ensemble.connect, zkRoot: root})
    t.after(() => producer.close())
    const first = await sendSome(producer, topic, 'before', 8)
    assert.ok(first.every((r) => r.success))
    const zk = await ensemble.client()
    await waitFor(async () => (await zkChildren(zk, `${root}/brokers/topics-pub/${topic}`)).length === 2, {
      what: 'the topic on both brokers',
      timeoutMs: 30_000,
    })
    const group = uniqueName('g')
    const one = createGroupConsumer({zk: ensemble.connect, zkRoot: root, group, topics: [topic], memberId: `${group}_a`, commitIntervalMs: 100})
    t.after(() => one.stop())
    void one.run({eachMessage: () => undefined})
    const owned = (m: GroupConsumer) => m.assignment().length
    await waitFor(() => owned(one) === 4, {what: 'the only member to own all 4 partitions', timeoutMs: 30_000})

    // Two of three servers down: no quorum.
    const [x, y] = ensemble.nodes.filter((n) => n.running()).slice(0, 2) as [(typeof ensemble.nodes)[number], (typeof ensemble.nodes)[number]]
    await Promise.all([x.stop(), y.stop()])
    await waitFor(async () => (await Promise.all(ensemble.nodes.map((n) => n.mode()))).every((m) => m === 'down'), {
      what: 'no server to serve',
      timeoutMs: 30_000,
    })
    const during = await sendSome(producer, topic, 'during', 12)
    assert.deepEqual(
      during.filter((r) => !r.success).map((r) => r.errorMessage),
      [],
      'puts are acknowledged without a quorum',
    )
    // A plain get straight from a broker (no ZooKeeper involved) returns them.
    const direct = createConsumer({broker: `127.0.0.1:${b0!.port}`, topics: [topic], stopAtEnd: true})
    const fromB0: string[] = []
    for await (const batch of direct.batches()) for (const m of batch.messages) fromB0.push(m.data.toString())
    for (const r of during) if (r.brokerId === 0) assert.ok(fromB0.includes(`during-${during.indexOf(r)}`))

    // The quorum back, a second member joins: the first, whose session lived through the
    // outage, rebalances with it. (A member started without a quorum fails at once, saying so.)
    await Promise.all([x.start(), y.start()])
    await ensemble.waitForQuorum({timeoutMs: 60_000})
    const two = createGroupConsumer({zk: ensemble.connect, zkRoot: root, group, topics: [topic], memberId: `${group}_b`, commitIntervalMs: 100})
    t.after(() => two.stop())
    void two.run({eachMessage: () => undefined})
    await waitFor(() => owned(one) === 2 && owned(two) === 2, {what: 'the group to rebalance 2 + 2 once the quorum is back', timeoutMs: 60_000})
    const later = createProducer({zk: ensemble.connect, zkRoot: root})
    t.after(() => later.close())
    const after = await sendSome(later, topic, 'after', 4)
    assert.ok(
      after.every((r) => r.success),
      'discovery works again',
    )
    const all = await readAll(ensemble.connect, root, topic)
    during.forEach((_, i) => assert.ok(all.includes(`during-${i}`), `during-${i} read back`))
  })

  it('a broker whose ZooKeeper session expires keeps serving its clients and registers again', async (t) => {
    const root = `/${uniqueName('meta')}`
    const route = await ensemble.route(t)
    const [b0] = await brokers(t, route.connect, root, 1)
    const topic = uniqueName('expire')
    const direct = createProducer({broker: `127.0.0.1:${b0!.port}`})
    t.after(() => direct.close())
    assert.ok((await direct.send(topic, 'before')).success)
    const zk = await ensemble.client()
    const master = `${root}/brokers/ids/0/master`
    await waitFor(async () => (await zkRead(zk, master)) !== undefined, {what: 'the broker registered', timeoutMs: 30_000})

    route.partition('blackhole')
    // Its session (4 s) expires on the servers: its ephemeral registration goes.
    await waitFor(async () => (await zkRead(zk, master)) === undefined, {what: 'the broker session to expire', timeoutMs: 60_000})
    const during = await sendSome(direct, topic, 'during', 10)
    assert.deepEqual(
      during.filter((r) => !r.success).map((r) => r.errorMessage),
      [],
      'its clients are still served',
    )

    route.heal()
    await waitFor(async () => (await zkRead(zk, master)) === `meta://127.0.0.1:${b0!.port}`, {what: 'the broker to register again', timeoutMs: 60_000})
    await waitFor(async () => (await zkChildren(zk, `${root}/brokers/topics-pub/${topic}`)).length === 1, {
      what: 'its topic registered again',
      timeoutMs: 60_000,
    })
    const all = await readAll(ensemble.connect, root, topic)
    assert.ok(
      ['before', ...during.map((_, i) => `during-${i}`)].every((m) => all.includes(m)),
      'a reader that finds it in ZooKeeper reads everything',
    )
  })
})
