/**
 * recoverOffset (broker/replication/recover-offset.ts, docs/protocol.md#synchronous-replication): a
 * broker started with it rewrites the committed offsets of its broker id in ZooKeeper to its own
 * positions of their messages before registering; entries whose message it does not hold are left,
 * or, when none matched, reset to -1-0 as MetaQ does.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {zooKeeperForSuite, zkRead, type TestZooKeeper} from '../helpers/zookeeper.js'
import {recoverOffsets} from '../../src/broker/replication/recover-offset.js'
import {ZkPaths} from '../../src/cluster/paths.js'
import {ZkSession} from '../../src/cluster/zk-session.js'
import {MessageStore} from '../../src/storage/index.js'
import {silentLogger} from '../../src/log.js'

function write(client: zookeeper.Client, path: string, value: string): Promise<void> {
  return new Promise((resolve, reject) => client.mkdirp(path, Buffer.from(value), (error) => (error ? reject(error) : resolve())))
}

/** A data directory holding three 5-byte messages in t-0 (offsets 0, 25, 50); their ids. */
async function dataWithThreeMessages(t: {after(fn: () => unknown): void}): Promise<{dir: string; ids: string[]}> {
  const dir = await tmpDir(t, 'meta-recover-')
  const broker = await startTestBroker(t, {dataPath: dir, brokerId: 5})
  const client = await RawClient.connect(t, broker.port)
  const ids: string[] = []
  for (const word of ['one__', 'two__', 'three']) ids.push(text(await client.request(`put t 0 5 0 -1 1\r\n${word}`)).split(' ')[0])
  await broker.close()
  return {dir, ids}
}

describe('recoverOffset', () => {
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it("rewrites this broker id's committed offsets to the position after their message, leaves others", async (t) => {
    const root = `/${uniqueName('recover')}`
    const {dir, ids} = await dataWithThreeMessages(t)
    const moved = `${root}/consumers/g1/offsets/t/5-0`
    const missing = `${root}/consumers/g2/offsets/t/5-0`
    const otherBroker = `${root}/consumers/g3/offsets/t/6-0`
    const none = `${root}/consumers/g4/offsets/t/5-0`
    await write(client, moved, `${ids[1]}-999`)
    await write(client, missing, '12345-7')
    await write(client, otherBroker, `${ids[1]}-999`)
    await write(client, none, '-1-0')
    await startTestBroker(t, {dataPath: dir, brokerId: 5, zkConnect: zk.connect, zkRoot: root, recoverOffset: true})
    assert.equal(await zkRead(client, moved), `${ids[1]}-50`, 'after the second message (25 + 25)')
    assert.equal(await zkRead(client, missing), '12345-7', 'unmatched, but others matched: left as it is')
    assert.equal(await zkRead(client, otherBroker), `${ids[1]}-999`, 'another broker id: untouched')
    assert.equal(await zkRead(client, none), '-1-0')
    assert.ok(await zkRead(client, `${root}/brokers/ids/5/master`), 'registered after the rewrite')
  })

  it('resets the entries to -1-0 when none matches a message here (as MetaQ does)', async (t) => {
    const root = `/${uniqueName('recover')}`
    const {dir} = await dataWithThreeMessages(t)
    const path = `${root}/consumers/g1/offsets/t/5-0`
    await write(client, path, '777-25')
    await startTestBroker(t, {dataPath: dir, brokerId: 5, zkConnect: zk.connect, zkRoot: root, recoverOffset: true})
    assert.equal(await zkRead(client, path), '-1-0')
  })

  it('a failover (resetWhenNoneMatched false) leaves unmatched entries as they are', async (t) => {
    const root = `/${uniqueName('recover')}`
    const {dir} = await dataWithThreeMessages(t)
    const past = `${root}/consumers/g1/offsets/t/5-0`
    await write(client, past, '12345-75')
    const store = await MessageStore.open({
      dataPath: dir,
      topicConfig: () => ({dataPath: dir, unflushThreshold: 1000, unflushIntervalMs: 10_000, maxSegmentBytes: 1 << 20}),
    })
    t.after(() => store.close())
    const session = await ZkSession.connect({connect: zk.connect, sessionTimeoutMs: 10_000, connectTimeoutMs: 30_000, logger: silentLogger})
    t.after(() => session.close())
    const report = await recoverOffsets({session, paths: new ZkPaths(root), brokerId: 5, store, log: silentLogger, resetWhenNoneMatched: false})
    assert.deepEqual(report, {matched: 0, rewritten: 0, unmatched: [past], reset: false})
    assert.equal(await zkRead(client, past), '12345-75', 'a message the promoted slave never fetched: kept, not reset to -1-0')
  })

  it('without recoverOffset nothing is rewritten', async (t) => {
    const root = `/${uniqueName('recover')}`
    const {dir, ids} = await dataWithThreeMessages(t)
    const path = `${root}/consumers/g1/offsets/t/5-0`
    await write(client, path, `${ids[0]}-999`)
    await startTestBroker(t, {dataPath: dir, brokerId: 5, zkConnect: zk.connect, zkRoot: root})
    assert.equal(await zkRead(client, path), `${ids[0]}-999`)
  })
})
