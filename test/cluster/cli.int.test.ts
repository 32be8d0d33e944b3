/**
 * The CLI in cluster mode (--zk) against two brokers and a real ZooKeeper, through the built
 * bin/run.js: send and tail find the brokers in ZooKeeper, stats --all shows every broker,
 * topic list adds brokers up, and `offset reset --execute` writes MetaQ's offset znode
 * ("<msgId>-<offset>"), read back directly.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {createGroupConsumer, createProducer, type Message} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {collect, runCli, spawnCli} from '../helpers/process.js'
import {startZooKeeper, type TestZooKeeper, zkRead} from '../helpers/zookeeper.js'
import {suiteScope, uniqueName, waitFor} from '../helpers/index.js'

describe('meta commands with --zk', () => {
  const scope = suiteScope()
  let zk: TestZooKeeper
  let client: zookeeper.Client
  const root = `/${uniqueName('meta')}`
  const topic = uniqueName()
  let ports: number[] = []
  before(async () => {
    zk = await startZooKeeper(scope)
    client = await zk.client()
    for (const id of [0, 1]) {
      const broker = await startTestBroker(scope, {ini: `[system]\nbrokerId=${id}\nnumPartitions=1\n[zookeeper]\nzk.zkRoot=${root}\n`, zkConnect: zk.connect})
      ports.push(broker.port)
      const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
      await producer.send(topic, `seed-${id}`)
      await producer.close()
    }
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-pub/${topic}/1-m`)) !== undefined, {what: 'the topic on both brokers'})
  })
  after(() => scope.run())
  const zkArgs = () => ['--zk', zk.connect, '--zk-root', root]

  it('send and tail find the brokers in ZooKeeper', async () => {
    const sent = await runCli(['send', '-t', topic, ...zkArgs(), '--json'], {input: 'a\nb\nc\nd\n'})
    assert.equal(sent.code, 0, sent.stderr)
    assert.equal(JSON.parse(sent.stdout).sent, 4)
    const tail = await runCli(['tail', '-t', topic, '-e', '-q', '-f', '%p:%s\\n', ...zkArgs()])
    assert.equal(tail.code, 0, tail.stderr)
    assert.deepEqual(tail.stdout.trim().split('\n').sort(), ['0:a', '0:c', '0:seed-0', '0:seed-1', '0:b', '0:d'].sort())
  })

  it('stats --all shows every registered broker; topic list adds them up', async () => {
    const stats = await runCli(['stats', ...zkArgs(), '--all', '--json'])
    assert.equal(stats.code, 0, stats.stderr)
    const blocks = JSON.parse(stats.stdout) as Array<{brokerId: number; stats: {port: number}}>
    assert.deepEqual(
      blocks.map((b) => [b.brokerId, b.stats.port]),
      [
        [0, ports[0]],
        [1, ports[1]],
      ],
    )
    const topics = await runCli(['topic', 'list', ...zkArgs(), '--json'])
    assert.equal(topics.code, 0, topics.stderr)
    const row = (JSON.parse(topics.stdout) as Array<{topic: string; partitionCount: number}>).find((t) => t.topic === topic)
    assert.equal(row?.partitionCount, 2)
  })

  it('offset reset --execute moves the offset znode', async () => {
    const group = uniqueName('group')
    const member = createGroupConsumer({zk: zk.connect, zkRoot: root, group, topics: [topic], commitIntervalMs: 50})
    const seen: Message[] = []
    void member.run({eachMessage: (m) => void seen.push(m)})
    await waitFor(() => seen.some((m) => m.brokerId === 0) && seen.some((m) => m.brokerId === 1), {what: 'the member to consume from both brokers'})
    await member.stop()
    const node = `${root}/consumers/${group}/offsets/${topic}/1-0`
    assert.match((await zkRead(client, node)) ?? '', /^-?\d+-[1-9]\d*$/, 'committed past the start')

    const dry = await runCli(['offset', 'reset', '--group', group, '--topic', topic, '--to-earliest', ...zkArgs()])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match((await zkRead(client, node)) ?? '', /-[1-9]\d*$/, 'a dry run changes nothing')
    const run = await runCli(['offset', 'reset', '--group', group, '--topic', topic, '--to-earliest', '--execute', ...zkArgs()])
    assert.equal(run.code, 0, run.stderr)
    assert.equal(await zkRead(client, node), '-1-0', 'MetaQ format: "<msgId>-<offset>"')

    const describe = await runCli(['group', 'describe', group, ...zkArgs(), '--json'])
    assert.equal(describe.code, 0, describe.stderr)
    const detail = JSON.parse(describe.stdout) as {partitions: Array<{brokerId: number; committed: number | null}>}
    assert.deepEqual(
      detail.partitions.map((p) => [p.brokerId, p.committed]),
      [
        [0, 0],
        [1, 0],
      ],
    )
  })

  it('a following plain tail reads a partition added on one broker (ZooKeeper tells it)', async () => {
    const grown = uniqueName('grown')
    const seeded = createProducer({broker: `127.0.0.1:${ports[0]}`})
    assert.ok((await seeded.send(grown, 'before')).success)
    await seeded.close()
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-sub/${grown}/0-m`)) !== undefined, {what: 'the topic in ZooKeeper'})
    const child = spawnCli(['tail', '-t', grown, ...zkArgs()])
    let out = ''
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d))
    const done = collect(child, 120_000)
    try {
      await waitFor(() => out.includes('before\n'), {timeoutMs: 30_000, what: 'the tail reading the first partition'})
      const altered = await runCli(['topic', 'alter', grown, '--partitions', '2', '--broker-id', '0', ...zkArgs()])
      assert.equal(altered.code, 0, altered.stderr)
      await waitFor(async () => ((await zkRead(client, `${root}/brokers/topics-sub/${grown}/0-m`)) ?? '').includes('"numParts":2'), {
        what: 'partition 1 registered',
      })
      const producer = createProducer({broker: `127.0.0.1:${ports[0]}`})
      assert.ok((await producer.send(grown, 'in-the-new-partition', {partition: 1})).success)
      await producer.close()
      await waitFor(() => out.includes('in-the-new-partition\n'), {timeoutMs: 30_000, what: `the message of partition 0-1 (have: ${out})`})
    } finally {
      child.kill('SIGINT')
    }
    const result = await done
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stderr, new RegExp(`^% topic ${grown}: new partition 0-1: reading from the beginning$`, 'm'))
  })

  it('offset reset and group seek on a topic ZooKeeper does not know: NOT_FOUND with the close names, nothing written', async () => {
    const group = uniqueName('typo')
    const typo = `${topic}x`
    for (const args of [
      ['offset', 'reset', '--group', group, '--topic', typo, '--to-earliest', '--execute'],
      ['group', 'seek', group, '--to', 'start', '-t', typo, '--execute'],
    ]) {
      const result = await runCli([...args, ...zkArgs()])
      assert.equal(result.code, 1, result.stderr)
      assert.equal(
        result.stderr,
        `error [NOT_FOUND]: topic "${typo}" does not exist on ZooKeeper ${zk.connect} (root ${root})\nhint: did you mean "${topic}"? (--allow-missing-topic goes ahead anyway)\n`,
      )
    }
    assert.equal(await zkRead(client, `${root}/consumers/${group}`), undefined, 'no group node written')
  })

  it('partitions close skips a broker that does not accept the topic (TOPIC_NOT_ACCEPTED), and closes it on the others', async () => {
    // Runs last: a third broker that accepts one other topic only joins the cluster.
    await startTestBroker(scope, {
      ini: `[system]\nbrokerId=2\nnumPartitions=1\n[zookeeper]\nzk.zkRoot=${root}\n[topic=${uniqueName('other')}]\n`,
      zkConnect: zk.connect,
    })
    await waitFor(async () => (await zkRead(client, `${root}/brokers/ids/2/master`)) !== undefined, {what: 'broker 2 in ZooKeeper'})
    const closed = await runCli(['partitions', 'close', '-t', topic, ...zkArgs(), '--json'])
    assert.equal(closed.code, 0, closed.stderr)
    assert.deepEqual(
      (JSON.parse(closed.stdout) as Array<{brokerId: number; closed: number[]}>).map((a) => [a.brokerId, a.closed]),
      [
        [0, [0]],
        [1, [0]],
      ],
    )
    const opened = await runCli(['partitions', 'open', '-t', topic, ...zkArgs(), '--json'])
    assert.equal(opened.code, 0, opened.stderr)
  })
})
