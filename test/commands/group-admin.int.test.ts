/**
 * `meta group delete` and `meta group seek` (rpk's words for offset reset) against a real
 * standalone broker, through the built CLI: dry runs change nothing, --execute applies,
 * live members make both refuse (seek: unless --force).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {connectAdmin, createProducer, type AdminClient} from '../../src/client/index.js'
import {startHeldMember} from '../helpers/members.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

interface Fixture {
  url: string
  topic: string
  group: string
  admin: AdminClient
}

/** Two partitions of 4 records of 30 bytes; the group committed 60 on partition 0. */
async function fixture(t: Cleanup): Promise<Fixture> {
  const broker = await startTestBroker(t, {numPartitions: 2})
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName('orders')
  const group = uniqueName('billing')
  const producer = createProducer({broker: url})
  for (let i = 0; i < 8; i++) await producer.send(topic, `message-${i}`.padEnd(10, '.'), {partition: i % 2})
  await producer.close()
  const admin = await connectAdmin({broker: url})
  t.after(() => admin.close())
  await admin.commitOffsets(group, [{topic, partition: 0, offset: 60, msgId: '-1'}])
  return {url, topic, group, admin}
}

const cli = (args: string[], input?: string) => runCli(args, {timeoutMs: 20_000, input})

describe('meta group delete', () => {
  it('is a dry run without --execute; --execute deletes the group and its offsets', async (t) => {
    const f = await fixture(t)
    const dry = await cli(['group', 'delete', f.group, '-b', f.url])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, new RegExp(`^ GROUP\\s+TOPIC\\s+PARTITION\\s+COMMITTED\\n ${f.group}\\s+${f.topic}\\s+0\\s+60\\n$`))
    assert.equal(dry.stderr, `dry run: nothing was deleted; add --execute to delete group "${f.group}" and its 1 committed offset\n`)
    assert.equal((await f.admin.fetchOffsets(f.group)).length, 1)
    const run = await cli(['group', 'delete', f.group, '-b', f.url, '--execute', '--json'])
    assert.equal(run.code, 0, run.stderr)
    const result = JSON.parse(run.stdout) as {group: string; executed: boolean; offsets: unknown[]}
    assert.equal(result.executed, true)
    assert.equal(result.offsets.length, 1)
    assert.deepEqual(await f.admin.fetchOffsets(f.group), [])
    const again = await cli(['group', 'delete', f.group, '-b', f.url, '--execute'])
    assert.equal(again.code, 1)
    assert.match(again.stderr, /^error \[NOT_FOUND\]: unknown group/)
  })

  it('refuses while the group has live members, naming them', async (t) => {
    const f = await fixture(t)
    startHeldMember(t, {broker: f.url, group: f.group, topic: f.topic, memberId: 'live-1'})
    await waitFor(async () => (await f.admin.describeGroup(f.group)).members.length === 1, {what: 'the member to join'})
    const r = await cli(['group', 'delete', f.group, '-b', f.url, '--execute'])
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `error [GROUP_ERROR]: group "${f.group}" has 1 live member: "live-1"; stop them before deleting it\n`)
    assert.equal((await f.admin.fetchOffsets(f.group)).length, 1)
  })
})

describe('meta group seek', () => {
  it('--to start|end|<time> plans like offset reset; --execute commits; all topics by default', async (t) => {
    const f = await fixture(t)
    const plan = async (args: string[]) =>
      JSON.parse((await cli(['group', 'seek', f.group, '-b', f.url, ...args, '--json'])).stdout) as {
        strategy: string
        executed: boolean
        partitions: Array<{partition: number; new: number}>
      }
    const start = await plan(['--to', 'start'])
    assert.equal(start.strategy, '--to start')
    assert.equal(start.executed, false)
    assert.deepEqual(
      start.partitions.map((p) => [p.partition, p.new]),
      [
        [0, 0],
        [1, 0],
      ],
    )
    const end = await plan(['--to', 'end', '-t', `${f.topic}:1`, '--execute'])
    assert.equal(end.executed, true)
    assert.deepEqual(
      end.partitions.map((p) => [p.partition, p.new]),
      [[1, 120]],
    )
    assert.deepEqual(
      (await f.admin.fetchOffsets(f.group)).map((o) => [o.partition, o.offset]),
      [
        [0, 60],
        [1, 120],
      ],
    )
    const future = await plan(['--to', String(Math.floor(Date.now() / 1000) + 3600)])
    assert.deepEqual(
      future.partitions.map((p) => p.new),
      [120, 120],
      'no message after the time: the log end',
    )
    const past = await plan(['--to', '2000-01-01T00:00:00Z'])
    assert.deepEqual(
      past.partitions.map((p) => p.new),
      [0, 0],
    )
  })

  it('--to-file restores offsets; bad --to values are usage errors', async (t) => {
    const f = await fixture(t)
    const dir = await tmpDir(t)
    const file = join(dir, 'offsets.csv')
    await writeFile(file, `topic,partition,offset\n${f.topic},0,30\n`)
    const r = await cli(['group', 'seek', f.group, '-b', f.url, '--to-file', file, '--execute'])
    assert.equal(r.code, 0, r.stderr)
    assert.equal((await f.admin.fetchOffsets(f.group)).find((o) => o.partition === 0)?.offset, 30)
    const bad = await cli(['group', 'seek', f.group, '-b', f.url, '--to', 'yesterday'])
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /^error \[USAGE\]: invalid --to "yesterday": expected start, end, @-<duration>/)
    const none = await cli(['group', 'seek', f.group, '-b', f.url])
    assert.equal(none.code, 2)
    assert.match(none.stderr, /a strategy is required: '--to start\|end\|@<time>', '--to-file <file>' or one of '--to-earliest'/)
  })
})
