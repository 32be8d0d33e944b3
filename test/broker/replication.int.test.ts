/**
 * Asynchronous replication, standalone (src/broker/replication): real brokers in this process
 * over loopback, a slave started with the master's address. Slaves end up byte-identical to
 * the master (same segment names and bytes, though their own maxSegmentSize differs), refuse
 * puts, resume from their own end after a restart, start at the master's first offset, cut a
 * divergent tail at the fork point, and set their log aside when the master's retention
 * passed it.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import type {Broker} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {createProducer, AdminClient, type SendResult} from '../../src/client/index.js'
import {isMetaError} from '../../src/protocol/errors.js'
import {startAsyncSlave, startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

/** A slave of `master` on `dataPath` with another segment size than the master's: it must follow the master's anyway. */
function startSlave(t: Cleanup, master: Broker, dataPath: string, slaveId = 1): Promise<Broker> {
  return startAsyncSlave(t, {master, dataPath, slaveId, maxSegmentBytes: 1024 * 1024 * 1024})
}

async function produce(t: Cleanup, broker: Broker, topic: string, count: number, partitions = [0, 1]): Promise<void> {
  const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
  t.after(() => producer.close())
  // Rounds of 200: the producer batches what is sent in one turn, and a batch never spans segments.
  for (let round = 0; round < count; round += 200) {
    const sends: Array<Promise<SendResult>> = []
    for (let i = round; i < Math.min(count, round + 200); i++) {
      sends.push(producer.send(topic, `message ${i} `.padEnd(100, 'x'), {partition: partitions[i % partitions.length]}))
    }
    const results = await Promise.all(sends)
    assert.ok(
      results.every((r) => r.success),
      results.find((r) => !r.success)?.errorMessage,
    )
  }
  await producer.close()
}

/** Wait until every partition of the master has the same end on the slave. */
async function caughtUp(master: Broker, slave: Broker): Promise<void> {
  await waitFor(
    () =>
      master.store.list().every((m) => {
        const s = slave.store.get(m.topic, m.partition)
        return s !== undefined && s.maxOffset === m.maxOffset && s.minOffset === m.minOffset
      }) || undefined,
    {timeoutMs: 30_000, what: 'the slave to catch up'},
  )
}

/** Every segment file (`*.meta`) of every partition, by relative path. */
function segmentFiles(broker: Broker): Map<string, Buffer> {
  const files = new Map<string, Buffer>()
  for (const log of broker.store.list()) {
    for (const name of readdirSync(log.dir)
      .filter((n) => n.endsWith('.meta'))
      .sort()) {
      files.set(`${log.topic}-${log.partition}/${name}`, readFileSync(join(log.dir, name)))
    }
  }
  return files
}

/** Every segment of a partition directory, concatenated in offset order (they are contiguous). */
function logBytes(dir: string): Buffer {
  return Buffer.concat(
    readdirSync(dir)
      .filter((n) => /^\d{20}\.meta$/.test(n))
      .sort()
      .map((n) => readFileSync(join(dir, n))),
  )
}

function firstSegmentStart(dir: string): number {
  return Number(
    readdirSync(dir)
      .filter((n) => /^\d{20}\.meta$/.test(n))
      .sort()[0]
      .slice(0, 20),
  )
}

async function assertIdentical(master: Broker, slave: Broker): Promise<void> {
  await master.store.flushAll()
  await slave.store.flushAll()
  const m = segmentFiles(master)
  const s = segmentFiles(slave)
  assert.deepEqual([...s.keys()], [...m.keys()], 'same segment files')
  for (const [name, bytes] of m) assert.ok(bytes.equals(s.get(name)!), `${name} differs`)
}

describe('asynchronous replication (standalone slave)', () => {
  it("copies every partition byte for byte, with the master's segments, and refuses puts", async (t) => {
    const master = await startTestBroker(t, {maxSegmentBytes: 64 * 1024, numPartitions: 2})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 4000)
    const slave = await startSlave(t, master, await tmpDir(t, 'meta-slave-'))
    await caughtUp(master, slave)
    // More while it follows (long poll).
    await produce(t, master, topic, 4000)
    await caughtUp(master, slave)
    await assertIdentical(master, slave)
    assert.ok(segmentFiles(master).size > 4, 'the master rolled segments')

    const admin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: slave.port}))
    t.after(() => admin.conn.close())
    assert.equal((await admin.systemStats()).slave, true)
    const producer = createProducer({broker: `127.0.0.1:${slave.port}`, retries: 0})
    t.after(() => producer.close())
    const refused = await producer.send(topic, 'no', {partition: 0})
    assert.equal(refused.success, false)
    assert.ok(isMetaError(refused.error, 'SLAVE_READ_ONLY'), String(refused.error))
    assert.match(refused.errorMessage ?? '', new RegExp(`asynchronous slave 1 of 127\\.0\\.0\\.1:${master.port}: it does not accept puts; send to the master`))
    // A transactional put (MetaQ's form with a txKey) is refused the same way.
    const raw = await RawClient.connect(t, slave.port)
    const txPut = await raw.request(`put ${topic} 0 2 0 -1 TX:1:abc 9\r\nno`)
    assert.equal(txPut.type === 'result' ? txPut.code : txPut.type, 500)
    assert.match(text(txPut), /it does not accept puts; send to the master \[code=SLAVE_READ_ONLY\]$/)
    const masterAdmin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: master.port}))
    t.after(() => masterAdmin.conn.close())
    assert.equal((await masterAdmin.systemStats()).slave, false)
    // autoSyncMasterConfig: the slave took the master's numPartitions, kept its own data path.
    assert.equal(await admin.partitionCount(topic), 2)
    assert.notEqual(slave.config.system.dataPath, master.config.system.dataPath)
    assert.equal(slave.config.system.maxSegmentBytes, 1024 * 1024 * 1024)
  })

  it("resumes from its own end after a restart, and starts at the master's first offset", async (t) => {
    const master = await startTestBroker(t, {maxSegmentBytes: 32 * 1024})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 2000, [0])
    // Retention on the master: its log no longer starts at 0.
    const log = master.store.get(topic, 0)!
    const segments = await log.segmentInfos()
    await log.removeSegmentsBefore(segments[2].start)
    assert.ok(log.minOffset > 0)
    const dataPath = await tmpDir(t, 'meta-slave-')
    const first = await startSlave(t, master, dataPath)
    await caughtUp(master, first)
    assert.equal(first.store.get(topic, 0)!.minOffset, log.minOffset)
    await assertIdentical(master, first)
    await first.close()

    await produce(t, master, topic, 2000, [0])
    const again = await startSlave(t, master, dataPath)
    await caughtUp(master, again)
    await assertIdentical(master, again)
  })

  it("sets its log aside and restarts at the master's start when retention passed its end", async (t) => {
    const master = await startTestBroker(t, {maxSegmentBytes: 32 * 1024})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 1000, [0])
    const dataPath = await tmpDir(t, 'meta-slave-')
    const first = await startSlave(t, master, dataPath)
    await caughtUp(master, first)
    const oldEnd = first.store.get(topic, 0)!.maxOffset
    await first.close()

    await produce(t, master, topic, 2000, [0])
    const log = master.store.get(topic, 0)!
    const segments = await log.segmentInfos()
    const cut = segments.find((s) => s.start > oldEnd)!.start
    await log.removeSegmentsBefore(cut)
    const again = await startSlave(t, master, dataPath)
    await caughtUp(master, again)
    assert.equal(again.store.get(topic, 0)!.minOffset, cut)
    await assertIdentical(master, again)
    const aside = join(dataPath, '__meta_state', 'replica-aside')
    assert.ok(existsSync(aside) && readdirSync(aside).some((n) => n.startsWith(`${topic}-0.`)), 'the old log was kept aside')
  })

  it('a former master started as slave cuts a divergent tail at the fork point, keeps the cut bytes, and replicates on', async (t) => {
    const master = await startTestBroker(t, {maxSegmentBytes: 32 * 1024, numPartitions: 3})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 900, [0, 1, 2])
    const dataPath = await tmpDir(t, 'meta-old-master-')
    const first = await startSlave(t, master, dataPath)
    await caughtUp(master, first)
    const forks = [0, 1, 2].map((p) => first.store.get(topic, p)!.maxOffset)
    await first.close()
    // The slave's data runs as a master for a while: its own messages in partitions 0 and 1.
    const old = await startTestBroker(t, {dataPath, numPartitions: 3, maxSegmentBytes: 4 * 1024})
    await produce(t, old, topic, 40, [0, 1])
    await old.close()
    const tails = [0, 1].map((p) => logBytes(join(dataPath, `${topic}-${p}`)).subarray(forks[p] - firstSegmentStart(join(dataPath, `${topic}-${p}`))))
    assert.ok(tails.every((tail) => tail.length > 0))
    // The real master takes more in partitions 0 and 2: 0 now holds other bytes where the old
    // master's tail is; 1 ends before it; 2 only grew (no divergence).
    await produce(t, master, topic, 600, [0, 2])
    const again = await startSlave(t, master, dataPath)
    await caughtUp(master, again)
    await assertIdentical(master, again)
    for (const p of [0, 1]) {
      const dir = join(dataPath, `${topic}-${p}`)
      const cut = readdirSync(dir).filter((n) => /^\d{20}\.meta\.cut-\d+$/.test(n))
      assert.deepEqual(
        cut.map((n) => Number(n.slice(0, 20))),
        [forks[p]],
        `partition ${p}: one cut file named by the fork offset: ${cut.join(', ')}`,
      )
      assert.ok(readFileSync(join(dir, cut[0])).equals(tails[p]), `partition ${p}: the cut file holds exactly the cut bytes`)
    }
    assert.ok(!readdirSync(join(dataPath, `${topic}-2`)).some((n) => n.includes('.cut-')), 'partition 2 only lagged: nothing cut')
    assert.ok(!existsSync(join(dataPath, '__meta_state', 'replica-aside')), 'nothing set aside')
  })

  it('a slave that follows a new master holding less (a failover) cuts the partition back to it and replicates on', async (t) => {
    const master = await startTestBroker(t, {maxSegmentBytes: 32 * 1024})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 600, [0])
    const winnerPath = await tmpDir(t, 'meta-winner-')
    const winnerAsSlave = await startSlave(t, master, winnerPath)
    const slave = await startSlave(t, master, await tmpDir(t, 'meta-slave-'), 2)
    await caughtUp(master, winnerAsSlave)
    const fork = winnerAsSlave.store.get(topic, 0)!.maxOffset
    await winnerAsSlave.close()
    // The other slave takes 200 more than the one that will win.
    await produce(t, master, topic, 200, [0])
    await caughtUp(master, slave)
    const oldEnd = slave.store.get(topic, 0)!.maxOffset
    // The winner serves as master and takes messages of its own.
    const winner = await startTestBroker(t, {dataPath: winnerPath})
    await produce(t, winner, topic, 20, [0])
    slave.replicator!.setMaster({host: '127.0.0.1', port: winner.port})
    await caughtUp(winner, slave)
    await assertIdentical(winner, slave)
    const dir = join(slave.config.system.dataPath, `${topic}-0`)
    const cut = readdirSync(dir).filter((n) => n.includes('.meta.cut-'))
    assert.equal(cut.length, 1, `one cut file: ${cut.join(', ')}`)
    assert.equal(Number(cut[0].slice(0, 20)), fork)
    assert.equal(readFileSync(join(dir, cut[0])).length, oldEnd - fork, 'the 200 messages the winner never took')
  })

  it('slave-status reports every partition; a master answers NOT_A_SLAVE', async (t) => {
    const master = await startTestBroker(t, {numPartitions: 2})
    const topic = uniqueName('repl')
    await produce(t, master, topic, 100)
    const slave = await startSlave(t, master, await tmpDir(t, 'meta-slave-'))
    await caughtUp(master, slave)
    const admin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: slave.port}))
    t.after(() => admin.conn.close())
    const report = await waitFor(
      async () => {
        const r = await admin.slaveStatus()
        return r.partitions.length === 2 && r.partitions.every((p) => p.lagBytes === 0 && p.masterEnd > 0) ? r : undefined
      },
      {what: 'slave-status to show both partitions caught up'},
    )
    assert.equal(report.slaveId, 1)
    assert.equal(report.master, `127.0.0.1:${master.port}`)
    assert.equal(report.masterConnected, true)
    assert.deepEqual(
      report.partitions.map((p) => [p.topic, p.partition, p.lagMessages, p.state]),
      [
        [topic, 0, 0, 'replicating'],
        [topic, 1, 0, 'replicating'],
      ],
    )
    const masterAdmin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: master.port}))
    t.after(() => masterAdmin.conn.close())
    await assert.rejects(masterAdmin.slaveStatus(), (error: unknown) => isMetaError(error, 'NOT_A_SLAVE') && /is not a slave/.test((error as Error).message))
  })

  it('a synchronous slave says slave true, and slave-status names what it is', async (t) => {
    const syncSlave = await startTestBroker(t, {syncSlave: true})
    const admin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port: syncSlave.port}))
    t.after(() => admin.conn.close())
    assert.equal((await admin.systemStats()).slave, true)
    await assert.rejects(
      admin.slaveStatus(),
      (error: unknown) =>
        isMetaError(error, 'NOT_A_SLAVE') &&
        /is not an asynchronous slave \(it is a synchronous slave: its master reports it in stats meta-sync\)/.test((error as Error).message),
    )
  })
})
