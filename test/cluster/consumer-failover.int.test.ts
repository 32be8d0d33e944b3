/**
 * Consumers follow failover (processes, a real ZooKeeper): a master and an asynchronous slave
 * of broker id 0; the master is killed with SIGKILL, so its ZooKeeper node stays until its
 * session (30 s here) expires. meta's consumers read the broker id from the slave at once:
 * `meta tail -e` (whose end offsets are asked at start), `-o -N`, and a group; a library group
 * consumer switches to the slave while running, commits to ZooKeeper throughout, and switches
 * back to the master when it is started again.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {createGroupConsumer, createProducer, type Message, type ReadFromEvent, type SendResult} from '../../src/client/index.js'
import {parseZkOffset, ZkPaths} from '../../src/cluster/paths.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {exited, runCli, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

/** The killed master's ZooKeeper session: everything below must happen well within it. */
const MASTER_SESSION_MS = 30_000

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)), {maxSessionTimeoutMs: 60_000})

interface Pair {
  root: string
  dir: string
  master: BrokerProcess
  slave: BrokerProcess
  masterArgs: string[]
}

/** A master and its slave 1 under a fresh root; their sessions last MASTER_SESSION_MS. */
async function startPair(t: Cleanup): Promise<Pair> {
  const root = `/${uniqueName('meta')}`
  const dir = await tmpDir(t, 'meta-consumer-failover-')
  const zkSection = (sessionMs: number) => `[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=${sessionMs}\n`
  writeFileSync(join(dir, 'master.ini'), `[system]\nbrokerId=0\nnumPartitions=2\n${zkSection(MASTER_SESSION_MS)}`)
  // The slave's session as long: a test stops it (SIGSTOP) for a while on a busy machine.
  writeFileSync(join(dir, 'slave.ini'), `[system]\nbrokerId=0\n${zkSection(MASTER_SESSION_MS)}`)
  const masterArgs = ['-c', join(dir, 'master.ini'), '-d', join(dir, 'm')]
  const master = await spawnBroker(t, masterArgs)
  const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--slave-id', '1', '-d', join(dir, 's')])
  return {root, dir, master, slave, masterArgs}
}

async function send(t: Cleanup, root: string, topic: string, from: number, to: number, bytes = 0): Promise<void> {
  const producer = createProducer({zk: zk.connect, zkRoot: root})
  t.after(() => producer.close())
  const sends: Array<Promise<SendResult>> = []
  for (let i = from; i < to; i++) sends.push(producer.send(topic, `message ${i} `.padEnd(bytes, '.')))
  const results = await Promise.all(sends)
  await producer.close()
  assert.ok(
    results.every((r) => r.success && r.brokerId === 0),
    results.find((r) => !r.success)?.errorMessage,
  )
}

/** Wait until the slave holds what the master holds and has registered `topic` for consumers. */
async function caughtUp(pair: Pair, topic: string): Promise<void> {
  await waitFor(
    async () => {
      const [m, s] = [await ends(pair.master.port), await ends(pair.slave.port)]
      return m.size === 2 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
    },
    {timeoutMs: 60_000, what: 'the slave to catch up'},
  )
  await waitFor(async () => ((await zkRead(client, `${pair.root}/brokers/topics-sub/${topic}/0-s1`)) !== undefined ? true : undefined), {
    timeoutMs: 30_000,
    what: 'the slave to register the topic for consumers',
  })
}

async function killMaster(pair: Pair): Promise<void> {
  pair.master.child.kill('SIGKILL')
  await exited(pair.master.child)
}

/** The group's committed offsets in ZooKeeper, by partition (`0-0`, `0-1`). */
async function committed(root: string, group: string, topic: string): Promise<Map<string, number>> {
  const paths = new ZkPaths(root)
  const result = new Map<string, number>()
  for (const p of [0, 1]) {
    const value = await zkRead(client, paths.offset(group, topic, 0, p))
    const parsed = value === undefined ? undefined : parseZkOffset(value)
    if (parsed !== undefined) result.set(`0-${p}`, parsed.offset)
  }
  return result
}

/** Log ends by partition (`0-0`, `0-1`) as a broker reports them. */
async function logEnds(port: number, topic: string): Promise<Map<string, number>> {
  const result = new Map<string, number>()
  for (const [key, range] of await ends(port)) {
    if (key.startsWith(`${topic}-`)) result.set(`0-${key.slice(topic.length + 1)}`, Number(range.split('..')[1]))
  }
  return result
}

describe('consumers follow failover to an asynchronous slave (processes, ZooKeeper)', () => {
  it('meta tail --zk -e reads every message from the slave after kill -9 of the master, before its session expires', async (t) => {
    const pair = await startPair(t)
    const topic = uniqueName('tailfail')
    const total = 1000
    await send(t, pair.root, topic, 0, total)
    await caughtUp(pair, topic)
    const masterUrl = `meta://127.0.0.1:${pair.master.port}`
    await killMaster(pair)
    const killedAt = Date.now()
    const zkArgs = ['--zk', zk.connect, '--zk-root', pair.root, '-t', topic]
    // The deadline is the master's session: reading must not wait for it to expire.
    const tail = await runCli(['tail', ...zkArgs, '-o', 'beginning', '-e', '-q'], {timeoutMs: MASTER_SESSION_MS})
    const elapsedMs = Date.now() - killedAt
    assert.equal(tail.code, 0, tail.stderr)
    const lines = tail.stdout.split('\n').filter(Boolean)
    assert.equal(lines.length, total)
    assert.equal(new Set(lines).size, total, 'every message once')
    assert.ok(elapsedMs < MASTER_SESSION_MS, `read in ${elapsedMs} ms, expected below the session timeout of ${MASTER_SESSION_MS} ms`)
    assert.equal(await zkRead(client, `${pair.root}/brokers/ids/0/master`), masterUrl, "the dead master's session lives on")

    // Offset queries at start go to the slave too: the last N of each partition …
    const last = await runCli(['tail', ...zkArgs, '-o', '-3', '-e', '-q'], {timeoutMs: MASTER_SESSION_MS})
    assert.equal(last.code, 0, last.stderr)
    assert.equal(last.stdout.split('\n').filter(Boolean).length, 6)
    // … a time (every message was stored within the hour) …
    const since = await runCli(['tail', ...zkArgs, '-o', '@-1h', '-e', '-q'], {timeoutMs: MASTER_SESSION_MS})
    assert.equal(since.code, 0, since.stderr)
    assert.equal(new Set(since.stdout.split('\n').filter(Boolean)).size, total)
    // … the end (nothing to read) …
    const end = await runCli(['tail', ...zkArgs, '-o', 'end', '-e', '-q'], {timeoutMs: MASTER_SESSION_MS})
    assert.equal(end.code, 0, end.stderr)
    assert.equal(end.stdout, '')
    // … and a group reads everything and commits its offsets to ZooKeeper (the slave's ends).
    const group = await runCli(['tail', ...zkArgs, '--group', 'g', '-e', '-q'], {timeoutMs: MASTER_SESSION_MS})
    assert.equal(group.code, 0, group.stderr)
    assert.equal(new Set(group.stdout.split('\n').filter(Boolean)).size, total)
    assert.deepEqual(await committed(pair.root, 'g', topic), await logEnds(pair.slave.port, topic))
    assert.equal(await zkRead(client, `${pair.root}/brokers/ids/0/master`), masterUrl, "all of it before the master's session expired")
  })

  it('a group consumer switches to the slave when the master is killed, keeps committing, and switches back when it restarts', async (t) => {
    const pair = await startPair(t)
    const topic = uniqueName('libfail')
    await send(t, pair.root, topic, 0, 100)
    await caughtUp(pair, topic)

    const consumer = createGroupConsumer({zk: zk.connect, zkRoot: pair.root, topics: [topic], group: 'lib', commitIntervalMs: 100})
    t.after(() => consumer.stop())
    const events: ReadFromEvent[] = []
    consumer.on('readFrom', (e: ReadFromEvent) => events.push(e))
    const received: Message[] = []
    const running = consumer.run({eachMessage: (m) => void received.push(m)})
    await waitFor(() => (received.length >= 100 ? true : undefined), {timeoutMs: 30_000, what: '100 messages from the master'})
    const masterEnds = await logEnds(pair.master.port, topic)
    await waitFor(async () => (equalMaps(await committed(pair.root, 'lib', topic), masterEnds) ? true : undefined), {
      timeoutMs: 30_000,
      what: "the group to commit the master's ends",
    })

    await killMaster(pair)
    const slaveUrl = `meta://127.0.0.1:${pair.slave.port}`
    await waitFor(() => (events.some((e) => e.slave && e.url === slaveUrl) ? true : undefined), {
      timeoutMs: MASTER_SESSION_MS,
      what: 'the consumer to read broker 0 from its slave',
    })
    assert.equal(await zkRead(client, `${pair.root}/brokers/ids/0/master`), `meta://127.0.0.1:${pair.master.port}`, 'switched before the session expired')

    // The master comes back on its port: the consumer reads from it again.
    const master = await spawnBroker(t, ['--port', String(pair.master.port), ...pair.masterArgs])
    const masterUrl = `meta://127.0.0.1:${master.port}`
    await waitFor(() => (events.at(-1)?.url === masterUrl && !events.at(-1)!.slave ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the consumer to read broker 0 from its master again',
    })
    // With the slave gone, only the master can serve the next messages.
    pair.slave.child.kill('SIGKILL')
    await exited(pair.slave.child)
    await send(t, pair.root, topic, 100, 150)
    await waitFor(() => (received.length >= 150 ? true : undefined), {timeoutMs: 30_000, what: '50 more messages from the restarted master'})
    const finalEnds = await logEnds(master.port, topic)
    await waitFor(async () => (equalMaps(await committed(pair.root, 'lib', topic), finalEnds) ? true : undefined), {
      timeoutMs: 30_000,
      what: "the group to commit the restarted master's ends",
    })
    await consumer.stop()
    await running
    const bodies = received.map((m) => m.data.toString())
    assert.equal(new Set(bodies).size, 150, 'every message')
    assert.deepEqual(
      events.map((e) => e.slave),
      [true, false],
    )
  })

  it('a commit of a position read from the master is not refused while reading from a slave that lags behind it', async (t) => {
    const pair = await startPair(t)
    const topic = uniqueName('lagfail')
    await send(t, pair.root, topic, 0, 50)
    await caughtUp(pair, topic)
    const consumer = createGroupConsumer({zk: zk.connect, zkRoot: pair.root, topics: [topic], group: 'lag', commitIntervalMs: 600_000})
    t.after(() => consumer.stop())
    const events: ReadFromEvent[] = []
    consumer.on('readFrom', (e: ReadFromEvent) => events.push(e))
    const received: Message[] = []
    const running = consumer.run({eachMessage: (m) => void received.push(m)})
    await waitFor(() => (received.length >= 50 ? true : undefined), {timeoutMs: 30_000, what: '50 messages from the master'})
    // The slave stops copying; the master takes 6 MiB more (more than one 1 MiB replication
    // reply per partition, so the slave cannot catch up from its socket buffer), read from it.
    pair.slave.child.kill('SIGSTOP')
    t.after(() => pair.slave.child.kill('SIGCONT'))
    await send(t, pair.root, topic, 50, 650, 10_240)
    await waitFor(() => (received.length >= 650 ? true : undefined), {timeoutMs: 60_000, what: '600 more messages from the master'})
    const masterEnds = await logEnds(pair.master.port, topic)
    await killMaster(pair)
    pair.slave.child.kill('SIGCONT')
    await waitFor(() => (events.some((e) => e.slave) ? true : undefined), {timeoutMs: MASTER_SESSION_MS, what: 'the consumer to read from the slave'})
    const slaveEnds = await logEnds(pair.slave.port, topic)
    assert.ok(
      [...masterEnds].every(([k, v]) => (slaveEnds.get(k) ?? 0) < v),
      `the slave lags: ${[...slaveEnds]} below ${[...masterEnds]}`,
    )
    // The group's position (read from the master) is past the slave's end, and is committed.
    await consumer.commit()
    assert.deepEqual(await committed(pair.root, 'lag', topic), masterEnds)

    // The master comes back: the consumer reads from it again, from where it was (the slave's
    // end did not move it back): the next messages arrive, and none of the first 650 again.
    await spawnBroker(t, ['--port', String(pair.master.port), ...pair.masterArgs])
    await waitFor(() => (events.at(-1)?.slave === false ? true : undefined), {timeoutMs: 30_000, what: 'the consumer to read from the master again'})
    await send(t, pair.root, topic, 650, 660)
    const bodies = () => new Set(received.map((m) => m.data.toString().replace(/[ .]+$/, '')))
    // A partition read twice would deliver the repeats before its new messages.
    await waitFor(() => (bodies().size === 660 ? true : undefined), {timeoutMs: 30_000, what: 'the 10 messages from the restarted master'})
    await consumer.stop()
    await running
    assert.equal(received.length, 660, 'no message read twice')
  })
})

function equalMaps(a: Map<string, number>, b: Map<string, number>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v)
}
