/**
 * An asynchronous slave follows the topics its master creates, changes and deletes online
 * (the master's topic overlay, `stats meta-topic-overlay`, applied with its server.ini): the
 * built CLI and the client against a master started from a server.ini with topic sections (so
 * neither broker accepts any topic) and a slave following it. A synchronous slave does not
 * follow the overlay (its topics are its own server.ini's): pinned here. Deadlines, no fixed sleeps.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync} from 'node:fs'
import {join} from 'node:path'
import {applyOverrides, defaultBrokerConfig, startBroker, type Broker} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const DEADLINE_MS = 30_000

const MASTER_INI = `[system]
numPartitions=1
[topic=orders]
`

async function startAsyncSlave(t: Cleanup, master: Broker, dataPath: string): Promise<Broker> {
  const config = applyOverrides(defaultBrokerConfig(), {listenHost: '127.0.0.1', serverPort: 0, dataPath})
  const slave = await startBroker({
    config,
    slave: {
      slaveId: 1,
      slaveGroup: 'meta-slave-group',
      maxDelayMs: 100,
      master: {host: '127.0.0.1', port: master.port},
      connect: (address) => new BrokerConnection({...address, reconnectMaxDelayMs: 100}),
    },
  })
  t.after(() => slave.close())
  return slave
}

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

describe('an asynchronous slave follows its master\'s online topics', () => {
  it('serves a topic created online on the master, grows it with alter and drops it with delete', async (t) => {
    const master = await startTestBroker(t, {ini: MASTER_INI})
    const masterUrl = `127.0.0.1:${master.port}`
    const slaveDir = await tmpDir(t, 'meta-slave-')
    const slave = await startAsyncSlave(t, master, slaveDir)
    const slaveUrl = `127.0.0.1:${slave.port}`
    // The slave took the master's server.ini: it serves orders and no other topic.
    await waitFor(async () => (await effective(slaveUrl, 'orders')) !== null, {what: 'the slave to apply the master config', timeoutMs: DEADLINE_MS})

    await cli(['topic', 'create', 'audit', '--partitions', '3', '--set', 'unflushThreshold=7', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    const sent = await producer.send('audit', 'on partition two', {partition: 2})
    assert.ok(sent.success, sent.errorMessage)

    await waitFor(async () => (await effective(slaveUrl, 'audit'))?.numPartitions === '3', {what: 'the slave to serve audit with 3 partitions', timeoutMs: DEADLINE_MS})
    assert.equal((await effective(slaveUrl, 'audit'))?.unflushThreshold, '7')
    await waitFor(() => (slave.store.get('audit', 2)?.maxOffset ?? 0) > 0, {what: 'the slave to copy audit-2', timeoutMs: DEADLINE_MS})
    const described = JSON.parse(await cli(['topic', 'describe', 'audit', '--json', '-b', slaveUrl])) as {partitions: Array<{partition: number}>}
    assert.deepEqual(described.partitions.map((p) => p.partition), [0, 1, 2])
    const tail = await cli(['tail', '-t', 'audit', '-p', '2', '-o', 'beginning', '-e', '-b', slaveUrl])
    assert.match(tail, /on partition two/)

    await cli(['topic', 'alter', 'audit', '--partitions', '5', '-b', masterUrl])
    await waitFor(async () => (await effective(slaveUrl, 'audit'))?.numPartitions === '5', {what: 'the slave to grow audit to 5 partitions', timeoutMs: DEADLINE_MS})
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
    const first = await startAsyncSlave(t, master, slaveDir)
    await cli(['topic', 'create', 'audit', '--partitions', '2', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    assert.ok((await producer.send('audit', 'hello', {partition: 1})).success)
    await waitFor(() => (first.store.get('audit', 1)?.maxOffset ?? 0) > 0, {what: 'the slave to copy audit-1', timeoutMs: DEADLINE_MS})
    await waitFor(async () => (await effective(`127.0.0.1:${first.port}`, 'audit')) !== null, {what: 'the slave to serve audit', timeoutMs: DEADLINE_MS})
    await first.close()

    await cli(['topic', 'delete', 'audit', '--execute', '--yes', '-b', masterUrl])
    const again = await startAsyncSlave(t, master, slaveDir)
    await waitFor(async () => (await effective(`127.0.0.1:${again.port}`, 'audit')) === null && again.store.get('audit', 1) === undefined, {
      what: 'the restarted slave to drop audit and its data',
      timeoutMs: DEADLINE_MS,
    })
  })

  it('a synchronous slave does not: a put to a topic created online on its master is refused until the slave names it', async (t) => {
    const slave = await startTestBroker(t, {ini: MASTER_INI, syncSlave: true})
    const master = await startTestBroker(t, {ini: MASTER_INI, syncSlaveAddress: `127.0.0.1:${slave.port}`})
    const masterUrl = `127.0.0.1:${master.port}`
    await cli(['topic', 'create', 'audit', '--partitions', '2', '-b', masterUrl])
    const producer = createProducer({broker: masterUrl})
    t.after(() => producer.close())
    const refused = await producer.send('audit', 'hello', {partition: 0})
    assert.equal(refused.success, false)
    assert.match(refused.errorMessage ?? '', /the sync slave 127\.0\.0\.1:\d+ refused the message: .*The server do not accept topic audit/)
    assert.equal(await effective(`127.0.0.1:${slave.port}`, 'audit'), null)
    // Named in the slave's own server.ini (a reload), the topic is written on both.
    await slave.reload({text: `${MASTER_INI}[topic=audit]\nnumPartitions=2\n`})
    const sent = await producer.send('audit', 'hello', {partition: 1})
    assert.ok(sent.success, sent.errorMessage)
    await waitFor(() => (slave.store.get('audit', 1)?.maxOffset ?? 0) > 0, {what: 'the sync slave to store audit-1', timeoutMs: DEADLINE_MS})
  })
})
