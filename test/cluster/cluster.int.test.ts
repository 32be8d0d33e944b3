/**
 * Several brokers against one real ZooKeeper: producers discover partitions across brokers and
 * spread messages with each selector; a consumer group shares partitions of several brokers
 * with MetaQ's DEFAULT strategy and keeps its offsets and ownership in MetaQ's znodes (read
 * back directly, byte for byte); a broker killed with SIGKILL is routed around by producers
 * and, after it restarts, every acknowledged message is consumed.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {
  createConsumer,
  createGroupConsumer,
  createProducer,
  ClusterTopology,
  FileOffsetStore,
  type GroupConsumer,
  type Message,
  type SendResult,
} from '../../src/client/index.js'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {exited, spawnBroker} from '../helpers/process.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead, zkChildren, zkStat} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

async function cluster(t: Cleanup, zk: TestZooKeeper, root: string, count: number, partitions = 2): Promise<Broker[]> {
  const brokers: Broker[] = []
  for (let id = 0; id < count; id++) {
    brokers.push(
      await startTestBroker(t, {ini: `[system]\nbrokerId=${id}\nnumPartitions=${partitions}\n[zookeeper]\nzk.zkRoot=${root}\n`, zkConnect: zk.connect}),
    )
  }
  return brokers
}

/** Create a topic on one broker with a first message (a put registers it in ZooKeeper). */
async function seed(port: number, topic: string, payload = 'seed'): Promise<void> {
  const producer = createProducer({broker: `127.0.0.1:${port}`})
  await producer.send(topic, payload)
  await producer.close()
}

async function sendAll(producer: ReturnType<typeof createProducer>, topic: string, count: number, attribute?: (i: number) => string): Promise<SendResult[]> {
  const results: SendResult[] = []
  for (let i = 0; i < count; i++) results.push(await producer.send(topic, `m${i}`, {attribute: attribute?.(i)}))
  return results
}

describe('a cluster of brokers on ZooKeeper', () => {
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it('producers spread messages over every broker with each selector', async (t) => {
    const root = `/${uniqueName('meta')}`
    const brokers = await cluster(t, zk, root, 3)
    const topic = uniqueName()
    // Register the topic on every broker (a put creates it).
    for (const b of brokers) await seed(b.port, topic)
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-pub/${topic}`)).length === 3, {what: 'topic on 3 brokers'})

    const roundRobin = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => roundRobin.close())
    const rr = await sendAll(roundRobin, topic, 12)
    assert.ok(rr.every((r) => r.success))
    assert.deepEqual(
      rr.map((r) => `${r.brokerId}-${r.partition}`),
      ['0-0', '0-1', '1-0', '1-1', '2-0', '2-1', '0-0', '0-1', '1-0', '1-1', '2-0', '2-1'],
      'round-robin over partitions sorted by (broker id, partition)',
    )

    const hash = createProducer({zk: zk.connect, zkRoot: root, selector: 'hash'})
    t.after(() => hash.close())
    const hashed = await sendAll(hash, topic, 30, (i) => `key-${i % 3}`)
    for (let k = 0; k < 3; k++) {
      assert.equal(new Set(hashed.filter((_, i) => i % 3 === k).map((r) => `${r.brokerId}-${r.partition}`)).size, 1, `key-${k} stays put`)
    }

    const random = createProducer({zk: zk.connect, zkRoot: root, selector: 'random'})
    t.after(() => random.close())
    const spread = new Set((await sendAll(random, topic, 60)).map((r) => r.brokerId))
    assert.equal(spread.size, 3, 'random reaches every broker')

    const consumer = createConsumer({zk: zk.connect, zkRoot: root, topics: [topic], stopAtEnd: true})
    let count = 0
    for await (const batch of consumer.batches()) count += batch.messages.length
    assert.equal(count, 3 + 12 + 30 + 60, 'a plain consumer reads every broker')
  })

  it('spreads a brand-new topic over every zero-config broker, not only the first to get it', async (t) => {
    const root = `/${uniqueName('meta')}`
    await cluster(t, zk, root, 2)
    const topic = uniqueName()
    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    const results = await sendAll(producer, topic, 8)
    assert.deepEqual([...new Set(results.map((r) => r.brokerId))].sort(), [0, 1])
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-pub/${topic}`)).join() === '0-m,1-m', {
      what: 'both brokers to register the topic at its first put',
    })
  })

  it('a group shares the partitions of several brokers and keeps MetaQ znodes', async (t) => {
    const root = `/${uniqueName('meta')}`
    const brokers = await cluster(t, zk, root, 2)
    const topic = uniqueName()
    const group = uniqueName('group')
    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    for (const b of brokers) await seed(b.port, topic)
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-sub/${topic}`)).length === 2, {what: 'topic on both brokers'})
    await sendAll(producer, topic, 20)

    const members: GroupConsumer[] = []
    const seen = new Map<string, string>()
    for (const id of [`${group}_a`, `${group}_b`]) {
      const member = createGroupConsumer({zk: zk.connect, zkRoot: root, group, topics: [topic], memberId: id, commitIntervalMs: 100})
      t.after(() => member.stop())
      members.push(member)
      void member.run({eachMessage: (m: Message) => void seen.set(m.data.toString() + m.brokerId + m.partition, id)})
    }
    const owned = (m: GroupConsumer) =>
      m
        .assignment()
        .map((p) => `${p.partition.brokerId}-${p.partition.partition}`)
        .sort()
        .join()
    // Partitions sorted as strings: 0-0 0-1 1-0 1-1; members sorted: a then b.
    await waitFor(() => owned(members[0]) === '0-0,0-1' && owned(members[1]) === '1-0,1-1', {what: 'a: broker 0, b: broker 1', timeoutMs: 20_000})
    await waitFor(() => seen.size === 22, {what: 'all 22 messages', timeoutMs: 20_000})

    assert.deepEqual(await zkChildren(client, `${root}/consumers/${group}/ids`), [`${group}_a`, `${group}_b`])
    assert.equal(await zkRead(client, `${root}/consumers/${group}/ids/${group}_a`), topic)
    assert.equal(await zkRead(client, `${root}/consumers/${group}/owners/${topic}/1-0`), `${group}_b`)
    await members[0].commit()
    await members[1].commit()
    for (const bp of ['0-0', '0-1', '1-0', '1-1']) {
      const value = await zkRead(client, `${root}/consumers/${group}/offsets/${topic}/${bp}`)
      assert.match(value ?? '', /^-?\d+-\d+$/, `offset node ${bp} is "<msgId>-<offset>"`)
    }
  })

  it('routes around a broker killed with SIGKILL and, after its restart, loses no acknowledged message', async (t) => {
    const root = `/${uniqueName('meta')}`
    const topic = uniqueName()
    const group = uniqueName('group')
    const dirs = [await tmpDir(t), await tmpDir(t)]
    // Port 0 at first; the restart takes the port the killed broker had (same address, as a restarted process).
    const args = (id: number, port = 0) => [
      '--data-dir',
      dirs[id],
      '--broker-id',
      String(id),
      '--port',
      String(port),
      '--partitions',
      '2',
      '--zk',
      zk.connect,
      '--zk-root',
      root,
      '--group-commit',
    ]
    const procs = [await spawnBroker(t, args(0)), await spawnBroker(t, args(1))]
    for (const p of procs) await seed(p.port, topic, 'seed-' + p.port)
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-pub/${topic}`)).length === 2, {what: 'topic on both brokers'})

    const producer = createProducer({zk: zk.connect, zkRoot: root, sendTimeoutMs: 1000, retries: 3})
    t.after(() => producer.close())
    const acked: string[] = ['seed-' + procs[0].port, 'seed-' + procs[1].port]
    const send = async (i: number) => {
      const r = await producer.send(topic, `m${i}`)
      if (r.success) acked.push(`m${i}`)
      return r
    }
    for (let i = 0; i < 20; i++) await send(i)

    const seen = new Set<string>()
    const member = createGroupConsumer({zk: zk.connect, zkRoot: root, group, topics: [topic], commitIntervalMs: 100})
    t.after(() => member.stop())
    void member.run({eachMessage: (m: Message) => void seen.add(m.data.toString())})
    await waitFor(() => acked.every((a) => seen.has(a)), {what: 'the first messages consumed', timeoutMs: 20_000})

    procs[1].child.kill('SIGKILL')
    await exited(procs[1].child)
    // Its ZooKeeper session lives on for a while; producers must route around it meanwhile.
    const during: SendResult[] = []
    for (let i = 20; i < 40; i++) during.push(await send(i))
    assert.ok(
      during.every((r) => r.success),
      'every send while broker 1 is down succeeds',
    )
    assert.ok(
      during.every((r) => r.brokerId === 0),
      'on broker 0',
    )

    procs[1] = await spawnBroker(t, args(1, procs[1].port))
    for (let i = 40; i < 60; i++) await send(i)
    await waitFor(() => acked.every((a) => seen.has(a)), {what: 'every acknowledged message consumed', timeoutMs: 30_000})
  })

  it('a group member whose ZooKeeper session expires registers again and keeps consuming', async (t) => {
    const root = `/${uniqueName('meta')}`
    await cluster(t, zk, root, 1)
    const topic = uniqueName()
    const group = uniqueName('group')
    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    await producer.send(topic, 'first')
    // A short session: after the forced expiry a stalled connection is noticed within ~1 s.
    const topology = new ClusterTopology({zk: zk.connect, zkRoot: root, zkSessionTimeoutMs: 4000})
    const member = createGroupConsumer({topology, group, topics: [topic], memberId: `${group}_m`, commitIntervalMs: 50})
    // The member first (it commits and leaves through the topology), then its topology.
    t.after(async () => {
      await member.stop()
      await topology.close()
    })
    const seen: string[] = []
    void member.run({eachMessage: (m: Message) => void seen.push(m.data.toString())})
    await waitFor(() => seen.includes('first'), {what: 'the first message'})
    const idsNode = `${root}/consumers/${group}/ids/${group}_m`
    const before = (await zkStat(client, idsNode))!.ephemeralOwner.toString('hex')
    await zk.expireSession((await topology.session()).raw)
    await waitFor(
      async () => {
        const s = await zkStat(client, idsNode)
        return s !== undefined && s.ephemeralOwner.toString('hex') !== before
      },
      {what: 'the member registered under a new session', timeoutMs: 20_000},
    )
    await waitFor(async () => (await zkRead(client, `${root}/consumers/${group}/owners/${topic}/0-0`)) === `${group}_m`, {
      what: 'the member to own its partition again',
    })
    await producer.send(topic, 'after expiry')
    await waitFor(() => seen.includes('after expiry'), {what: 'a message after the expiry'})
  })

  it('broadcast consumers each get every message, with file offsets, in cluster mode', async (t) => {
    const root = `/${uniqueName('meta')}`
    const brokers = await cluster(t, zk, root, 2, 1)
    const topic = uniqueName()
    for (const b of brokers) await seed(b.port, topic)
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-sub/${topic}`)).length === 2, {what: 'topic on both brokers'})
    const dir = await tmpDir(t)
    const counts = [0, 0]
    for (const i of [0, 1]) {
      const c = createGroupConsumer({
        zk: zk.connect,
        zkRoot: root,
        group: 'bcast',
        topics: [topic],
        broadcast: true,
        offsetStore: new FileOffsetStore({path: `${dir}/offsets-${i}.json`}),
      })
      t.after(() => c.stop())
      void c.run({eachMessage: () => void (counts[i] += 1)})
    }
    await waitFor(() => counts[0] === 2 && counts[1] === 2, {what: 'both broadcast consumers to see both messages'})
  })
})
