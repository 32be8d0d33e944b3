/**
 * Failover under synchronous replication (README.md#failover-beyond-metaq), with real processes and
 * a real ZooKeeper: a sync slave started with `--sync-slave --slave-id 1 --failover` registers as
 * `ids/0/slave1` (and its topics with role s1); its master forwards every put to it before
 * acknowledging. The master is killed with SIGKILL while a producer is sending; the slave promotes
 * itself after the grace period, and every message the producer saw acknowledged is on it, at the
 * acknowledged offset, in send order, byte for byte. Promoted, it refuses puts until a sync slave
 * announced in ZooKeeper (the old master restarted with --sync-slave) is up to date.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {randomBytes} from 'node:crypto'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {createProducer, type SendResult} from '../../src/client/index.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'
import {RawClient} from '../helpers/raw-client.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead, zkChildren} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

describe('failover of a synchronous slave (processes, ZooKeeper)', () => {
  it('a sync slave registered in ZooKeeper promotes itself after kill -9 of its master and holds every acknowledged message', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-sync-failover-')
    const ini = `[system]\nbrokerId=0\nnumPartitions=2\n[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
    writeFileSync(join(dir, 'server.ini'), ini)
    const slave = await spawnBroker(t, [
      '-c',
      join(dir, 'server.ini'),
      '--sync-slave',
      '--slave-id',
      '1',
      '--failover',
      '--failover-grace',
      '1s',
      '-d',
      join(dir, 's'),
    ])
    const slaveUrl = `meta://127.0.0.1:${slave.port}`
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave1`), slaveUrl)
    // `localhost`, not the 127.0.0.1 the slave publishes: the master still marks it up to date
    // (sameEndpoint), without which the slave would not take over below.
    const master = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '--sync-slave-address', `localhost:${slave.port}`, '-d', join(dir, 'm')])

    const topic = uniqueName('syncfail')
    // No retries: every acknowledgement then comes from the old master, so send order is offset order.
    const producer = createProducer({zk: zk.connect, zkRoot: root, retries: 0})
    t.after(() => producer.close())
    const acked: Array<{seq: number; payload: Buffer; result: SendResult}> = []
    const killAt = 200 + Math.floor(Math.random() * 200)
    let killed = false
    const pending: Array<Promise<void>> = []
    for (let seq = 0; !killed && seq < 100_000; seq++) {
      const payload = Buffer.concat([Buffer.from(`m${seq} `), randomBytes(40 + (seq % 50))])
      pending.push(
        producer.send(topic, payload).then(
          (result) => {
            if (!result.success) return
            acked.push({seq, payload, result})
            if (!killed && acked.length >= killAt) {
              killed = true // at a random moment, with sends in flight
              master.child.kill('SIGKILL')
            }
          },
          () => undefined,
        ),
      )
      if (pending.length % 16 === 0) await Promise.all(pending.slice(-16))
    }
    assert.ok(killed, 'the master was killed while sending')
    await exited(master.child)
    // The sync slave had registered the topic the master forwarded (role s1), for consumers.
    await waitFor(async () => ((await zkChildren(client, `${root}/brokers/topics/${topic}`)).includes('0-s1') ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the sync slave to register the topic as s1',
    })
    await Promise.all(pending)
    await producer.close()
    const done = [...acked]
    assert.ok(done.length >= killAt)

    await waitFor(async () => ((await zkRead(client, `${root}/brokers/ids/0/master`)) === slaveUrl ? true : undefined), {
      timeoutMs: 60_000,
      what: 'the sync slave to win ids/0/master',
    })
    await waitFor(() => (/promoted; this broker is now the master/.test(slave.stderr()) ? true : undefined), {timeoutMs: 30_000, what: 'the promotion'})
    assert.ok(!(await zkChildren(client, `${root}/brokers/ids/0`)).includes('slave1'))

    // Every acknowledged message is on the promoted broker at its offset, in send order, byte for byte.
    const raw = await RawClient.connect(t, slave.port)
    for (const partition of [0, 1]) {
      const mine = done.filter((a) => a.result.partition === partition).sort((a, b) => a.result.offset - b.result.offset)
      const stored = new Map<number, {id: bigint; data: Buffer}>()
      for (let offset = 0, opaque = 1; ; opaque++) {
        const reply = await raw.request(`get ${topic} g ${partition} ${offset} 1048576 ${opaque}\r\n`)
        if (reply.type !== 'value') break // a result: nothing more (404) or the end (301)
        const {messages, bytesConsumed} = decodeMessageSet(reply.body, {baseOffset: offset})
        if (bytesConsumed === 0) break
        for (const m of messages) stored.set(m.offset, {id: m.id, data: Buffer.from(m.data)})
        offset += bytesConsumed
      }
      for (let k = 0; k < mine.length; k++) {
        const {seq, payload, result} = mine[k]!
        const record = stored.get(result.offset)
        assert.ok(record !== undefined, `acknowledged message ${seq} (${partition}@${result.offset}) is missing on the promoted broker`)
        assert.equal(record.id, result.id)
        assert.ok(record.data.equals(payload), `message ${seq} differs`)
        if (k > 0) assert.ok(mine[k - 1]!.seq < seq, `messages ${mine[k - 1]!.seq} and ${seq} out of send order`)
      }
    }

    // Promoted, it is a master that takes its sync slave from ZooKeeper: with none announced
    // it refuses puts (an ack would otherwise be on one disk only).
    const raw2 = await RawClient.connect(t, slave.port)
    const refused = await raw2.request(`put ${topic} 0 5 0 99\r\nhello`)
    assert.equal(refused.type, 'result')
    assert.match(refused.body.toString(), /Slave is disconnected \(no sync slave has announced itself in ZooKeeper for broker id 0/)
    const stats = await runCli(['stats', '-b', `127.0.0.1:${slave.port}`, '--json'], {timeoutMs: 60_000})
    assert.equal(stats.code, 0, stats.stderr)
    assert.equal(JSON.parse(stats.stdout).slave, false)

    // The old master rejoins as its sync slave: it is brought up to date, then puts are acknowledged again
    // as broker 0, with ids above every one it holds.
    const rejoined = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '--sync-slave', '--slave-id', '2', '-d', join(dir, 'm')])
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave2`), `meta://127.0.0.1:${rejoined.port}`)
    const after = createProducer({zk: zk.connect, zkRoot: root, retries: 0})
    t.after(() => after.close())
    let next: SendResult | undefined
    await waitFor(
      async () => {
        const r = await after.send(topic, 'after failover')
        if (r.success) next = r
        return r.success ? true : undefined
      },
      {timeoutMs: 60_000, what: 'puts to be acknowledged again once the old master is the sync slave'},
    )
    await after.close()
    assert.ok(next !== undefined && next.brokerId === 0, next?.errorMessage)
    const maxId = done.reduce((m, a) => (a.result.id! > m ? a.result.id! : m), 0n)
    assert.ok(next.id! > maxId)
    await waitFor(
      async () => {
        const [m, s] = [await ends(slave.port), await ends(rejoined.port)]
        return m.size === 2 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
      },
      {timeoutMs: 60_000, what: 'the old master to hold what the promoted broker holds'},
    )
  })

  it('--sync-slave with --slave-id needs ZooKeeper', async (t) => {
    const dir = await tmpDir(t, 'meta-sync-failover-usage-')
    const result = await runCli(['serve', '--port', '0', '-d', dir, '--sync-slave', '--slave-id', '1'], {timeoutMs: 60_000})
    assert.equal(result.code, 2)
    assert.match(result.stderr, /--sync-slave takes --slave-id only with ZooKeeper/)
  })
})
