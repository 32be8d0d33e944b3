/**
 * Failover (README.md#failover-beyond-metaq), with real processes and a real ZooKeeper: a master
 * and two asynchronous slaves started with `--failover --failover-grace 2s`. The master is killed
 * with SIGKILL; once its ZooKeeper session has expired and its `ids/0/master` node stayed gone for
 * the grace period, exactly one slave wins the node and becomes the master: a producer's sends
 * succeed on it, the other slave follows it, and a consumer group that read the first half from the
 * old master reads the rest from the new one. The old master started again as master is refused
 * with a one-line message.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import type zookeeper from 'node-zookeeper-client'
import {createProducer, type SendResult} from '../../src/client/index.js'
import {partitionEnds as ends} from '../helpers/client.js'
import {exited, runCli, spawnBroker, type BrokerProcess} from '../helpers/process.js'
import {zooKeeperForSuite, type TestZooKeeper, zkRead, zkChildren} from '../helpers/zookeeper.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

let zk: TestZooKeeper
let client: zookeeper.Client
zooKeeperForSuite((z, c) => ((zk = z), (client = c)))

async function send(t: Cleanup, root: string, topic: string, from: number, to: number): Promise<SendResult[]> {
  const producer = createProducer({zk: zk.connect, zkRoot: root})
  t.after(() => producer.close())
  const sends: Array<Promise<SendResult>> = []
  for (let i = from; i < to; i++) sends.push(producer.send(topic, `message ${i}`))
  const results = await Promise.all(sends)
  await producer.close()
  return results
}

describe('failover of an asynchronous slave (processes, ZooKeeper)', () => {
  it('after the master is killed exactly one of two slaves promotes itself after the grace period and serves puts', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-failover-')
    const ini = (extra = '') =>
      `[system]\nbrokerId=0\nnumPartitions=2\n${extra}[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
    writeFileSync(join(dir, 'master.ini'), ini())
    writeFileSync(join(dir, 'slave.ini'), ini())
    const master = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '-d', join(dir, 'm')])
    const slaves: BrokerProcess[] = []
    for (const n of [1, 2]) {
      slaves.push(
        await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--slave-id', String(n), '--failover', '--failover-grace', '2s', '-d', join(dir, `s${n}`)]),
      )
    }
    const topic = uniqueName('failover')
    const first = await send(t, root, topic, 0, 1000)
    assert.ok(
      first.every((r) => r.success),
      first.find((r) => !r.success)?.errorMessage,
    )
    await waitFor(
      async () => {
        const m = await ends(master.port)
        for (const s of slaves) {
          const e = await ends(s.port)
          if (m.size !== 2 || ![...m].every(([k, v]) => e.get(k) === v)) return undefined
        }
        return true
      },
      {timeoutMs: 60_000, what: 'both slaves to catch up'},
    )
    // A consumer group reads the first 1000 from the master and commits its offsets on exit.
    const before = await runCli(['tail', '--zk', zk.connect, '--zk-root', root, '-t', topic, '--group', 'g', '-c', '1000', '-q'], {timeoutMs: 60_000})
    assert.equal(before.code, 0, before.stderr)

    master.child.kill('SIGKILL')
    await exited(master.child)
    const urls = slaves.map((s) => `meta://127.0.0.1:${s.port}`)
    const newMaster = await waitFor(
      async () => {
        const url = await zkRead(client, `${root}/brokers/ids/0/master`)
        return url !== undefined && urls.includes(url) ? url : undefined
      },
      {timeoutMs: 60_000, what: 'a slave to win ids/0/master'},
    )
    const promoted = slaves[urls.indexOf(newMaster)]
    const other = slaves[1 - urls.indexOf(newMaster)]
    await waitFor(async () => ((await zkChildren(client, `${root}/brokers/topics-pub/${topic}`)).includes('0-m') ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the promoted slave to register the topic for producers',
    })
    // The other slave stays a slave (it follows the new master) and never registers as master.
    const children = await zkChildren(client, `${root}/brokers/ids/0`)
    const otherId = slaves.indexOf(other) + 1
    assert.deepEqual(
      children.filter((c) => c.startsWith('slave')),
      [`slave${otherId}`],
    )
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), newMaster)
    const otherStats = await runCli(['stats', '-b', `127.0.0.1:${other.port}`, '--json'], {timeoutMs: 60_000})
    assert.equal(otherStats.code, 0, otherStats.stderr)
    assert.equal(JSON.parse(otherStats.stdout).slave, true)
    const promotedStats = await runCli(['stats', '-b', `127.0.0.1:${promoted.port}`, '--json'], {timeoutMs: 60_000})
    assert.equal(JSON.parse(promotedStats.stdout).slave, false)

    const second = await send(t, root, topic, 1000, 1500)
    assert.ok(
      second.every((r) => r.success && r.brokerId === 0),
      second.find((r) => !r.success)?.errorMessage,
    )
    const after = await runCli(['tail', '--zk', zk.connect, '--zk-root', root, '-t', topic, '--group', 'g', '-c', '500', '-q'], {timeoutMs: 60_000})
    assert.equal(after.code, 0, after.stderr)
    const read = [...before.stdout.split('\n'), ...after.stdout.split('\n')].filter(Boolean)
    assert.equal(read.length, 1500)
    assert.equal(new Set(read).size, 1500, 'every message once')
    assert.match(promoted.stderr(), /promoted; this broker is now the master/)
    assert.doesNotMatch(other.stderr(), /promoted; this broker is now the master/)
    // The other slave replicates the new master's new messages.
    await waitFor(
      async () => {
        const [m, s] = [await ends(promoted.port), await ends(other.port)]
        return [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
      },
      {timeoutMs: 60_000, what: 'the other slave to follow the new master'},
    )

    // The old master started again as master finds the id taken by a live broker.
    const again = await runCli(['serve', '--port', '0', '-c', join(dir, 'master.ini'), '-d', join(dir, 'm')], {timeoutMs: 60_000})
    assert.notEqual(again.code, 0)
    assert.match(again.stderr, new RegExp(`broker id 0 is already registered in ZooKeeper by ${newMaster.replaceAll('.', '\\.')}`))
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/master`), newMaster)
    // Started as a slave of the new master, it replicates it.
    const rejoined = await spawnBroker(t, ['-c', join(dir, 'master.ini'), '--slave-id', '3', '-d', join(dir, 'm')])
    await waitFor(
      async () => {
        const [m, s] = [await ends(promoted.port), await ends(rejoined.port)]
        return m.size === 2 && [...m].every(([k, v]) => s.get(k) === v) ? true : undefined
      },
      {timeoutMs: 60_000, what: 'the old master to replicate the new one'},
    )
    assert.equal(await zkRead(client, `${root}/brokers/ids/0/slave3`), `meta://127.0.0.1:${rejoined.port}`)
  })

  it('a master that comes back within the grace period keeps its id: the slave stays a slave', async (t) => {
    const root = `/${uniqueName('meta')}`
    const dir = await tmpDir(t, 'meta-failover-grace-')
    const ini = `[system]\nbrokerId=3\n[zookeeper]\nzk.zkConnect=${zk.connect}\nzk.zkRoot=${root}\nzk.zkSessionTimeoutMs=4000\n`
    writeFileSync(join(dir, 'server.ini'), ini)
    const master = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '-d', join(dir, 'm')])
    // The grace is set from server.ini here (failover, failoverGraceMs); long, so a restart fits.
    writeFileSync(join(dir, 'slave.ini'), ini.replace('[system]\n', '[system]\nfailover=true\nfailoverGraceMs=120000\n'))
    const slave = await spawnBroker(t, ['-c', join(dir, 'slave.ini'), '--slave-id', '1', '-d', join(dir, 's')])
    await waitFor(() => (/following the master/.test(slave.stderr()) ? true : undefined), {timeoutMs: 30_000, what: 'the slave to follow the master'})
    master.child.kill('SIGTERM') // a planned restart: the master node goes at once
    await exited(master.child)
    await waitFor(() => (/promoting this slave if it stays gone/.test(slave.stderr()) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the slave to start its grace period',
    })
    const restarted = await spawnBroker(t, ['-c', join(dir, 'server.ini'), '-d', join(dir, 'm')])
    await waitFor(() => (/the master is registered again: no failover/.test(slave.stderr()) ? true : undefined), {
      timeoutMs: 30_000,
      what: 'the slave to cancel its failover',
    })
    assert.equal(await zkRead(client, `${root}/brokers/ids/3/master`), `meta://127.0.0.1:${restarted.port}`)
    assert.deepEqual(
      (await zkChildren(client, `${root}/brokers/ids/3`)).filter((c) => c.startsWith('slave')),
      ['slave1'],
    )
    assert.doesNotMatch(slave.stderr(), /won ids/)
  })

  it('--failover without ZooKeeper, and --failover-grace on a master, are usage errors', async (t) => {
    const dir = await tmpDir(t, 'meta-failover-usage-')
    const result = await runCli(['serve', '--port', '0', '-d', dir, '--failover'], {timeoutMs: 60_000})
    assert.equal(result.code, 2)
    assert.match(result.stderr, /--failover needs ZooKeeper \(--zk, zk.zkConnect\)/)
    const grace = await runCli(['serve', '--port', '0', '-d', dir, '--zk', zk.connect, '--failover', '--failover-grace', '1s'], {timeoutMs: 60_000})
    assert.equal(grace.code, 2)
    assert.match(grace.stderr, /--failover-grace is for a failover slave: add --slave-id N/)
  })
})
