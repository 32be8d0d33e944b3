/**
 * Broker registration in a real ZooKeeper, checked byte for byte against the nodes a MetaQ
 * 1.4 master writes (docs/protocol.md#zookeeper), including the legacy nodes older clients read;
 * re-registration after a session expiry and a ZooKeeper restart; a duplicate broker id
 * refused; clean unregistration; leaving topics-pub while puts fail (a full disk injected
 * through the broker's file operations).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {startTestBroker} from '../helpers/broker.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead, zkStat} from '../helpers/zookeeper.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {CreateMode, ZkSession} from '../../src/cluster/zk-session.js'

const INI = (root: string) => `[system]
brokerId=7
numPartitions=3
[zookeeper]
zk.zkRoot=${root}
[topic=orders]
numPartitions=4
[topic=audit]
acceptPublish=false
[topic=logs-*]
`

describe('broker registration in ZooKeeper', () => {
  // One ZooKeeper for the file; each test uses its own root.
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it('writes the nodes MetaQ 1.4 clients read, byte for byte', async (t) => {
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    const url = `meta://127.0.0.1:${broker.port}`
    assert.equal(await zkRead(client, `${root}/brokers/ids/7`), url)
    assert.equal(await zkRead(client, `${root}/brokers/ids/7/master`), url)
    assert.equal(await zkRead(client, `${root}/brokers/ids/7/master_config_checksum`), String(broker.config.checksum))
    const masterStat = await zkStat(client, `${root}/brokers/ids/7/master`)
    assert.notEqual(masterStat!.ephemeralOwner.toString('hex'), '0000000000000000', 'master is ephemeral')
    assert.equal((await zkStat(client, `${root}/brokers/ids/7`))!.ephemeralOwner.toString('hex'), '0000000000000000', 'ids/<id> is persistent')
    assert.equal(await zkRead(client, `${root}/brokers/topics/orders/7-m`), '4')
    assert.equal(await zkRead(client, `${root}/brokers/topics-pub/orders/7-m`), '{"numParts":4,"broker":"7-m"}')
    assert.equal(await zkRead(client, `${root}/brokers/topics-sub/orders/7-m`), '{"numParts":4,"broker":"7-m"}')
    assert.equal(await zkRead(client, `${root}/brokers/topics/audit/7-m`), '3')
    assert.equal(await zkRead(client, `${root}/brokers/topics-pub/audit/7-m`), undefined, 'acceptPublish=false: not in topics-pub')
    assert.equal(await zkRead(client, `${root}/brokers/topics-sub/audit/7-m`), '{"numParts":3,"broker":"7-m"}')
    assert.equal(await zkRead(client, `${root}/brokers/topics/logs-*/7-m`), undefined, 'patterns are not topics')
  })

  it('registers a new topic at its first put', async (t) => {
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    const raw = await RawClient.connect(t, broker.port)
    await raw.request('put logs-web 2 1 0 -1 1\r\nx')
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-pub/logs-web/7-m`)) === '{"numParts":3,"broker":"7-m"}', {
      what: 'logs-web in topics-pub',
    })
    assert.equal(await zkRead(client, `${root}/brokers/topics/logs-web/7-m`), '3')
  })

  it('refuses a second broker with the same id', async (t) => {
    const root = `/${uniqueName('meta')}`
    await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    await assert.rejects(
      startTestBroker(t, {ini: INI(root), zkConnect: zk.connect}),
      /broker id 7 is already registered in ZooKeeper by meta:\/\/127\.0\.0\.1:\d+ .*give this broker another brokerId/,
    )
  })

  it('refuses puts from then on when another live broker took its id while its session was gone (a failover)', async (t) => {
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {ini: INI(root).replace('[zookeeper]\n', '[zookeeper]\nzk.zkSessionTimeoutMs=4000\n'), zkConnect: zk.connect})
    const other = await startTestBroker(t, {brokerId: 7}) // reachable, not in ZooKeeper
    const master = `${root}/brokers/ids/7/master`
    const otherUrl = `meta://127.0.0.1:${other.port}`
    // What a slave's failover does while this broker's session is gone: the node is another's.
    await new Promise<void>((resolve, reject) => client.remove(master, -1, (error) => (error ? reject(error) : resolve())))
    await new Promise<void>((resolve, reject) =>
      client.create(master, Buffer.from(otherUrl), 1 /* EPHEMERAL */, (error) => (error ? reject(error) : resolve())),
    )
    await zk.expireSession(broker.cluster!.session.raw)
    const raw = await RawClient.connect(t, broker.port)
    const refused = await waitFor(
      async () => {
        const reply = await raw.request('put orders 0 1 0 -1 1\r\nx')
        return reply.type === 'result' && reply.code === 500 ? reply : undefined
      },
      {what: 'the broker to refuse puts', timeoutMs: 30_000},
    )
    assert.match(
      text(refused),
      new RegExp(
        `broker id 7 is now held in ZooKeeper by ${otherUrl.replaceAll('.', '\\.')} .*no longer accepts puts; restart it as a slave of the new master \\[code=SLAVE_READ_ONLY\\]$`,
      ),
    )
    await broker.close()
    assert.equal(await zkRead(client, master), otherUrl, "its clean stop left the new master's node alone")
  })

  it('re-registers after its session expires, and after a ZooKeeper restart', async (t) => {
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {ini: INI(root).replace('[zookeeper]\n', '[zookeeper]\nzk.zkSessionTimeoutMs=4000\n'), zkConnect: zk.connect})
    const master = `${root}/brokers/ids/7/master`
    const first = (await zkStat(client, master))!.ephemeralOwner.toString('hex')
    await zk.expireSession(broker.cluster!.session.raw)
    await waitFor(
      async () => {
        const s = await zkStat(client, master)
        return s !== undefined && s.ephemeralOwner.toString('hex') !== first
      },
      {what: 'the master node under a new session', timeoutMs: 20_000},
    )
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-pub/orders/7-m`)) === '{"numParts":4,"broker":"7-m"}', {
      what: 'topics re-registered under the new session',
    })

    await zk.stop()
    await zk.start()
    client = await zk.client()
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-pub/orders/7-m`)) !== undefined, {
      what: 'registration after the ZooKeeper restart',
      timeoutMs: 20_000,
    })
  })

  it('takes over an ephemeral node a previous run left without a moment where it is missing', async (t) => {
    // A broker restarted after kill -9 finds its own `ids/<id>/master` from the dead run (whose
    // session lives on): a reader that re-reads at every change must never find it gone, or
    // consumers would switch to a slave and back.
    const path = `/${uniqueName('meta')}/brokers/ids/0/master`
    const previous = await ZkSession.connect({connect: zk.connect})
    t.after(() => previous.close())
    await previous.put(path, 'meta://127.0.0.1:1', CreateMode.EPHEMERAL)
    const seen: Array<string | undefined> = []
    const reader = await ZkSession.connect({connect: zk.connect})
    t.after(() => reader.close())
    // A read of a missing node sets no data watch: watch for its creation instead.
    const read = (): void => {
      void reader
        .getString(path, read)
        .then(async (value) => {
          seen.push(value)
          if (value === undefined) await reader.exists(path, read)
        })
        .catch(() => seen.push('read failed'))
    }
    read()
    await waitFor(() => (seen.length > 0 ? true : undefined), {what: 'the first read'})
    const next = await ZkSession.connect({connect: zk.connect})
    t.after(() => next.close())
    await next.put(path, 'meta://127.0.0.1:2', CreateMode.EPHEMERAL)
    await waitFor(() => (seen.at(-1) === 'meta://127.0.0.1:2' ? true : undefined), {what: 'the reader to see the new registration'})
    assert.deepEqual(
      seen.filter((v) => v !== 'meta://127.0.0.1:1' && v !== 'meta://127.0.0.1:2'),
      [],
      `every read found the node: ${seen.map((v) => v ?? '(missing)').join(', ')}`,
    )
    assert.equal((await reader.exists(path))!.ephemeralOwner.toString('hex'), next.sessionId, "the node is the new session's")
  })

  it('removes its nodes on a clean stop', async (t) => {
    const root = `/${uniqueName('meta')}`
    const broker = await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    await broker.close()
    assert.equal(await zkRead(client, `${root}/brokers/ids/7/master`), undefined)
    assert.equal(await zkRead(client, `${root}/brokers/ids/7`), undefined)
    assert.equal(await zkRead(client, `${root}/brokers/topics-pub/orders/7-m`), undefined)
  })

  it('leaves topics-pub while puts fail and returns once its disk accepts writes', async (t) => {
    const root = `/${uniqueName('meta')}`
    // A full disk, injected through the store's file operations: every write fails with ENOSPC.
    const fileOps = new FaultFileOps()
    const broker = await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect, fileOps})
    const pub = `${root}/brokers/topics-pub/orders/7-m`
    await waitFor(async () => (await zkRead(client, pub)) !== undefined, {what: 'orders in topics-pub'})
    const raw = await RawClient.connect(t, broker.port)
    fileOps.failWrites = 'ENOSPC'
    const failed = await raw.request('put orders 0 1 0 -1 1\r\nx')
    assert.ok(failed.type === 'result' && failed.code === 500, text(failed))
    assert.match(text(failed), /\[code=DISK_FULL\]$/)
    await waitFor(async () => (await zkRead(client, pub)) === undefined, {what: 'orders to leave topics-pub'})
    fileOps.failWrites = undefined
    assert.equal(await zkRead(client, `${root}/brokers/topics-sub/orders/7-m`), '{"numParts":4,"broker":"7-m"}', 'still readable')
    await waitFor(async () => (await zkRead(client, pub)) !== undefined, {what: 'the write probe to succeed', timeoutMs: 15_000})
  })
})
