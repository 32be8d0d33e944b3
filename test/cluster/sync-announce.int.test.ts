/**
 * A master finds its sync slave through ZooKeeper (replication/sync-announce.ts), with real
 * brokers in this process and a real ZooKeeper: `syncSlaveFromZk` refuses puts until a sync
 * slave announced in `<root>/meta_sync_slave/<id>` is up to date, records `inSyncWith` in that
 * node, refuses a second announcing slave (it waits, warned) and follows it once the first
 * one leaves, bringing it up to date before acknowledging again. A former master rejoining
 * as the promoted broker's sync slave cuts its unacknowledged tail first (fork-point.ts).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {applyOverrides, defaultBrokerConfig, startBroker, type Broker, type ConfigOverrides} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {parseSyncStats} from '../../src/protocol/meta-stats-body.js'
import {startTestBroker} from '../helpers/broker.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {runCli} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import type {Logger} from '../../src/log.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

async function startSyncSlave(t: Cleanup, root: string, slaveId: number, logger?: Logger, close = true, extra: ConfigOverrides = {}): Promise<Broker> {
  const config = applyOverrides(defaultBrokerConfig(), {
    listenHost: '127.0.0.1',
    serverPort: 0,
    dataPath: extra.dataPath ?? (await tmpDir(t, 'meta-sync-slave-')),
    ...extra,
    brokerId: 0,
    numPartitions: 2,
    syncSlave: true,
    zkConnect: zk.connect,
    zkRoot: root,
  })
  const broker = await startBroker({
    config,
    logger,
    slave: {slaveId, slaveGroup: 'g', maxDelayMs: 100, connect: (address) => new BrokerConnection({...address, reconnectMaxDelayMs: 100})},
  })
  if (close) t.after(() => broker.close())
  return broker
}

describe('a master takes its sync slave from ZooKeeper (syncSlaveFromZk)', () => {
  it('refuses puts until an announced slave is up to date; one slave at a time; follows the next one', async (t) => {
    const root = `/${uniqueName('meta')}`
    const node = `${root}/meta_sync_slave/0`
    const master = await startTestBroker(t, {
      brokerId: 0,
      numPartitions: 2,
      zkConnect: zk.connect,
      zkRoot: root,
      syncSlaveFromZk: true,
      checkSlaveIntervalMs: 50,
      slaveContinuousFailureThreshold: 2,
    })
    const raw = await RawClient.connect(t, master.port)
    let opaque = 1
    const put = async (body: string, partition = 0) => text(await raw.request(`put orders ${partition} ${body.length} 0 ${opaque++}\r\n${body}`, 20_000))
    for (let i = 0; i < 3; i++)
      assert.match(await put('x'), /Slave is disconnected \(no sync slave has announced itself in ZooKeeper for broker id 0 .*\[code=SLAVE_DISCONNECTED\]$/)
    const stats = parseSyncStats(text(await raw.request(`stats meta-sync ${opaque++}\r\n`)))
    assert.ok(stats.role === 'master' && stats.slaveAddress === 'none' && !stats.slaveConnected, JSON.stringify(stats))
    // Refusals never make it leave ZooKeeper (its master node keeps a failover slave off the id).
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), master.url)

    const first = await startSyncSlave(t, root, 1, undefined, false)
    await waitFor(async () => (/^\d+ 0 \d+$/.test(await put('hello')) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'puts to be acknowledged with the first slave',
    })
    assert.deepEqual(JSON.parse((await zkRead(client, node))!), {url: first.url, inSyncWith: master.url})
    for (let i = 0; i < 20; i++) assert.match(await put(`m${i}`, i % 2), /^\d+ \d \d+$/)

    // A second announcing slave waits, warned, while the first holds the node.
    const captured = captureLogger('info')
    const second = await startSyncSlave(t, root, 2, captured.logger)
    await waitFor(() => captured.entries.find((l) => /another sync slave is announced for this broker id/.test(String(l.msg)) && l.holder === first.url), {
      timeoutMs: 30_000,
      what: 'the second slave to be told another one is announced',
    })
    assert.equal(JSON.parse((await zkRead(client, node))!).url, first.url)
    assert.match(await put('still first'), /^\d+ 0 \d+$/)
    assert.equal(second.store.get('orders', 0), undefined, 'the master does not forward to the second slave')

    // The first leaves: the second takes the node, is brought up to date, and acks resume.
    await first.close()
    await waitFor(async () => (/^\d+ 0 \d+$/.test(await put('second')) ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'puts to be acknowledged with the second slave',
    })
    assert.deepEqual(JSON.parse((await zkRead(client, node))!), {url: second.url, inSyncWith: master.url})
    assert.deepEqual(await ends(second.port), await ends(master.port))
  })

  it('a former master rejoining as sync slave cuts its unacknowledged tail, is brought up to date, and acks resume', async (t) => {
    const root = `/${uniqueName('meta')}`
    const oldDir = await tmpDir(t, 'meta-old-master-')
    const first = await startTestBroker(t, {brokerId: 0, zkConnect: zk.connect, zkRoot: root, syncSlaveFromZk: true, dataPath: oldDir, maxSegmentBytes: 2048})
    const promoted = await startSyncSlave(t, root, 1, undefined, true, {failover: true, failoverGraceMs: 0})
    const raw = await RawClient.connect(t, first.port)
    let opaque = 1
    await waitFor(async () => (/^\d+ 0 \d+$/.test(text(await raw.request(`put orders 0 5 0 ${opaque++}\r\nfirst`, 20_000))) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'acks',
    })
    for (let i = 0; i < 30; i++)
      assert.match(text(await raw.request(`put orders 0 20 0 ${opaque++}\r\n${`acked ${i}`.padEnd(20, '.')}`, 20_000)), /^\d+ 0 \d+$/)
    const fork = first.store.get('orders', 0)!.maxOffset
    await first.close()
    // The old master's data takes messages no slave ever got (as if written just before a crash).
    const alone = await startTestBroker(t, {brokerId: 0, dataPath: oldDir, maxSegmentBytes: 2048})
    const rawAlone = await RawClient.connect(t, alone.port)
    for (let i = 0; i < 12; i++)
      assert.match(text(await rawAlone.request(`put orders 0 200 0 ${i + 1}\r\n${`never acked ${i}`.padEnd(200, '!')}`, 20_000)), /^\d+ 0 \d+$/)
    await alone.close()
    const partitionDir = join(oldDir, 'orders-0')
    const segments = readdirSync(partitionDir)
      .filter((n) => /^\d{20}\.meta$/.test(n))
      .sort()
    const whole = Buffer.concat(segments.map((n) => readFileSync(join(partitionDir, n))))
    const tail = whole.subarray(fork - Number(segments[0].slice(0, 20)))
    assert.ok(tail.length > 0 && segments.length > 1, 'the tail spans segments')
    await waitFor(async () => ((await zkRead(client, `${root}/brokers/ids/0/master`)) === promoted.url ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the slave to take over',
    })

    const captured = captureLogger('info')
    const rejoined = await startSyncSlave(t, root, 2, captured.logger, true, {dataPath: oldDir})
    const rawPromoted = await RawClient.connect(t, promoted.port)
    await waitFor(async () => (/^\d+ 0 \d+$/.test(text(await rawPromoted.request(`put orders 0 5 0 ${opaque++}\r\nafter`, 20_000))) ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'acks to resume with the old master as sync slave',
    })
    const cutLine = captured.entries.find((l) => /held a divergent tail its master does not/.test(String(l.msg)))
    assert.ok(cutLine !== undefined, 'the cut is logged')
    assert.deepEqual([cutLine.topic, cutLine.partition, cutLine.fork, cutLine.oldEnd, cutLine.messages], ['orders', 0, fork, fork + tail.length, 12])
    assert.ok(readFileSync(String(cutLine.file)).equals(tail), 'the cut file holds exactly the unacknowledged tail')
    assert.equal(
      String(cutLine.file),
      join(
        partitionDir,
        readdirSync(partitionDir).find((n) => n.includes('.meta.cut-'))!,
      ),
    )
    assert.deepEqual(await ends(rejoined.port), await ends(promoted.port))
    // A promoted broker holds its id under a lease and publishes its length for a takeover (link-failover.ts).
    const announced = JSON.parse((await zkRead(client, `${root}/meta_sync_slave/0`))!) as {url: string; inSyncWith: string; leaseMs: number}
    assert.deepEqual({url: announced.url, inSyncWith: announced.inSyncWith}, {url: rejoined.url, inSyncWith: promoted.url})
    assert.ok(Number.isSafeInteger(announced.leaseMs) && announced.leaseMs > 0, `leaseMs ${announced.leaseMs}`)
  })

  it('a slave holding a tail its configured (--sync-slave-address) master lacks cuts it, and the master, which had refused the partition, compares again', async (t) => {
    const root = `/${uniqueName('meta')}`
    const slaveDir = await tmpDir(t, 'meta-ahead-slave-')
    const masterDir = await tmpDir(t, 'meta-behind-master-')
    for (const [dir, label, count] of [
      [slaveDir, 'slave only', 8],
      [masterDir, 'master', 3],
    ] as const) {
      const alone = await startTestBroker(t, {dataPath: dir})
      const rawAlone = await RawClient.connect(t, alone.port)
      for (let i = 0; i < count; i++)
        assert.match(text(await rawAlone.request(`put orders 0 30 0 ${i + 1}\r\n${`${label} ${i}`.padEnd(30, '.')}`, 20_000)), /^\d+ 0 \d+$/)
      await alone.close()
    }
    const captured = captureLogger('info')
    const slave = await startSyncSlave(t, root, 1, captured.logger, true, {dataPath: slaveDir})
    const master = await startTestBroker(t, {
      brokerId: 0,
      zkConnect: zk.connect,
      zkRoot: root,
      dataPath: masterDir,
      syncSlaveAddress: `127.0.0.1:${slave.port}`,
      checkSlaveIntervalMs: 50,
    })
    const raw = await RawClient.connect(t, master.port)
    let opaque = 1
    await waitFor(async () => (/^\d+ 0 \d+$/.test(text(await raw.request(`put orders 0 5 0 ${opaque++}\r\nafter`, 20_000))) ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 50,
      what: 'puts to orders-0 to be acknowledged once the slave cut what the master lacks',
    })
    const cut = captured.entries.find((l) => /held a divergent tail its master does not/.test(String(l.msg)))
    assert.ok(cut !== undefined && cut.fork === 0 && cut.messages === 8, JSON.stringify(cut))
    assert.deepEqual(await ends(slave.port), await ends(master.port))
  })

  it('--sync-slave-from-zk without ZooKeeper, or on a slave, is a usage error', async (t) => {
    for (const extra of [[], ['--zk', zk.connect, '--slave-id', '1']]) {
      const result = await runCli(['serve', '--port', '0', '-d', await tmpDir(t, 'meta-from-zk-usage-'), '--sync-slave-from-zk', ...extra], {timeoutMs: 60_000})
      assert.equal(result.code, 2, result.stderr)
      assert.match(result.stderr, /--sync-slave-from-zk is for a master in ZooKeeper/)
    }
  })

  it('is refused without ZooKeeper or together with another sync role', async (t) => {
    for (const overrides of [
      {syncSlaveFromZk: true},
      {syncSlaveFromZk: true, syncSlave: true, zkConnect: '127.0.0.1:1'},
      {syncSlaveFromZk: true, syncSlaveAddress: '127.0.0.1:9', zkConnect: '127.0.0.1:1'},
    ]) {
      await assert.rejects(
        startTestBroker(t, overrides),
        (e: unknown) => isMetaError(e, 'CONFIG_INVALID') && /syncSlaveFromZk=true is for a master in ZooKeeper/.test((e as Error).message),
      )
    }
  })
})
