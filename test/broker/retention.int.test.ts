/**
 * Retention on a real broker with real time: deleteWhen fires every second, segments whose
 * file is older than the deletePolicy age go (their modification time is set back with
 * utimes, so the test does not wait hours), newer sealed segments and the active one stay; a
 * consumer at a removed offset is moved (301) to the new log start; `archive` renames and
 * `archive,…,true` zips (checked with `unzip`); maxPartitionBytes bounds a partition as
 * segments roll; `stats offsets` and `meta topic describe` show the new start.
 */
import assert from 'node:assert/strict'
import {readdir, readFile, utimes} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, it} from 'node:test'
import {createConsumer, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, waitFor, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {unzipContents, unzipTest} from '../helpers/unzip.js'
import type {Broker} from '../../src/broker/index.js'

const EVERY_SECOND = '* * * * * ?'

/** 12 messages of 30 bytes on partition 0, one put each: 4 per segment with maxSegmentSize=100 → segments at 0, 120, 240 (active). */
async function fill(broker: Broker, topic: string, count = 12): Promise<void> {
  const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
  try {
    for (let i = 0; i < count; i++) {
      const r = await producer.send(topic, `msg-${String(i).padStart(2, '0')}`.padEnd(10, '.'), {partition: 0})
      assert.ok(r.success, r.errorMessage)
    }
  } finally {
    await producer.close()
  }
}

async function ageSegments(dir: string, starts: number[], ageMs: number): Promise<void> {
  const then = new Date(Date.now() - ageMs)
  for (const start of starts) await utimes(join(dir, `${String(start).padStart(20, '0')}.meta`), then, then)
}

async function segmentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.includes('.meta')).sort()
}

async function startRetainingBroker(t: Cleanup, policy: string, extra = ''): Promise<{broker: Broker; topic: string; dir: string}> {
  const topic = uniqueName('retained')
  const broker = await startTestBroker(t, {
    ini: `[system]\nmaxSegmentSize=100\n[topic=${topic}]\ndeletePolicy=${policy}\ndeleteWhen=${EVERY_SECOND}\n${extra}`,
  })
  return {broker, topic, dir: join(broker.config.system.dataPath, `${topic}-0`)}
}

describe('retention on a running broker', () => {
  it('deletes segments older than the age every second; newer and active ones stay; a consumer below the start gets 301', async (t) => {
    const {broker, topic, dir} = await startRetainingBroker(t, 'delete,1h')
    await fill(broker, topic, 16) // segments 0, 120, 240, 360 (active)
    await ageSegments(dir, [0, 120], 2 * 3_600_000)
    await waitFor(async () => !(await segmentFiles(dir)).includes('00000000000000000120.meta'), {what: 'the two old segments to be deleted', timeoutMs: 20_000})
    assert.deepEqual(await segmentFiles(dir), ['00000000000000000240.meta', '00000000000000000360.meta'])
    assert.equal(broker.store.get(topic, 0)?.minOffset, 240)

    const client = await RawClient.connect(t, broker.port)
    const moved = await client.request(`get ${topic} g 0 0 1024 1\r\n`)
    assert.ok(moved.type === 'result' && moved.code === 301)
    assert.equal(text(moved), '240')
    const consumer = createConsumer({broker: `127.0.0.1:${broker.port}`, topics: [topic], stopAtEnd: true})
    const payloads: string[] = []
    for await (const batch of consumer.batches()) payloads.push(...batch.messages.map((m) => m.data.toString()))
    assert.deepEqual(
      payloads,
      ['msg-08....', 'msg-09....', 'msg-10....', 'msg-11....', 'msg-12....', 'msg-13....', 'msg-14....', 'msg-15....'],
      'the consumer starting at 0 follows the 301',
    )

    const offsets = await client.request('stats offsets 2\r\n')
    assert.match(text(offsets), new RegExp(`${topic} part 0 min_offset 240 max_offset 480`))
    const describe = await runCli(['topic', 'describe', topic, '-b', `127.0.0.1:${broker.port}`, '--json'])
    assert.equal(describe.code, 0, describe.stderr)
    assert.equal(JSON.parse(describe.stdout).partitions[0].minOffset, 240)
  })

  it('archive renames old segments to .meta.arc; archive with true zips them to .meta.zip holding the original bytes', async (t) => {
    const renamed = await startRetainingBroker(t, 'archive,1h')
    await fill(renamed.broker, renamed.topic)
    await ageSegments(renamed.dir, [0], 2 * 3_600_000)
    await waitFor(async () => (await segmentFiles(renamed.dir)).includes('00000000000000000000.meta.arc'), {what: 'the .arc archive', timeoutMs: 20_000})
    assert.deepEqual(await segmentFiles(renamed.dir), ['00000000000000000000.meta.arc', '00000000000000000120.meta', '00000000000000000240.meta'])

    const zipped = await startRetainingBroker(t, 'archive,1h,true')
    await fill(zipped.broker, zipped.topic)
    const original = await readFile(join(zipped.dir, '00000000000000000000.meta'))
    await ageSegments(zipped.dir, [0, 120], 2 * 3_600_000)
    await waitFor(async () => (await segmentFiles(zipped.dir)).includes('00000000000000000120.meta.zip'), {what: 'the zip archives', timeoutMs: 20_000})
    assert.deepEqual(await segmentFiles(zipped.dir), ['00000000000000000000.meta.zip', '00000000000000000120.meta.zip', '00000000000000000240.meta'])
    const zip = join(zipped.dir, '00000000000000000000.meta.zip')
    unzipTest(zip)
    assert.deepEqual(unzipContents(zip), original)
    assert.equal(zipped.broker.store.get(zipped.topic, 0)?.minOffset, 240)
  })

  it('maxPartitionBytes removes the oldest segments as soon as a roll crosses it, whatever their age', async (t) => {
    const {broker, topic, dir} = await startRetainingBroker(t, 'delete,168', 'maxPartitionBytes=250\n')
    await fill(broker, topic, 20) // 600 bytes: segments 0, 120, 240, 360, 480 (active, 120 bytes)
    await waitFor(() => (broker.store.get(topic, 0)?.sizeBytes ?? 0) <= 250, {what: 'the partition to shrink to its bound', timeoutMs: 20_000})
    assert.deepEqual(await segmentFiles(dir), ['00000000000000000360.meta', '00000000000000000480.meta'])
  })
})
