/**
 * ZooKeeper failures in background work are retried, not swallowed, with a
 * real ZooKeeper refusing work through an ACL and then allowing it again: the broker's
 * registration of a new topic, a cluster client's re-read of partitions after a watch fired,
 * and a group member's registration under a new session. Each failure not retried would
 * stay (a topic producers never find, partitions that stay a rejected promise, a member
 * missing from its group).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import zookeeper from 'node-zookeeper-client'
import {ClusterTopology, createGroupConsumer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {zooKeeperForSuite, type TestZooKeeper, zkChildren, zkRead} from '../helpers/zookeeper.js'
import {RawClient} from '../helpers/raw-client.js'
import {uniqueName, waitFor} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'

const INI = (root: string) => `[system]\nbrokerId=7\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\n[topic=orders]\nnumPartitions=4\n[topic=logs-*]\n`

const ANYONE = new zookeeper.Id('world', 'anyone')
const {READ, CREATE, DELETE, ADMIN} = zookeeper.Permission

function call(run: (cb: (error: unknown, value?: unknown) => void) => void): Promise<unknown> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value))))
}

/** Create `path` (and its parents, open) with `permissions` for anyone. */
async function createRestricted(client: zookeeper.Client, path: string, permissions: number): Promise<void> {
  await call((cb) => client.mkdirp(path.slice(0, path.lastIndexOf('/')), cb))
  await call((cb) => client.create(path, Buffer.alloc(0), [new zookeeper.ACL(permissions, ANYONE)], zookeeper.CreateMode.PERSISTENT, cb))
}

async function restrict(client: zookeeper.Client, path: string, permissions: number): Promise<void> {
  await call((cb) => client.setACL(path, [new zookeeper.ACL(permissions, ANYONE)], -1, cb))
}

// (ZooKeeper does not send a watch event to a client that may not read the node, so the
// refusals below are on what the re-read reads after the event, never on the watched node.)

async function open(client: zookeeper.Client, path: string): Promise<void> {
  await call((cb) => client.setACL(path, [new zookeeper.ACL(zookeeper.Permission.ALL, ANYONE)], -1, cb))
}

describe('ZooKeeper work that fails is retried', () => {
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it('the broker registers a new topic once ZooKeeper lets it', async (t) => {
    const root = `/${uniqueName('meta')}`
    const {logger, entries: lines} = captureLogger('warn')
    const broker = await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect, logger})
    // The topic's legacy node may not get children for now: creating 7-m there fails.
    await createRestricted(client, `${root}/brokers/topics/logs-web`, READ | ADMIN)
    const raw = await RawClient.connect(t, broker.port)
    const put = await raw.request('put logs-web 0 1 0 -1 1\r\nx')
    assert.ok(put.type === 'result' && put.code === 200, 'the put itself succeeds')
    await waitFor(() => lines.some((l) => String(l.msg).startsWith('ZooKeeper: cannot register a new topic; retrying') && l.topic === 'logs-web'), {
      what: 'the failed registration to be logged with its topic',
    })
    assert.equal(await zkRead(client, `${root}/brokers/topics-pub/logs-web/7-m`), undefined)
    await open(client, `${root}/brokers/topics/logs-web`)
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-pub/logs-web/7-m`)) === '{"numParts":2,"broker":"7-m"}', {
      what: 'logs-web registered once allowed',
    })
    assert.equal(await zkRead(client, `${root}/brokers/topics/logs-web/7-m`), '2')
  })

  it('a cluster client reads partitions again after a re-read failed', async (t) => {
    const root = `/${uniqueName('meta')}`
    await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    const {logger, entries: lines} = captureLogger('warn')
    const topology = new ClusterTopology({zk: zk.connect, zkRoot: root, logger})
    t.after(() => topology.close())
    assert.equal((await topology.publishPartitions('orders')).length, 4)
    // Another broker's partitions appear, in a node nobody may read for now: the watch fires
    // and the re-read is refused.
    const node = `${root}/brokers/topics-pub/orders/9-m`
    await call((cb) =>
      client.create(
        node,
        Buffer.from('{"numParts":2,"broker":"9-m"}'),
        [new zookeeper.ACL(CREATE | DELETE | ADMIN, ANYONE)],
        zookeeper.CreateMode.PERSISTENT,
        cb,
      ),
    )
    await waitFor(() => lines.some((l) => String(l.msg).startsWith('cannot re-read partitions; retrying') && l.topic === 'orders'), {
      what: 'the failed re-read to be logged',
    })
    await open(client, node)
    const partitions = await waitFor(
      async () => {
        const list = await topology.publishPartitions('orders')
        return list.length === 6 ? list : undefined
      },
      {what: "broker 9's partitions once the re-read is allowed"},
    )
    assert.deepEqual(
      partitions.map((p) => `${p.brokerId}-${p.partition}`),
      ['7-0', '7-1', '7-2', '7-3', '9-0', '9-1'],
    )
  })

  it('a group member registers again under a new session once ZooKeeper lets it', async (t) => {
    const root = `/${uniqueName('meta')}`
    await startTestBroker(t, {ini: INI(root), zkConnect: zk.connect})
    const group = uniqueName('group')
    const {logger, entries: lines} = captureLogger('warn')
    const topology = new ClusterTopology({zk: zk.connect, zkRoot: root, zkSessionTimeoutMs: 4000, logger})
    t.after(() => topology.close())
    const member = createGroupConsumer({topology, group, topics: ['orders'], memberId: 'm1', logger})
    t.after(() => member.stop())
    const running = member.run({eachMessage: () => {}})
    const ids = `${root}/consumers/${group}/ids`
    await waitFor(() => member.assignment().length === 4, {what: 'the member to own the 4 partitions'})
    await restrict(client, ids, READ | DELETE | ADMIN) // no new members for now
    await zk.expireSession((await topology.session()).raw)
    await waitFor(() => lines.some((l) => String(l.msg).startsWith('cannot register the member again; retrying')), {
      what: 'the refused registration to be logged',
    })
    assert.deepEqual(await zkChildren(client, ids), [], 'the expired session took the member node with it')
    await open(client, ids)
    await waitFor(async () => (await zkChildren(client, ids)).includes('m1'), {what: 'the member registered again'})
    await member.stop()
    await running // resolves: the member kept running through all of it
  })
})
