/**
 * `meta topic create|alter|delete --zk --broker-id` against a real ZooKeeper and a broker in
 * this process: create and alter publish the topic (legacy, topics-pub, topics-sub nodes);
 * delete removes its registration, the consumer offsets MetaQ's clients keep in ZooKeeper for
 * this broker's partitions of it (`consumers/<group>/offsets/<topic>/<brokerId>-<p>`), keeping
 * another broker's, and the group offsets the broker stores itself. A topic accepted by
 * zero-config mode is unregistered too, and registered again by its next first put.
 */
import assert from 'node:assert/strict'
import {readdirSync, readFileSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import type zookeeper from 'node-zookeeper-client'
import {applyOverrides, loadServerIni, startBroker, type Broker} from '../../src/broker/index.js'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {zooKeeperForSuite, zkChildren, zkRead, type TestZooKeeper} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'

const DEADLINE_MS = 60_000
const BROKER_ID = 3

function zkPut(client: zookeeper.Client, path: string, value: string): Promise<void> {
  return new Promise((resolve, reject) => client.mkdirp(path, Buffer.from(value), (error) => (error ? reject(error) : resolve())))
}

async function startClustered(t: Cleanup, zk: TestZooKeeper, root: string, topics: string): Promise<{broker: Broker; url: string}> {
  const dir = await tmpDir(t, 'meta-topic-zk-')
  const path = join(dir, 'server.ini')
  await writeFile(path, `[system]\nbrokerId=${BROKER_ID}\nnumPartitions=1\n[zookeeper]\nzk.zkRoot=${root}\n${topics}`)
  const overrides = {dataPath: join(dir, 'data'), listenHost: '127.0.0.1', serverPort: 0, zkConnect: zk.connect}
  const broker = await startBroker({config: applyOverrides(await loadServerIni(path), overrides), overrides})
  t.after(() => broker.close())
  return {broker, url: `127.0.0.1:${broker.port}`}
}

async function send(url: string, topic: string, partition: number): Promise<void> {
  const producer = createProducer({broker: url})
  try {
    const r = await producer.send(topic, 'hello', {partition})
    assert.ok(r.success, r.errorMessage)
  } finally {
    await producer.close()
  }
}

describe('meta topic create|alter|delete in cluster mode', () => {
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it('registers what is created and altered; delete removes the registration and the offsets in ZooKeeper and on the broker', async (t) => {
    const root = `/${uniqueName('meta')}`
    const {url} = await startClustered(t, zk, root, '[topic=orders]\n')
    const cli = (args: string[]) => runCli([...args, '--zk', zk.connect, '--zk-root', root], {timeoutMs: DEADLINE_MS})
    const node = (kind: string, topic: string) => zkRead(client, `${root}/brokers/${kind}/${topic}/${BROKER_ID}-m`)

    const noId = await cli(['topic', 'create', 'audit', '--partitions', '3'])
    assert.equal(noId.code, 2, noId.stderr)
    assert.match(noId.stderr, /--zk needs --broker-id/)
    const otherId = await cli(['topic', 'create', 'audit', '--partitions', '3', '--broker-id', '5'])
    assert.equal(otherId.code, 1, otherId.stderr)
    assert.match(otherId.stderr, /no broker with id 5/)

    const created = await cli(['topic', 'create', 'audit', '--partitions', '3', '--broker-id', String(BROKER_ID)])
    assert.equal(created.code, 0, created.stderr)
    assert.match(created.stdout, new RegExp(`topic "audit" created on broker ${BROKER_ID}`))
    await waitFor(async () => (await node('topics-pub', 'audit')) === `{"numParts":3,"broker":"${BROKER_ID}-m"}`, {
      what: 'audit in topics-pub with 3 partitions',
    })
    const altered = await cli(['topic', 'alter', 'audit', '--partitions', '4', '--broker-id', String(BROKER_ID)])
    assert.equal(altered.code, 0, altered.stderr)
    await waitFor(async () => (await node('topics-pub', 'audit')) === `{"numParts":4,"broker":"${BROKER_ID}-m"}`, {what: 'audit republished with 4 partitions'})
    assert.equal(await node('topics-sub', 'audit'), `{"numParts":4,"broker":"${BROKER_ID}-m"}`)
    assert.equal(await node('topics', 'audit'), '4')

    await send(url, 'audit', 0)
    await send(url, 'audit', 1)
    // Offsets as MetaQ's clients keep them; broker 4's partitions of the same topic are not ours.
    const offsets = (group: string, topic: string) => `${root}/consumers/${group}/offsets/${topic}`
    await zkPut(client, `${offsets('g1', 'audit')}/${BROKER_ID}-0`, '-1-0')
    await zkPut(client, `${offsets('g1', 'audit')}/${BROKER_ID}-1`, '-1-0')
    await zkPut(client, `${offsets('g1', 'audit')}/4-0`, '-1-20')
    await zkPut(client, `${offsets('g2', 'audit')}/${BROKER_ID}-2`, '-1-0')
    await zkPut(client, `${offsets('g2', 'orders')}/${BROKER_ID}-0`, '-1-0')
    const admin = await connectAdmin({broker: url})
    t.after(() => admin.close())
    await admin.commitOffsets('local', [
      {topic: 'audit', partition: 0, offset: 0},
      {topic: 'orders', partition: 0, offset: 0},
    ] as never)

    const dry = await cli(['topic', 'delete', 'audit', '--broker-id', String(BROKER_ID)])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, /GROUPS\s+ZK-GROUPS$/m)
    assert.match(dry.stdout, /audit\s+4\s+0,1\s+2\s+\d+ B\s+-\s+local\s+g1,g2$/m)
    assert.deepEqual(await zkChildren(client, offsets('g1', 'audit')), [`${BROKER_ID}-0`, `${BROKER_ID}-1`, '4-0'], 'a dry run removes nothing')

    const done = await cli(['topic', 'delete', 'audit', '--execute', '--yes', '--json', '--broker-id', String(BROKER_ID)])
    assert.equal(done.code, 0, done.stderr)
    assert.deepEqual(JSON.parse(done.stdout)[0].removed.zkGroups, ['g1', 'g2'])
    assert.deepEqual(await zkChildren(client, offsets('g1', 'audit')), ['4-0'], "broker 4's offset stays")
    assert.equal(await zkRead(client, offsets('g2', 'audit')), undefined, 'an emptied offsets/<topic> node goes')
    assert.equal(await zkRead(client, `${offsets('g2', 'orders')}/${BROKER_ID}-0`), '-1-0', 'another topic keeps its offsets')
    await waitFor(async () => (await node('topics-pub', 'audit')) === undefined, {what: 'audit to leave topics-pub'})
    assert.equal(await node('topics-sub', 'audit'), undefined)
    assert.equal(await node('topics', 'audit'), undefined)
    assert.notEqual(await node('topics-pub', 'orders'), undefined, 'orders stays registered')
    assert.deepEqual(
      (await admin.fetchOffsets('local')).map((o) => o.topic),
      ['orders'],
    )
  })

  it('delete unregisters a topic zero-config mode accepts; its next first put registers it again', async (t) => {
    const root = `/${uniqueName('meta')}`
    const {url} = await startClustered(t, zk, root, '')
    const node = () => zkRead(client, `${root}/brokers/topics-pub/clicks/${BROKER_ID}-m`)
    await send(url, 'clicks', 0)
    await waitFor(async () => (await node()) !== undefined, {what: 'clicks registered at its first put'})

    const done = await runCli(['topic', 'delete', 'clicks', '--execute', '--yes', '--zk', zk.connect, '--zk-root', root, '--broker-id', String(BROKER_ID)], {
      timeoutMs: DEADLINE_MS,
    })
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stderr, /note: this broker still accepts "clicks"/)
    assert.equal(await node(), undefined, 'unregistered by the delete')

    await send(url, 'clicks', 0)
    await waitFor(async () => (await node()) !== undefined, {what: 'clicks registered again by its next first put'})
  })

  it('a broker killed right after it recorded a delete finishes it at its restart, in ZooKeeper too', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dataPath = await tmpDir(t)
    const args = ['--data-dir', dataPath, '--broker-id', String(BROKER_ID), '--partitions', '1', '--zk', zk.connect, '--zk-root', root]
    // The broker kills itself (SIGKILL) once the intent is saved, before anything is removed (src/broker/topic-delete.ts).
    const doomed = await spawnBroker(t, args, {env: {META_TEST_KILL_AT: 'topic-delete:intent'}})
    const url = `127.0.0.1:${doomed.port}`
    const cli = (args: string[]) => runCli([...args, '-b', url], {timeoutMs: DEADLINE_MS})
    assert.equal((await cli(['topic', 'create', 'audit', '--partitions', '3'])).code, 0)
    for (const p of [0, 1, 2]) await send(url, 'audit', p)
    const offsets = `${root}/consumers/g1/offsets/audit`
    await zkPut(client, `${offsets}/${BROKER_ID}-2`, '-1-0')
    await zkPut(client, `${offsets}/4-0`, '-1-20')
    const cut = await cli(['topic', 'delete', 'audit', '--execute'])
    assert.equal(cut.code, 1, cut.stderr)
    assert.deepEqual(await exited(doomed.child), {code: null, signal: 'SIGKILL'})
    assert.deepEqual(await zkChildren(client, offsets), [`${BROKER_ID}-2`, '4-0'], 'killed before the ZooKeeper step')

    const again = await spawnBroker(t, args, {timeoutMs: DEADLINE_MS})
    assert.deepEqual(
      readdirSync(dataPath).filter((n) => n.startsWith('audit-')),
      [],
      'its data went before the broker listened',
    )
    await waitFor(async () => (await zkChildren(client, offsets)).join() === '4-0', {
      what: "this broker's offsets of audit removed in ZooKeeper",
      timeoutMs: DEADLINE_MS,
    })
    const intent = join(dataPath, '__meta_state', 'topic-deletes.json')
    await waitFor(() => !('audit' in (JSON.parse(readFileSync(intent, 'utf8')) as {topics: object}).topics), {what: 'the intent withdrawn'})
    const describe = await runCli(['topic', 'describe', 'audit', '-b', `127.0.0.1:${again.port}`], {timeoutMs: DEADLINE_MS})
    assert.equal(describe.code, 1, describe.stdout)
  })

  it('delete --execute with ZooKeeper gone: refused within the client timeout (SERVICE_UNAVAILABLE), nothing deleted', async (t) => {
    const root = `/${uniqueName('meta')}`
    const {broker, url} = await startClustered(t, zk, root, '[topic=orders]\n')
    const admin = await connectAdmin({broker: url})
    t.after(() => admin.close())
    await admin.topicAdmin('create', 'kept', {settings: {numPartitions: '1'}})
    await send(url, 'kept', 0)
    await zk.stop()
    try {
      await assert.rejects(admin.topicAdmin('delete', 'kept', {execute: true}), (error: Error & {code?: string}) => {
        assert.equal(error.code, 'SERVICE_UNAVAILABLE', error.message)
        assert.match(
          error.message,
          /^topic delete "kept": cannot (read|remove) its consumer offsets in ZooKeeper \(.+\): its data, configuration and group offsets on this broker are untouched; try again$/,
        )
        return true
      })
      assert.notEqual(broker.store.get('kept', 0), undefined, 'the data stays')
      assert.equal(broker.topics.resolve('kept')?.numPartitions, 1, 'the topic stays configured')
    } finally {
      await zk.start()
    }
  })
})
