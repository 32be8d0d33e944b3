/**
 * Every admin command exits when its work is done in cluster mode while a member of the group is
 * live (`offset show --zk` and `group describe --zk` look brokers up concurrently, and one leaked
 * broker connection would keep the process alive after its table). A real ZooKeeper, a broker
 * registered in it and a live `meta tail --group` member; each command runs with a deadline, so a
 * hang fails the test instead of stalling it.
 */
import {after, before, describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type zookeeper from 'node-zookeeper-client'
import {createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {exited, runCli, spawnCli} from '../helpers/process.js'
import {startZooKeeper, zkRead, type TestZooKeeper} from '../helpers/zookeeper.js'
import {suiteScope, uniqueName, waitFor} from '../helpers/index.js'

const DEADLINE_MS = 30_000

describe('meta admin commands with --zk and a live group member', () => {
  const scope = suiteScope()
  let zk: TestZooKeeper
  let client: zookeeper.Client
  const root = `/${uniqueName('meta')}`
  const topic = uniqueName('orders')
  const group = uniqueName('billing')
  let member: ReturnType<typeof spawnCli>
  let memberStderr = ''
  const zkArgs = () => ['--zk', zk.connect, '--zk-root', root]

  before(async () => {
    zk = await startZooKeeper(scope)
    client = await zk.client()
    const broker = await startTestBroker(scope, {ini: `[system]\nbrokerId=0\nnumPartitions=2\n[zookeeper]\nzk.zkRoot=${root}\n`, zkConnect: zk.connect})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    for (let i = 0; i < 4; i++) await producer.send(topic, `m${i}`, {partition: i % 2})
    await producer.close()
    await waitFor(async () => (await zkRead(client, `${root}/brokers/topics-sub/${topic}/0-m`)) !== undefined, {what: 'the topic in ZooKeeper'})
    member = spawnCli(['tail', '-t', topic, '--group', group, ...zkArgs()])
    scope.after(() => member.kill('SIGKILL'))
    member.stderr!.setEncoding('utf8').on('data', (d: string) => (memberStderr += d))
    await waitFor(() => memberStderr.includes(`% group ${group}: assigned ${topic} [0-0], ${topic} [0-1]`), {
      what: `the member's assignment in: ${memberStderr}`,
      timeoutMs: DEADLINE_MS,
    })
    // The member's first commits (past offset 0) are in ZooKeeper, so a reset to the earliest changes them.
    const committedPastZero = async (p: number) => /-[1-9]\d*$/.test((await zkRead(client, `${root}/consumers/${group}/offsets/${topic}/0-${p}`)) ?? '')
    await waitFor(async () => (await committedPastZero(0)) && (await committedPastZero(1)), {what: "the member's first commits", timeoutMs: DEADLINE_MS})
  })
  after(() => scope.run())

  const run = (args: string[]) => runCli([...args, ...zkArgs()], {timeoutMs: DEADLINE_MS})

  it('offset show, group describe, group list, topic describe and stats print and exit 0', async () => {
    const show = await run(['offset', 'show', '--group', group])
    assert.equal(show.code, 0, show.stderr)
    assert.match(show.stdout, /^ TOPIC\s+PARTITION\s+COMMITTED\s+LOG-START\s+LOG-END\s+LAG\s+LAG-BYTES/)
    const describeGroup = await run(['group', 'describe', group])
    assert.equal(describeGroup.code, 0, describeGroup.stderr)
    assert.match(describeGroup.stdout, new RegExp(`${group}_`), 'the live member is listed')
    const list = await run(['group', 'list', '--json'])
    assert.equal(list.code, 0, list.stderr)
    assert.ok((JSON.parse(list.stdout) as Array<{group: string; memberCount: number}>).some((g) => g.group === group && g.memberCount === 1))
    const topicDescribe = await run(['topic', 'describe', topic, '-p', '1'])
    assert.equal(topicDescribe.code, 0, topicDescribe.stderr)
    assert.match(topicDescribe.stdout, /PARTITION\s+1 \(broker 0, partition 1\)/)
    const stats = await run(['stats', '--all', '--json'])
    assert.equal(stats.code, 0, stats.stderr)
  })

  it('offset reset and group seek --execute refuse (live member) or apply (--force), and exit', async () => {
    const refused = await run(['offset', 'reset', '--group', group, '--topic', topic, '--to-earliest', '--execute'])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^error \[GROUP_ERROR\]: group ".*" has 1 live member/)
    const forced = await run(['offset', 'reset', '--group', group, '--topic', topic, '--to-earliest', '--execute', '--force'])
    assert.equal(forced.code, 0, forced.stderr)
    assert.match(forced.stderr, /committed 2 offsets/)
    assert.match((await zkRead(client, `${root}/consumers/${group}/offsets/${topic}/0-0`)) ?? '', /-0$/)
    const seek = await run(['group', 'seek', group, '--to', 'end', '--execute', '--force'])
    assert.equal(seek.code, 0, seek.stderr)
    assert.match(seek.stderr, /committed 2 offsets/)
    assert.match((await zkRead(client, `${root}/consumers/${group}/offsets/${topic}/0-0`)) ?? '', /-[1-9]\d*$/)
  })

  it('group delete refuses while the member is live and deletes the znodes once it stopped', async () => {
    const refused = await run(['group', 'delete', group, '--execute'])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /^error \[GROUP_ERROR\]: group ".*" has 1 live member/)
    member.kill('SIGINT')
    assert.equal((await exited(member)).code, 0)
    const dry = await run(['group', 'delete', group])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stderr, /^dry run: nothing was deleted/m)
    assert.notEqual(await zkRead(client, `${root}/consumers/${group}/offsets/${topic}/0-0`), undefined)
    const deleted = await run(['group', 'delete', group, '--execute'])
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.match(deleted.stderr, new RegExp(`deleted group "${group}" and its 2 committed offsets`))
    assert.equal(await zkRead(client, `${root}/consumers/${group}`), undefined)
    const gone = await run(['group', 'describe', group])
    assert.equal(gone.code, 1)
  })
})
