/**
 * Transactions in a cluster (real ZooKeeper, two brokers): every message of a producer's
 * transaction goes to partitions of one broker (MetaQ's rule), the commit makes them visible
 * there, and an XaResource's recover() asks every broker.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createProducer, createXaResource} from '../../src/client/index.js'
import type {Broker} from '../../src/broker/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {startZooKeeper, zkChildren, type TestZooKeeper} from '../helpers/zookeeper.js'
import {suiteScope, uniqueName, waitFor} from '../helpers/index.js'
import {readAll} from '../cli/support.js'

describe('transactions in a cluster', () => {
  const scope = suiteScope()
  let zk: TestZooKeeper
  before(async () => {
    zk = await startZooKeeper(scope)
  })
  after(() => scope.run())

  it('a transaction stays on one broker; recover() asks every broker', async (t) => {
    const root = `/${uniqueName('meta')}`
    const brokers: Broker[] = []
    for (const id of [0, 1]) {
      brokers.push(await startTestBroker(t, {ini: `[system]\nbrokerId=${id}\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\n`, zkConnect: zk.connect}))
    }
    const topic = uniqueName()
    for (const b of brokers) {
      const seed = createProducer({broker: `127.0.0.1:${b.port}`})
      await seed.send(topic, 'seed')
      await seed.close()
    }
    const client = await zk.client()
    await waitFor(async () => (await zkChildren(client, `${root}/brokers/topics-pub/${topic}`)).length === 2, {what: 'topic on 2 brokers', timeoutMs: 30_000})

    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    await waitFor(async () => (await producer.send(topic, 'warm')).success, {what: 'the producer to see the cluster', timeoutMs: 30_000})
    producer.beginTransaction()
    const results = await Promise.all(Array.from({length: 8}, (_, i) => producer.send(topic, `tx${i}`)))
    assert.ok(
      results.every((r) => r.success),
      results.map((r) => r.errorMessage).join(','),
    )
    const summary = await producer.commit()
    assert.equal(new Set(results.map((r) => r.brokerId)).size, 1, 'all on one broker')
    assert.equal(summary.brokerId, results[0].brokerId)
    assert.equal(new Set(results.map((r) => r.partition)).size, 2, "the selector still spreads over that broker's partitions")
    const home = brokers[summary.brokerId!]
    const there = (await readAll(home, topic)).map((m) => m.data.toString()).filter((d) => d.startsWith('tx'))
    assert.deepEqual(there.sort(), results.map((_, i) => `tx${i}`).sort())

    // XA branches prepared on one broker are found by a resource that asks them all.
    const xa = createXaResource(producer, {uniqueQualifier: 'cluster-rm'})
    const xid = {formatId: 1, globalTransactionId: Buffer.from('g1'), branchQualifier: Buffer.from('b1')}
    await xa.start(xid)
    await producer.send(topic, 'xa')
    await xa.end(xid)
    assert.equal(await xa.prepare(xid), 0)
    const other = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => other.close())
    const xa2 = createXaResource(other, {uniqueQualifier: 'cluster-rm'})
    await waitFor(async () => (await xa2.recover()).length === 1, {what: 'recover() to find the prepared branch', timeoutMs: 30_000})
    await xa2.commit(xid, false)
    assert.deepEqual(await xa2.recover(), [])
  })
})
