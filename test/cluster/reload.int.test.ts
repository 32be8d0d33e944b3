/**
 * Reload in cluster mode against a real ZooKeeper: a new topic is registered, a raised
 * partition count is republished (legacy, topics-pub and topics-sub nodes), a topic whose
 * section is removed is unregistered, acceptPublish=false takes it out of topics-pub,
 * `master_config_checksum` follows the file, and a producer finding brokers in ZooKeeper
 * starts using the new partitions. `meta reload --zk` reaches every broker.
 */
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import type zookeeper from 'node-zookeeper-client'
import {applyOverrides, loadServerIni, startBroker} from '../../src/broker/index.js'
import {createProducer} from '../../src/client/index.js'
import {zooKeeperForSuite, zkRead, type TestZooKeeper} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

describe('config reload in cluster mode', () => {
  let zk: TestZooKeeper
  let client: zookeeper.Client
  zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

  it('registers, republishes and unregisters topics and updates master_config_checksum', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t)
    const path = join(dir, 'server.ini')
    const ini = (topics: string) => `[system]\nbrokerId=3\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\n${topics}`
    await writeFile(path, ini('[topic=orders]\n[topic=old]\n'))
    const overrides = {dataPath: join(dir, 'data'), listenHost: '127.0.0.1', serverPort: 0, zkConnect: zk.connect}
    const broker = await startBroker({config: applyOverrides(await loadServerIni(path), overrides), overrides})
    t.after(() => broker.close())
    const node = (kind: string, topic: string) => zkRead(client, `${root}/brokers/${kind}/${topic}/3-m`)
    assert.equal(await node('topics-pub', 'orders'), '{"numParts":2,"broker":"3-m"}')
    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    assert.ok((await producer.send('orders', 'before')).success)

    await writeFile(path, ini('[topic=orders]\nnumPartitions=4\n[topic=audit]\nacceptPublish=false\n'))
    const cli = await runCli(['reload', '--zk', zk.connect, '--zk-root', root, '--json'])
    assert.equal(cli.code, 0, cli.stderr)
    const [report] = JSON.parse(cli.stdout)
    assert.equal(report.brokerId, 3)
    assert.deepEqual([report.topicsAdded, report.topicsRemoved], [['audit'], ['old']])

    await waitFor(async () => (await node('topics-pub', 'orders')) === '{"numParts":4,"broker":"3-m"}', {what: 'orders republished with 4 partitions'})
    assert.equal(await node('topics-sub', 'orders'), '{"numParts":4,"broker":"3-m"}')
    assert.equal(await node('topics', 'orders'), '4')
    assert.equal(await node('topics-sub', 'audit'), '{"numParts":2,"broker":"3-m"}')
    assert.equal(await node('topics-pub', 'audit'), undefined, 'acceptPublish=false')
    assert.equal(await node('topics-sub', 'old'), undefined, 'a removed section is unregistered')
    assert.equal(await node('topics', 'old'), undefined)
    assert.equal(await zkRead(client, `${root}/brokers/ids/3/master_config_checksum`), String(report.checksumAfter))
    assert.equal(broker.config.checksum, report.checksumAfter)

    const used = new Set<number>()
    await waitFor(
      async () => {
        const r = await producer.send('orders', 'spread')
        assert.ok(r.success, r.errorMessage)
        used.add(r.partition)
        return used.has(3)
      },
      {what: 'the cluster producer to use partition 3', timeoutMs: 15_000},
    )

    // The internal API a slave uses to apply its master's server.ini (text, not a path).
    const text = ini('[topic=orders]\nnumPartitions=4\n[topic=audit]\n')
    const applied = await broker.reload({text, path})
    assert.deepEqual(
      applied.changes.map((c) => `${c.section} ${c.key} ${c.before} → ${c.after}`),
      ['topic=audit acceptPublish false → true'],
    )
    await waitFor(async () => (await node('topics-pub', 'audit')) !== undefined, {what: 'audit back in topics-pub'})
  })
})
