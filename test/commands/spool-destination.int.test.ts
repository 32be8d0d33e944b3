/**
 * A spool belongs to one destination: two real brokers (one behind a forwarder, so it can be
 * away while its address stays), and spools meant for one never drained into the other.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readdirSync} from 'node:fs'
import {join} from 'node:path'
import {createConsumer} from '../../src/client/index.js'
import {Spool} from '../../src/client/spool/index.js'
import {tmpDir, uniqueName} from '../helpers/index.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'
import {tcpForwarder} from '../helpers/tcp-relay.js'
import {startZooKeeper} from '../helpers/zookeeper.js'

async function readTopic(port: number, topic: string): Promise<string[]> {
  const consumer = createConsumer({broker: `127.0.0.1:${port}`, topics: [topic], stopAtEnd: true})
  const out: string[] = []
  for await (const batch of consumer.batches()) out.push(...batch.messages.map((m) => m.data.toString()))
  return out
}

const lines = (prefix: string, n: number) => Array.from({length: n}, (_, i) => `${prefix}${i + 1}`)

describe('a spool belongs to one destination', () => {
  it('is drained only into the broker it was written for: another broker leaves it alone and says how to send it; spool send sends each spool to its own', async (t) => {
    const spool = await tmpDir(t)
    const toA = await tcpForwarder(t) // broker A, away for now
    const toB = await tcpForwarder(t) // broker B, away for now too
    const a = `127.0.0.1:${toA.port}`
    const b = `127.0.0.1:${toB.port}`
    const topic = uniqueName('sp')
    const forA = await runCli(['send', '-t', topic, '-b', a, '--spool', spool, '--max-outage', '1s'], {input: `${lines('a', 26).join('\n')}\n`})
    assert.equal(forA.code, 1, forA.stderr)
    assert.match(forA.stderr, /26 messages kept in /)

    // Broker B comes up: a send to it does not take A's spool, and says so once.
    const brokerB = await spawnBroker(t, ['-d', await tmpDir(t)])
    toB.pointAt(brokerB.port)
    const toOther = await runCli(['send', '-t', topic, '-b', b, '--spool', spool], {input: 'x\n'})
    assert.equal(toOther.code, 0, toOther.stderr)
    const waits = toOther.stderr.match(/^% the spool .* waits for .*$/gm) ?? []
    assert.deepEqual(waits, [
      `% the spool ${join(spool, topic)} of topic ${topic} (26 messages) waits for broker ${a}, not broker ${b}: left alone; send it there with 'meta spool send ${topic} --spool ${spool}', or here on purpose with 'meta spool send ${topic} --spool ${spool} -b ${b} --retarget'`,
    ])
    assert.doesNotMatch(toOther.stderr, /sent from the spool/)
    assert.deepEqual(await readTopic(brokerB.port, topic), ['x'])

    // B goes away during a send: its own spool is beside A's, recorded for B.
    brokerB.child.kill('SIGKILL')
    toB.pointAt(1) // nothing listens on port 1: connections are refused
    const forB = await runCli(['send', '-t', topic, '-b', b, '--spool', spool, '--max-outage', '1s'], {input: `${lines('b', 3).join('\n')}\n`})
    assert.equal(forB.code, 1, forB.stderr)
    const listed = await runCli(['spool', 'list', '--spool', spool, '--json'])
    const {spools} = JSON.parse(listed.stdout) as {spools: Array<{dir: string; messages: number; destination: unknown}>}
    assert.deepEqual(
      spools.map((s) => [s.dir === join(spool, topic) ? 'own' : 'beside', s.messages, s.destination]),
      [
        ['own', 26, {broker: a}],
        ['beside', 3, {broker: b}],
      ],
    )
    const table = await runCli(['spool', 'list', '--spool', spool])
    assert.match(table.stdout, new RegExp(`^ ${topic}\\s+26\\s+\\S+ \\S+\\s+broker ${a}\\s`, 'm'))

    // spool send -b B sends only B's spool; A's is named and left (exit 1: its topic was named).
    const brokerB2 = await spawnBroker(t, ['-d', await tmpDir(t)])
    toB.pointAt(brokerB2.port)
    const onlyB = await runCli(['spool', 'send', topic, '--spool', spool, '-b', b])
    assert.equal(onlyB.code, 1, onlyB.stderr)
    assert.match(
      onlyB.stderr,
      new RegExp(`^% the spool ${join(spool, topic)} of topic ${topic} \\(26 messages\\) waits for broker ${a}, not broker ${b}: left alone`, 'm'),
    )
    assert.match(onlyB.stderr, new RegExp(`^sent 3 messages from ${topic} \\(3\\); 1 spool left for another destination$`, 'm'))
    assert.deepEqual(await readTopic(brokerB2.port, topic), lines('b', 3))

    // Without -b, each spool goes where it was written for.
    const brokerA = await spawnBroker(t, ['-d', await tmpDir(t)])
    toA.pointAt(brokerA.port)
    const own = await runCli(['spool', 'send', '--spool', spool])
    assert.equal(own.code, 0, own.stderr)
    assert.deepEqual(await readTopic(brokerA.port, topic), lines('a', 26))
    assert.deepEqual(await readTopic(brokerB2.port, topic), lines('b', 3), 'nothing of A reached B')
    assert.deepEqual(readdirSync(spool), [])
  })

  it('--retarget sends a spool to another broker on purpose; a spool without a destination is adopted by the first send, with a warning', async (t) => {
    const spool = await tmpDir(t)
    const away = await tcpForwarder(t)
    const broker = await spawnBroker(t, ['-d', await tmpDir(t)])
    const here = `127.0.0.1:${broker.port}`
    const topic = uniqueName('rt')
    const left = await runCli(['send', '-t', topic, '-b', `127.0.0.1:${away.port}`, '--spool', spool, '--max-outage', '1s'], {input: 'r1\nr2\n'})
    assert.equal(left.code, 1, left.stderr)
    const needsTarget = await runCli(['spool', 'send', '--spool', spool, '--retarget'])
    assert.equal(needsTarget.code, 2)
    assert.match(needsTarget.stderr, /--retarget needs -b or --zk/)
    const moved = await runCli(['spool', 'send', '--spool', spool, '-b', here, '--retarget'])
    assert.equal(moved.code, 0, moved.stderr)
    assert.match(
      moved.stderr,
      new RegExp(`^% the spool \\S+ of topic ${topic} was for broker 127\\.0\\.0\\.1:${away.port}: sent to broker ${here} \\(--retarget\\)$`, 'm'),
    )
    assert.deepEqual(await readTopic(broker.port, topic), ['r1', 'r2'])

    // Written before spools recorded a destination (the library's Spool without one).
    const legacy = uniqueName('legacy')
    const old = Spool.open(join(spool, legacy))
    for (const payload of ['l1', 'l2']) old.append({partition: -1, attribute: undefined, payload: Buffer.from(payload)})
    old.close()
    const listed = JSON.parse((await runCli(['spool', 'list', '--spool', spool, '--json'])).stdout) as {spools: Array<{destination: unknown}>}
    assert.deepEqual(
      listed.spools.map((s) => s.destination),
      [null],
    )
    const adopted = await runCli(['send', '-t', legacy, '-b', `localhost:${broker.port}`, '--spool', spool], {input: 'l3\n'})
    assert.equal(adopted.code, 0, adopted.stderr)
    assert.deepEqual(adopted.stderr.match(/^% the spool .*$/gm), [
      `% the spool ${join(spool, legacy)} of topic ${legacy} records no destination (an older meta wrote it): it is for broker ${here} from now on`,
    ])
    assert.deepEqual(await readTopic(broker.port, legacy), ['l1', 'l2', 'l3'])
  })

  it('a cluster destination is its ZooKeeper and root: another root on the same ensemble leaves the spool alone', async (t) => {
    const zk = await startZooKeeper(t)
    const spool = await tmpDir(t)
    const data = await tmpDir(t)
    const root = `/${uniqueName('meta')}`
    const other = `/${uniqueName('meta')}`
    const serve = ['-d', data, '--zk', zk.connect, '--zk-root', root, '--broker-id', '0']
    let broker = await spawnBroker(t, serve)
    const topic = uniqueName('zt')
    const cluster = ['--zk', zk.connect, '--zk-root', root]
    const first = await runCli(['send', '-t', topic, ...cluster, '--spool', spool], {input: 'z1\n'})
    assert.equal(first.code, 0, first.stderr)
    broker.child.kill('SIGKILL')
    await exited(broker.child)
    const kept = await runCli(['send', '-t', topic, ...cluster, '--spool', spool, '--max-outage', '1s'], {input: 'z2\nz3\n'})
    assert.equal(kept.code, 1, kept.stderr)
    const listed = JSON.parse((await runCli(['spool', 'list', '--spool', spool, '--json'])).stdout) as {spools: Array<{messages: number; destination: unknown}>}
    assert.deepEqual(
      listed.spools.map((s) => [s.messages, s.destination]),
      [[2, {zk: zk.connect, zkRoot: root}]],
    )

    const elsewhere = await runCli(['send', '-t', topic, '--zk', zk.connect, '--zk-root', other, '--spool', spool, '--max-outage', '1s'], {input: ''})
    assert.match(
      elsewhere.stderr,
      new RegExp(
        `^% the spool \\S+ of topic ${topic} \\(2 messages\\) waits for ZooKeeper ${zk.connect} \\(root ${root}\\), not ZooKeeper ${zk.connect} \\(root ${other}\\): left alone; send it there with 'meta spool send ${topic} --spool ${spool}', or here on purpose with 'meta spool send ${topic} --spool ${spool} --zk ${zk.connect} --zk-root ${other} --retarget'$`,
        'm',
      ),
    )
    broker = await spawnBroker(t, serve)
    const sent = await runCli(['spool', 'send', '--spool', spool])
    assert.equal(sent.code, 0, sent.stderr)
    const read = await runCli(['tail', '-t', topic, ...cluster, '-e'])
    assert.deepEqual(read.stdout.trim().split('\n'), ['z1', 'z2', 'z3'])
  })
})
