/**
 * Admin commands on a topic the broker does not have (a typo): `meta offset reset`, `meta group
 * seek`, `meta partitions close`, `meta offset show` and `meta topic alter|delete` exit 1 with
 * NOT_FOUND and tail's did-you-mean, and leave nothing behind (no committed offset that `group
 * describe` shows from then on, no closed mark). `--allow-missing-topic` is the deliberate case.
 * The built CLI against a zero-config broker in this process, which accepts any topic name.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin, createProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName, type Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const cli = (args: string[]) => runCli(args, {timeoutMs: 20_000})

async function fixture(t: Cleanup) {
  const broker = await startTestBroker(t, {numPartitions: 2})
  const url = `127.0.0.1:${broker.port}`
  const topic = uniqueName('orders')
  const producer = createProducer({broker: url})
  for (let i = 0; i < 4; i++) await producer.send(topic, `m${i}`, {partition: i % 2})
  await producer.close()
  const admin = await connectAdmin({broker: url})
  t.after(() => admin.close())
  // One letter swapped: ordres-… for orders-…
  const typo = topic.replace('orders', 'ordres')
  return {broker, url, topic, typo, admin, group: uniqueName('billing')}
}

function assertNotFound(result: {code: number | null; stderr: string}, typo: string, topic: string, url: string): void {
  assert.equal(result.code, 1, result.stderr)
  assert.equal(
    result.stderr,
    `error [NOT_FOUND]: topic "${typo}" does not exist on broker ${url}\nhint: did you mean "${topic}"? (--allow-missing-topic goes ahead anyway)\n`,
  )
}

describe('admin commands on a topic the broker does not have', () => {
  it('offset reset and group seek refuse it (dry run or --execute) and commit nothing; --allow-missing-topic goes ahead', async (t) => {
    const f = await fixture(t)
    for (const args of [
      ['offset', 'reset', '--group', f.group, '--topic', f.typo, '--to-earliest', '--execute'],
      ['offset', 'reset', '--group', f.group, '--topic', `${f.typo}:1`, '--to-latest'],
      ['group', 'seek', f.group, '--to', 'start', '-t', f.typo],
      ['group', 'seek', f.group, '--to', 'end', '-t', f.typo, '--execute'],
    ]) {
      assertNotFound(await cli([...args, '-b', f.url]), f.typo, f.topic, f.url)
    }
    assert.deepEqual(await f.admin.fetchOffsets(f.group), [], 'nothing committed')
    const describe = await cli(['group', 'describe', f.group, '-b', f.url])
    assert.equal(describe.code, 1, 'the group is still unknown')
    assert.match(describe.stderr, /NOT_FOUND/)

    // A --from-file line naming it is refused the same way.
    const fromFile = await runCli(['offset', 'reset', '--group', f.group, '--from-file', '-', '--execute', '-b', f.url], {
      input: `${f.topic},0,0\n${f.typo},0,0\n`,
    })
    assertNotFound(fromFile, f.typo, f.topic, f.url)
    assert.deepEqual(await f.admin.fetchOffsets(f.group), [])

    const deliberate = await cli(['offset', 'reset', '--group', f.group, '--topic', f.typo, '--to-earliest', '--execute', '--allow-missing-topic', '-b', f.url])
    assert.equal(deliberate.code, 0, deliberate.stderr)
    assert.deepEqual(
      (await f.admin.fetchOffsets(f.group)).map((o) => [o.topic, o.partition, o.offset]),
      [
        [f.typo, 0, 0],
        [f.typo, 1, 0],
      ],
    )
    // Offsets now exist there: offset show lists them rather than calling the topic a typo.
    const show = await cli(['offset', 'show', '-g', f.group, '-t', f.typo, '-b', f.url, '--json'])
    assert.equal(show.code, 0, show.stderr)
    assert.equal((JSON.parse(show.stdout) as {partitions: unknown[]}).partitions.length, 2)
  })

  it('offset show, partitions close and topic alter|delete name the close topics; close keeps no mark', async (t) => {
    const f = await fixture(t)
    const show = await cli(['offset', 'show', '-g', f.group, '-t', f.typo, '-b', f.url])
    assertNotFound(show, f.typo, f.topic, f.url)

    const close = await cli(['partitions', 'close', '-t', f.typo, '-b', f.url])
    assertNotFound(close, f.typo, f.topic, f.url)
    assert.deepEqual(f.broker.topics.closedPartitions(f.typo), [], 'no closed mark kept')
    assert.deepEqual(f.broker.topics.topicsWithClosedPartitions(), [])
    const deliberate = await cli(['partitions', 'close', '-t', f.typo, '--allow-missing-topic', '-b', f.url])
    assert.equal(deliberate.code, 0, deliberate.stderr)
    assert.deepEqual(f.broker.topics.closedPartitions(f.typo), [0, 1])

    for (const args of [
      ['topic', 'alter', f.typo, '--partitions', '4'],
      ['topic', 'delete', f.typo, '--execute'],
    ]) {
      const result = await cli([...args, '-b', f.url])
      assert.equal(result.code, 1, result.stderr)
      assert.match(result.stderr, new RegExp(`^error \\[NOT_FOUND\\]: no such topic "${f.typo}".*\\nhint: did you mean "${f.topic}"\\?\\n$`))
    }
  })
})
