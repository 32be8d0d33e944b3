/**
 * An asynchronous slave follows the topics its master creates, changes and deletes online
 * (the master's topic overlay, `stats meta-topic-overlay`, applied with its server.ini): the
 * built CLI and the client against a master started from a server.ini with topic sections (so
 * neither broker accepts any topic) and a slave following it. A synchronous slave takes the
 * overlay from its master over the sync link (sync-overlay). Deadlines, no fixed sleeps.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startAsyncSlave, startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const DEADLINE_MS = 30_000

const MASTER_INI = `[system]
numPartitions=1
[topic=orders]
`

/** The effective settings of `topic` on the broker at `url` (null when it does not serve it). */
async function effective(url: string, topic: string): Promise<Record<string, string> | null> {
  const admin = await connectAdmin({broker: url})
  try {
    return (await admin.topicAdmin('show', topic)).effective
  } catch {
    return null
  } finally {
    await admin.close()
  }
}

async function cli(args: string[]): Promise<string> {
  const r = await runCli(args, {timeoutMs: DEADLINE_MS})
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`)
  return r.stdout
}

describe("an asynchronous slave follows its master's online topics", () => {
  it('serves a topic created online on the master, grows it with alter and drops it with delete', async (t) => {
    const master = await startTestBroker(t, {ini: MASTER_INI})
    const masterUrl = `127.0.0.1:${master.port}`
    const slaveDir = await tmpDir(t, 'meta-slave-')
    const slave = await startAsyncSlave(t, {master, dataPath: slaveDir})
    const slaveUrl = `127.0.0.1:${slave.port}`
    // The slave took the master's server.ini: it serves orders and no other topic.
    await waitFor(async () => (await effective(slaveUrl, 'orders')) !== null, {what: 'the slave to apply the master config', timeoutMs: DEADLINE_MS})

    await cli(['topic', 'create', 'audit', '--partitions', '3', '--set', 'unflushThreshold=7', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    const sent = await producer.send('audit', 'on partition two', {partition: 2})
    assert.ok(sent.success, sent.errorMessage)

    await waitFor(async () => (await effective(slaveUrl, 'audit'))?.numPartitions === '3', {
      what: 'the slave to serve audit with 3 partitions',
      timeoutMs: DEADLINE_MS,
    })
    assert.equal((await effective(slaveUrl, 'audit'))?.unflushThreshold, '7')
    await waitFor(() => (slave.store.get('audit', 2)?.maxOffset ?? 0) > 0, {what: 'the slave to copy audit-2', timeoutMs: DEADLINE_MS})
    const described = JSON.parse(await cli(['topic', 'describe', 'audit', '--json', '-b', slaveUrl])) as {partitions: Array<{partition: number}>}
    assert.deepEqual(
      described.partitions.map((p) => p.partition),
      [0, 1, 2],
    )
    const tail = await cli(['tail', '-t', 'audit', '-p', '2', '-o', 'beginning', '-e', '-b', slaveUrl])
    assert.match(tail, /on partition two/)

    await cli(['topic', 'alter', 'audit', '--partitions', '5', '-b', masterUrl])
    await waitFor(async () => (await effective(slaveUrl, 'audit'))?.numPartitions === '5', {
      what: 'the slave to grow audit to 5 partitions',
      timeoutMs: DEADLINE_MS,
    })
    // Kept across a restart of the slave: it saved the master's overlay as its own.
    assert.ok(existsSync(join(slaveDir, '__meta_state', 'topic-overlay.json')))

    await cli(['topic', 'delete', 'audit', '--execute', '--yes', '-b', masterUrl])
    await waitFor(async () => (await effective(slaveUrl, 'audit')) === null && slave.store.get('audit', 2) === undefined, {
      what: 'the slave to drop audit and its data',
      timeoutMs: DEADLINE_MS,
    })
    const refused = await runCli(['tail', '-t', 'audit', '-p', '2', '-o', 'beginning', '-e', '-b', slaveUrl], {timeoutMs: DEADLINE_MS})
    assert.notEqual(refused.code, 0, refused.stdout)
    // The master's orders stays served on the slave.
    assert.notEqual(await effective(slaveUrl, 'orders'), null)
  })

  it('a slave that was down while its master deleted a topic drops it when it follows again', async (t) => {
    const master = await startTestBroker(t, {ini: MASTER_INI})
    const masterUrl = `127.0.0.1:${master.port}`
    const slaveDir = await tmpDir(t, 'meta-slave-')
    const first = await startAsyncSlave(t, {master, dataPath: slaveDir})
    await cli(['topic', 'create', 'audit', '--partitions', '2', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    assert.ok((await producer.send('audit', 'hello', {partition: 1})).success)
    await waitFor(() => (first.store.get('audit', 1)?.maxOffset ?? 0) > 0, {what: 'the slave to copy audit-1', timeoutMs: DEADLINE_MS})
    await waitFor(async () => (await effective(`127.0.0.1:${first.port}`, 'audit')) !== null, {what: 'the slave to serve audit', timeoutMs: DEADLINE_MS})
    await first.close()

    await cli(['topic', 'delete', 'audit', '--execute', '--yes', '-b', masterUrl])
    const again = await startAsyncSlave(t, {master, dataPath: slaveDir})
    await waitFor(async () => (await effective(`127.0.0.1:${again.port}`, 'audit')) === null && again.store.get('audit', 1) === undefined, {
      what: 'the restarted slave to drop audit and its data',
      timeoutMs: DEADLINE_MS,
    })
  })

  it("a synchronous slave takes its master's overlay over the sync link: puts to a topic created online succeed, alter and delete follow", async (t) => {
    const slaveDir = await tmpDir(t, 'meta-sync-slave-')
    const slave = await startTestBroker(t, {ini: MASTER_INI, syncSlave: true, dataPath: slaveDir})
    const master = await startTestBroker(t, {ini: MASTER_INI, syncSlaveAddress: `127.0.0.1:${slave.port}`})
    const masterUrl = `127.0.0.1:${master.port}`
    const slaveUrl = `127.0.0.1:${slave.port}`
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    await waitFor(async () => (await producer.send('orders', 'linked', {partition: 0})).success, {what: 'the sync link to carry puts', timeoutMs: DEADLINE_MS})

    await cli(['topic', 'create', 'audit', '--partitions', '2', '--set', 'unflushThreshold=7', '-b', masterUrl])
    // The slave took the overlay before the create was acknowledged: the first put is forwarded.
    const sent = await producer.send('audit', 'hello', {partition: 1})
    assert.ok(sent.success, sent.errorMessage)
    assert.equal((await effective(slaveUrl, 'audit'))?.numPartitions, '2')
    assert.equal((await effective(slaveUrl, 'audit'))?.unflushThreshold, '7')
    assert.ok((slave.store.get('audit', 1)?.maxOffset ?? 0) > 0, 'the sync slave stores audit-1')
    // Saved as the slave's own overlay (kept across its restart).
    assert.match(readFileSync(join(slaveDir, '__meta_state', 'topic-overlay.json'), 'utf8'), /"audit"/)

    await cli(['topic', 'alter', 'audit', '--partitions', '3', '-b', masterUrl])
    assert.equal((await effective(slaveUrl, 'audit'))?.numPartitions, '3')
    // A new producer (the first knows audit's 2 partitions).
    const grown = createProducer({broker: masterUrl})
    t.after(() => grown.close())
    const third = await grown.send('audit', 'on partition two', {partition: 2})
    assert.ok(third.success, third.errorMessage)
    assert.ok((slave.store.get('audit', 2)?.maxOffset ?? 0) > 0, 'the sync slave stores audit-2')

    await cli(['topic', 'delete', 'audit', '--execute', '--yes', '-b', masterUrl])
    assert.equal(await effective(slaveUrl, 'audit'), null)
    assert.equal(slave.store.get('audit', 1), undefined)
    assert.equal(slave.store.get('audit', 2), undefined)
    // The master's orders stays written on both.
    const after = await producer.send('orders', 'still linked', {partition: 0})
    assert.ok(after.success, after.errorMessage)
  })

  it('zero-config brokers: a topic created online with more partitions than [system] numPartitions is deleted on the master and on an asynchronous and a synchronous slave', async (t) => {
    // Async pair: the slave takes the master's overlay by polling; its data goes before the overlay changes.
    const master = await startTestBroker(t, {numPartitions: 1})
    const masterUrl = `127.0.0.1:${master.port}`
    const slave = await startAsyncSlave(t, {master})
    await cli(['topic', 'create', 'wide', '--partitions', '3', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    assert.ok((await producer.send('wide', 'on partition two', {partition: 2})).success)
    await waitFor(() => (slave.store.get('wide', 2)?.maxOffset ?? 0) > 0, {what: 'the slave to copy wide-2', timeoutMs: DEADLINE_MS})
    await cli(['topic', 'delete', 'wide', '--execute', '-b', masterUrl])
    assert.equal(master.store.get('wide', 2), undefined)
    await waitFor(() => slave.store.get('wide', 2) === undefined && slave.topics.resolve('wide')?.numPartitions === 1, {
      what: 'the asynchronous slave to drop wide-2 and apply the overlay without wide',
      timeoutMs: DEADLINE_MS,
    })

    // Sync pair: the slave removes its copy when the overlay comes over the link, before the delete is acknowledged.
    const syncSlave = await startTestBroker(t, {numPartitions: 1, syncSlave: true})
    const syncMaster = await startTestBroker(t, {numPartitions: 1, syncSlaveAddress: `127.0.0.1:${syncSlave.port}`})
    const syncUrl = `127.0.0.1:${syncMaster.port}`
    await cli(['topic', 'create', 'wide', '--partitions', '3', '-b', syncUrl])
    const fresh = createProducer({broker: syncUrl})
    t.after(() => fresh.close())
    await waitFor(async () => (await fresh.send('wide', 'on partition two', {partition: 2})).success, {
      what: 'the sync link to carry puts',
      timeoutMs: DEADLINE_MS,
    })
    assert.ok((syncSlave.store.get('wide', 2)?.maxOffset ?? 0) > 0, 'the sync slave stores wide-2')
    await cli(['topic', 'delete', 'wide', '--execute', '-b', syncUrl])
    assert.equal(syncMaster.store.get('wide', 2), undefined)
    assert.equal(syncSlave.store.get('wide', 2), undefined)
    assert.equal(syncSlave.topics.resolve('wide')?.numPartitions, 1)
  })

  it('a synchronous master sends its overlay when the link connects, before the data of an online topic, and the slave keeps it across a restart', async (t) => {
    const masterDir = await tmpDir(t, 'meta-sync-master-')
    // The master created audit online and stored a message in it before it had a sync slave.
    const alone = await startTestBroker(t, {ini: MASTER_INI, dataPath: masterDir})
    await cli(['topic', 'create', 'audit', '--partitions', '2', '-b', `127.0.0.1:${alone.port}`])
    const early = createProducer({broker: `127.0.0.1:${alone.port}`})
    assert.ok((await early.send('audit', 'before the slave', {partition: 1})).success)
    await early.close()
    await alone.close()

    const slaveDir = await tmpDir(t, 'meta-sync-slave-')
    const slave = await startTestBroker(t, {ini: MASTER_INI, syncSlave: true, dataPath: slaveDir})
    const master = await startTestBroker(t, {ini: MASTER_INI, dataPath: masterDir, syncSlaveAddress: `127.0.0.1:${slave.port}`})
    const producer = createProducer({broker: `127.0.0.1:${master.port}`})
    t.after(() => producer.close())
    await waitFor(async () => (await producer.send('audit', 'with the slave', {partition: 1})).success, {
      what: 'the sync link to carry puts to audit',
      timeoutMs: DEADLINE_MS,
    })
    // The catch-up copied the earlier message too: both are on the slave.
    assert.equal(slave.store.get('audit', 1)?.maxOffset, master.store.get('audit', 1)?.maxOffset)
    await slave.close()

    const restarted = await startTestBroker(t, {ini: MASTER_INI, syncSlave: true, dataPath: slaveDir})
    assert.equal((await effective(`127.0.0.1:${restarted.port}`, 'audit'))?.numPartitions, '2')
  })
})
