/**
 * Asynchronous slaves in ZooKeeper mode, with real processes and a real ZooKeeper:
 * `meta serve -c server.ini --slave-id 1` finds the master registered under the same
 * brokerId, registers `ids/<id>/slave1` and its topic nodes with role `s1` (never topics-pub),
 * copies the master byte for byte and takes its partition count (autoSyncMasterConfig); when
 * the master is killed with SIGKILL, `meta tail --zk` reads everything from the slave at once
 * (its consumer stops waiting for a master that does not answer; the master's ZooKeeper
 * session has not expired).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {AdminClient, createProducer, type SendResult} from '../../src/client/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {segmentFiles} from '../helpers/segments.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead, zkChildren} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

async function ends(port: number): Promise<Map<string, string>> {
  const admin = new AdminClient(await BrokerConnection.connect({host: '127.0.0.1', port}))
  try {
    return new Map((await admin.partitions()).map((p) => [`${p.topic}-${p.partition}`, `${p.minOffset}..${p.maxOffset}`]))
  } finally {
    admin.close()
  }
}

describe('asynchronous slave in ZooKeeper mode (processes)', () => {
  it('registers as slave1, replicates byte for byte, and serves meta tail --zk after the master is killed', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-zkrepl-')
    const zkSection = (sessionMs: number) => `[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=${sessionMs}\n`
    // The master's session outlives the test: its nodes stay after kill -9, so reading the
    // slave comes from meta's consumer noticing the master does not answer.
    writeFileSync(join(dir, 'master.ini'), `[system]\nbrokerId=0\nnumPartitions=2\nmaxSegmentSize=65536\n${zkSection(600_000)}`)
    writeFileSync(join(dir, 'slave.ini'), `[system]\nbrokerId=0\n${zkSection(4000)}`)
    const master = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '-d', join(dir, 'm')])
    const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--slave-id', '1', '-d', join(dir, 's')])

    const topic = uniqueName('zkrepl')
    const total = 4000
    const producer = createProducer({zk: zk.connect, zkRoot: root})
    t.after(() => producer.close())
    for (let round = 0; round < total; round += 400) {
      const sends: Array<Promise<SendResult>> = []
      for (let i = round; i < round + 400; i++) sends.push(producer.send(topic, `message ${i} `.padEnd(100, '.')))
      const results = await Promise.all(sends)
      assert.ok(
        results.every((r) => r.success && r.brokerId === 0),
        results.find((r) => !r.success)?.errorMessage,
      )
    }
    await producer.close()

    await waitFor(
      async () => {
        const [m, s] = [await ends(master.port), await ends(slave.port)]
        return m.size === 2 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
      },
      {timeoutMs: 60_000, what: 'the slave to catch up'},
    )
    const reference = segmentFiles(join(dir, 'm'), topic)
    const copy = segmentFiles(join(dir, 's'), topic)
    assert.ok(reference.size > 2)
    assert.deepEqual([...copy.keys()], [...reference.keys()])
    for (const [name, bytes] of reference) assert.ok(bytes.equals(copy.get(name)!), `${name} differs`)

    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave1`), `meta://127.0.0.1:${slave.port}`)
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-sub/${topic}/0-s1`)) === '{"numParts":2,"broker":"0-s1"}' || undefined, {
      what: "the slave registered the topic with the master's partition count",
    })
    assert.equal(await zkRead(client, `${root}/brokers/topics/${topic}/0-s1`), '2')
    assert.deepEqual(await zkChildren(client, `${root}/brokers/topics-pub/${topic}`), ['0-m'])
    const status = await runCli(['slave-status', '-b', `127.0.0.1:${slave.port}`], {timeoutMs: 60_000})
    assert.equal(status.code, 0, status.stderr)
    assert.match(status.stdout, /Replicate status:yes/)
    const all = await runCli(['slave-status', '--zk', zk.connect, '--zk-root', root, '--broker-id', '0'], {timeoutMs: 60_000})
    assert.equal(all.code, 0, all.stderr)
    assert.match(all.stdout, new RegExp(`^== slave 1 of broker 0 at 127\\.0\\.0\\.1:${slave.port}\nSubscriber handler:running\n`))
    const none = await runCli(['slave-status', '--zk', zk.connect, '--zk-root', root, '--broker-id', '5'], {timeoutMs: 60_000})
    assert.equal(none.code, 1)
    assert.match(
      none.stderr,
      new RegExp(`^error \\[NOT_FOUND\\]: no slave registered in ZooKeeper at ${zk.connect.replaceAll('.', '\\.')}${root} for broker id 5\n$`),
    )

    master.child.kill('SIGKILL')
    await exited(master.child)
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), `meta://127.0.0.1:${master.port}`, "the dead master's session lives on")
    const tail = await runCli(['tail', '--zk', zk.connect, '--zk-root', root, '-t', topic, '-o', 'beginning', '-c', String(total), '-q'], {timeoutMs: 60_000})
    assert.equal(tail.code, 0, tail.stderr)
    const lines = tail.stdout.split('\n').filter(Boolean)
    assert.equal(lines.length, total)
    assert.equal(new Set(lines).size, total, 'every message once')
  })
})
