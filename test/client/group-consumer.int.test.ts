/**
 * Consumer groups in standalone mode, with a real broker and several real members (in this
 * process, and in child processes for the SIGKILL case): partitions split with MetaQ's
 * DEFAULT strategy and move on join, leave and eviction; no message is lost across member
 * restarts; a partition is never processed by two members at once; committed offsets survive
 * a broker kill -9; start positions; retry, recover store, drop policy and filters.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {spawn} from 'node:child_process'
import {readdir} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'
import {connectAdmin, createGroupConsumer, createProducer, type GroupConsumer, type Message} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {clientFixture} from '../helpers/client.js'
import {exited, spawnBroker} from '../helpers/process.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

function owned(consumer: GroupConsumer): number[] {
  return consumer
    .assignment()
    .map((p) => p.partition.partition)
    .sort((a, b) => a - b)
}

/** A member of a group on a broker of its own (the kill -9 test restarts its broker). */
function member(t: Cleanup, url: string, group: string, topic: string, memberId: string): GroupConsumer {
  const consumer = createGroupConsumer({broker: url, group, topics: [topic], memberId, sessionTimeoutMs: 1000, commitIntervalMs: 100})
  t.after(() => consumer.stop())
  return consumer
}

async function produce(url: string, topic: string, count: number, prefix = 'm'): Promise<void> {
  const producer = createProducer({broker: url})
  for (let i = 0; i < count; i++) await producer.send(topic, `${prefix}${i}`)
  await producer.close()
}

const MEMBER_SCRIPT = fileURLToPath(new URL('../helpers/group-member.ts', import.meta.url))

describe('GroupConsumer', () => {
  it('splits partitions with the DEFAULT strategy and rebalances on join and leave', async (t) => {
    const f = await clientFixture(t, {numPartitions: 5})
    const group = uniqueName('group')
    const a = f.member(group, 'a')
    void a.run({eachMessage: () => {}})
    await waitFor(() => owned(a).length === 5, {what: 'a to own all 5 partitions'})
    const b = f.member(group, 'b')
    void b.run({eachMessage: () => {}})
    // 5 partitions, 2 members: a (index 0) takes 3, b takes 2, contiguous slices.
    await waitFor(() => owned(a).join() === '0,1,2' && owned(b).join() === '3,4', {what: 'a: 0,1,2 and b: 3,4'})
    const c = f.member(group, 'c')
    void c.run({eachMessage: () => {}})
    await waitFor(() => owned(a).join() === '0,1' && owned(b).join() === '2,3' && owned(c).join() === '4', {what: 'a 0,1 / b 2,3 / c 4'})
    await b.stop()
    await waitFor(() => owned(a).join() === '0,1,2' && owned(c).join() === '3,4', {what: 'a and c to take over b'})
  })

  it('never has two members processing one partition at once, and loses nothing across restarts', async (t) => {
    const f = await clientFixture(t, {numPartitions: 4})
    const group = uniqueName('group')
    await f.produce(400)
    const active = new Map<number, string>()
    const seen = new Set<string>()
    const overlaps: string[] = []
    const handler = (id: string) => async (m: Message) => {
      const holder = active.get(m.partition)
      if (holder !== undefined && holder !== id) overlaps.push(`${id} and ${holder} on ${m.partition}`)
      active.set(m.partition, id)
      await new Promise((resolve) => setImmediate(resolve))
      seen.add(m.data.toString())
      active.delete(m.partition)
    }
    const first = f.member(group, 'm1')
    void first.run({eachMessage: handler('m1')})
    await waitFor(() => seen.size >= 50, {what: '50 messages'})
    const second = f.member(group, 'm2')
    void second.run({eachMessage: handler('m2')})
    await waitFor(() => owned(second).length === 2, {what: 'm2 to own 2 partitions'})
    await first.stop() // commits, leaves; m2 takes everything
    const third = f.member(group, 'm3')
    void third.run({eachMessage: handler('m3')})
    await f.produce(100, 'late')
    await waitFor(() => seen.size === 500, {what: 'all 500 messages at least once', timeoutMs: 20_000})
    assert.deepEqual(overlaps, [])
  })

  it('evicts a member killed with SIGKILL after its session timeout', async (t) => {
    const f = await clientFixture(t, {numPartitions: 2})
    const group = uniqueName('group')
    const child = spawn(process.execPath, ['--import', 'tsx', MEMBER_SCRIPT, f.url, group, f.topic, 'a-child', '1500'], {stdio: ['ignore', 'pipe', 'inherit']})
    t.after(() => child.kill('SIGKILL'))
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
    await waitFor(() => out.includes('"partitions":[0,1]'), {what: 'the child to own both partitions', timeoutMs: 15_000})
    const survivor = f.member(group, 'b-survivor')
    void survivor.run({eachMessage: () => {}})
    await waitFor(() => owned(survivor).join() === '1', {what: 'the survivor to own partition 1'})
    child.kill('SIGKILL')
    await exited(child)
    const killedAt = Date.now()
    await waitFor(() => owned(survivor).join() === '0,1', {what: 'the survivor to take over after eviction', timeoutMs: 10_000})
    assert.ok(Date.now() - killedAt >= 1000, 'not before the session timeout')
  })

  it('resumes from committed offsets that survive a broker kill -9', async (t) => {
    const dataPath = await tmpDir(t)
    const proc = await spawnBroker(t, ['--data-dir', dataPath])
    const url = `127.0.0.1:${proc.port}`
    const group = uniqueName('group')
    const topic = uniqueName()
    await produce(url, topic, 10)
    const seen: string[] = []
    const first = member(t, url, group, topic, 'a')
    void first.run({eachMessage: (m) => void seen.push(m.data.toString())})
    await waitFor(() => seen.length === 10, {what: 'the first 10 messages'})
    await first.commit()
    proc.child.kill('SIGKILL')
    await exited(proc.child)
    const restarted = await startTestBroker(t, {dataPath})
    const admin = await connectAdmin({broker: `127.0.0.1:${restarted.port}`})
    t.after(() => admin.close())
    const offsets = await admin.fetchOffsets(group)
    assert.equal(offsets.length, 1)
    assert.equal(offsets[0].offset, 10 * 22, 'after the tenth 22-byte record')
    const again = `127.0.0.1:${restarted.port}`
    await produce(again, topic, 3, 'new')
    const second = member(t, again, group, topic, 'b')
    const resumed: string[] = []
    void second.run({eachMessage: (m) => void resumed.push(m.data.toString())})
    await waitFor(() => resumed.length === 3, {what: 'the 3 new messages'})
    assert.deepEqual(resumed, ['new0', 'new1', 'new2'])
  })

  it('starts a new group at the earliest offset, or at the end with fromLatest', async (t) => {
    const f = await clientFixture(t)
    await f.produce(3)
    const early: string[] = []
    const late: string[] = []
    const e = f.member(uniqueName('group'), 'e')
    const l = f.member(uniqueName('group'), 'l', {fromLatest: true})
    void e.run({eachMessage: (m) => void early.push(m.data.toString())})
    void l.run({eachMessage: (m) => void late.push(m.data.toString())})
    await waitFor(() => early.length === 3 && owned(l).length === 1, {what: 'both members started'})
    await waitFor(() => f.broker.stats.polls.size === 2, {what: 'both members to reach the end'})
    await f.produce(1, 'fresh')
    await waitFor(() => late.length === 1 && early.length === 4, {what: 'the fresh message'})
    assert.deepEqual(late, ['fresh0'])
  })

  it('retries a failing handler, then hands the message to the recover store and moves on', async (t) => {
    const f = await clientFixture(t)
    const recoverDir = await tmpDir(t)
    await f.produce(3)
    const attempts = new Map<string, number>()
    let poisonHealed = false
    const done: string[] = []
    const consumer = f.member(uniqueName('group'), 'r', {maxFetchRetries: 2, recoverDir, recoverIntervalMs: 200})
    void consumer.run({
      eachMessage: (m) => {
        const data = m.data.toString()
        attempts.set(data, (attempts.get(data) ?? 0) + 1)
        if (data === 'm1' && !poisonHealed) throw new Error('poison')
        done.push(data)
      },
    })
    await waitFor(() => done.includes('m2'), {what: 'm2 after the poison message'})
    assert.equal(attempts.get('m1'), 3, 'first try plus 2 retries')
    const dirs = await readdir(recoverDir)
    assert.equal(dirs.length, 1)
    assert.match(dirs[0], /@/)
    assert.equal((await readdir(`${recoverDir}/${dirs[0]}`)).length, 1, 'one saved message')
    poisonHealed = true
    await waitFor(() => done.includes('m1'), {what: 'the recover store to re-deliver m1'})
    await waitFor(async () => (await readdir(`${recoverDir}/${dirs[0]}`)).length === 0, {what: 'the saved message to be removed'})
  })

  it('drops a failing message with onFailure=drop, and skips what the filter rejects', async (t) => {
    const f = await clientFixture(t)
    await f.produce(4)
    const done: string[] = []
    const consumer = f.member(uniqueName('group'), 'd', {
      maxFetchRetries: 0,
      onFailure: 'drop',
      filter: (m: Message) => m.data.toString() !== 'm3',
    })
    void consumer.run({
      eachMessage: (m) => {
        if (m.data.toString() === 'm0') throw new Error('bad')
        done.push(m.data.toString())
      },
    })
    await waitFor(() => done.length === 2, {what: 'm1 and m2'})
    await consumer.commit()
    assert.deepEqual(done, ['m1', 'm2'])
    await waitFor(() => consumer.positions().get(`${f.topic}:0-0`) === 4 * 22, {what: 'the position past the filtered m3'})
  })
})
