/**
 * `meta topic delete --execute` removes everything of a topic — data in every partition,
 * overlay section, closed marks, group offsets — whatever its partition count: a topic created
 * online with more partitions than `[system] numPartitions` (on a zero-config broker, which
 * still accepts the name afterwards with that smaller count) and a server.ini topic. And a
 * broker killed (SIGKILL, as kill -9) at each step of the delete finishes it when it starts
 * again: the spawned `meta serve` kills itself at the step META_TEST_KILL_AT names
 * (src/broker/topic-delete.ts), then a plain `meta serve` on the same data directory finds the
 * intent it wrote and completes it before it listens.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {writeFile} from 'node:fs/promises'
import {join} from 'node:path'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, type Cleanup} from '../helpers/index.js'
import {exited, runCli, spawnBroker} from '../helpers/process.js'

const cli = (args: string[]) => runCli(args, {timeoutMs: 30_000})

/** 3 messages in each of partitions 0..2, partition 1 closed, group offsets on partitions 0 and 2 (and on another topic). */
async function fill(url: string, topic: string, group: string): Promise<void> {
  const producer = createProducer({broker: url})
  try {
    for (let i = 0; i < 9; i++) {
      const r = await producer.send(topic, `m${i}`, {partition: i % 3})
      assert.ok(r.success, r.errorMessage)
    }
    assert.ok((await producer.send('kept', 'k', {partition: 0})).success)
  } finally {
    await producer.close()
  }
  const admin = await connectAdmin({broker: url})
  try {
    await admin.commitOffsets(group, [
      {topic, partition: 0, offset: 0, msgId: '-1'},
      {topic, partition: 2, offset: 0, msgId: '-1'},
      {topic: 'kept', partition: 0, offset: 0, msgId: '-1'},
    ])
    await admin.closePartitions(topic, 1, 1)
  } finally {
    admin.close()
  }
}

/** Nothing of `topic` left in `dataPath` (files) nor on the broker at `url` (what it answers). */
async function assertGone(dataPath: string, url: string, topic: string, group: string): Promise<void> {
  assert.deepEqual(
    readdirSync(dataPath).filter((n) => n.startsWith(`${topic}-`)),
    [],
    'no partition directory',
  )
  const state = join(dataPath, '__meta_state')
  const aside = join(state, 'deleted-topics')
  assert.deepEqual(existsSync(aside) ? readdirSync(aside) : [], [], 'nothing left set aside')
  for (const file of ['topic-overlay.json', 'closed-partitions.json']) {
    if (existsSync(join(state, file))) assert.doesNotMatch(readFileSync(join(state, file), 'utf8'), new RegExp(`"${topic}"`), file)
  }
  if (existsSync(join(state, 'topic-deletes.json'))) assert.deepEqual(JSON.parse(readFileSync(join(state, 'topic-deletes.json'), 'utf8')).topics, {})
  const describe = await cli(['topic', 'describe', topic, '-b', url])
  assert.equal(describe.code, 1, describe.stdout)
  assert.match(describe.stderr, /NOT_FOUND/)
  const offsets = await cli(['offset', 'show', '-g', group, '-b', url, '--json'])
  assert.equal(offsets.code, 0, offsets.stderr)
  assert.deepEqual(
    (JSON.parse(offsets.stdout) as {partitions: Array<{topic: string}>}).partitions.map((p) => p.topic),
    ['kept'],
    'only the other topic keeps offsets',
  )
}

describe('meta topic delete', () => {
  it('deletes a topic created online with data in every partition, above [system] numPartitions; the dry run lists exactly that', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 1})
    const url = `127.0.0.1:${broker.port}`
    const topic = uniqueName('tb')
    const group = uniqueName('g')
    assert.equal((await cli(['topic', 'create', topic, '--partitions', '3', '-b', url])).code, 0)
    await fill(url, topic, group)

    const dry = await cli(['topic', 'delete', topic, '-b', url])
    assert.equal(dry.code, 0, dry.stderr)
    assert.match(dry.stdout, new RegExp(`^\\s*0\\s+${topic}\\s+3\\s+0,1,2\\s+9\\s+\\d+ B\\s+1\\s+${group}$`, 'm'))
    assert.match(dry.stderr, new RegExp(`dry run: nothing was deleted; add --execute to delete topic "${topic}" \\(3 partitions, 9 messages\\)`))

    const done = await cli(['topic', 'delete', topic, '--execute', '-b', url])
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stderr, new RegExp(`^deleted topic "${topic}" \\(3 partitions, 9 messages\\)$`, 'm'))
    await assertGone(broker.config.system.dataPath, url, topic, group)
    // Zero-config: the name is accepted again, now with [system] numPartitions, empty.
    assert.equal(broker.topics.resolve(topic)?.numPartitions, 1)
    assert.equal((await cli(['tail', '-t', topic, '-e', '-q', '-b', url])).stdout, '')
  })

  it('deletes a server.ini topic with data in every partition; its section keeps it configured, empty', async (t) => {
    const topic = uniqueName('ini')
    const group = uniqueName('g')
    const broker = await startTestBroker(t, {ini: `[system]\nnumPartitions=1\n[topic=${topic}]\nnumPartitions=3\n[topic=kept]\n`})
    const url = `127.0.0.1:${broker.port}`
    await fill(url, topic, group)
    const done = await cli(['topic', 'delete', topic, '--execute', '-b', url])
    assert.equal(done.code, 0, done.stderr)
    assert.match(done.stderr, new RegExp(`note: server.ini still has a \\[topic=${topic}\\] section`))
    assert.deepEqual(
      readdirSync(broker.config.system.dataPath).filter((n) => n.startsWith(`${topic}-`)),
      [],
    )
    assert.deepEqual(broker.topics.closedPartitions(topic), [])
    const offsets = await cli(['offset', 'show', '-g', group, '-b', url, '--json'])
    assert.deepEqual(
      (JSON.parse(offsets.stdout) as {partitions: Array<{topic: string}>}).partitions.map((p) => p.topic),
      ['kept'],
    )
  })

  for (const step of ['intent', 'set-aside', 'data', 'overlay']) {
    it(`a broker killed at step "${step}" of a delete finishes it when it starts again`, async (t) => {
      const dataPath = await tmpDir(t)
      const topic = uniqueName('crash')
      const group = uniqueName('g')
      const doomed = await spawnBroker(t, ['--data-dir', dataPath, '--partitions', '1'], {env: {META_TEST_KILL_AT: `topic-delete:${step}`}})
      const url = `127.0.0.1:${doomed.port}`
      assert.equal((await cli(['topic', 'create', topic, '--partitions', '3', '-b', url])).code, 0)
      await fill(url, topic, group)

      const cut = await cli(['topic', 'delete', topic, '--execute', '-b', url])
      assert.equal(cut.code, 1, `the broker died under the delete: ${cut.stderr}`)
      assert.deepEqual(await exited(doomed.child), {code: null, signal: 'SIGKILL'})
      const intent = JSON.parse(readFileSync(join(dataPath, '__meta_state', 'topic-deletes.json'), 'utf8')) as {topics: Record<string, unknown>}
      assert.deepEqual(intent.topics[topic], {local: true, zookeeper: false}, 'the intent outlived the kill')

      const again = await spawnBroker(t, ['--data-dir', dataPath, '--partitions', '1'])
      assert.match(again.stderr(), new RegExp(`"topic":"${topic}","msg":"finished deleting a topic whose delete was interrupted"`))
      await assertGone(dataPath, `127.0.0.1:${again.port}`, topic, group)
      // The rest of the broker is intact: the other topic's message is there.
      const kept = await cli(['tail', '-t', 'kept', '-e', '-q', '-b', `127.0.0.1:${again.port}`])
      assert.equal(kept.stdout, 'k\n')
    })
  }

  it('refuses a topic-deletes file that is not one, naming it', async (t) => {
    const dataPath = await tmpDir(t)
    await writeFile(join(dataPath, '.keep'), '')
    const state = join(dataPath, '__meta_state')
    await import('node:fs/promises').then((fs) => fs.mkdir(state, {recursive: true}))
    await writeFile(join(state, 'topic-deletes.json'), '{"version": 1, "topics": {"x": {"local": "yes"}}}')
    await assert.rejects(
      spawnBroker(t as Cleanup, ['--data-dir', dataPath]),
      /is not a topic-deletes file \(topic "x": expected \{"local": boolean, "zookeeper": boolean\}\)/,
    )
  })
})
