/**
 * `meta tail -e` over closed partitions (`meta partitions close`), through the built CLI
 * against a real broker: the broker answers every get of a closed partition with "closed", so
 * tail must decide rather than ask forever. A partition named with -p is an error (exit 1,
 * naming topic and partition); over a whole topic the closed ones are said on stderr and the
 * open ones are read to their end (exit 0). Every run has a deadline (kill + fail).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connectAdmin} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {address, produce} from '../cli/support.js'

const DEADLINE_MS = 30_000

async function closePartition(port: number, topic: string, partition: number): Promise<void> {
  const admin = await connectAdmin({broker: `127.0.0.1:${port}`})
  try {
    await admin.closePartitions(topic, partition, partition)
  } finally {
    admin.close()
  }
}

describe('meta tail -e on closed partitions', () => {
  it('-p naming a closed partition: exit 1 naming topic and partition, no hang', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 3})
    const topic = uniqueName('closed')
    await produce(broker, topic, [
      {payload: 'a', partition: 0},
      {payload: 'b', partition: 1},
    ])
    await closePartition(broker.port, topic, 1)
    const r = await runCli(['tail', '-t', topic, '-p', '1', '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1, r.stderr)
    assert.equal(r.stdout, '')
    assert.equal(
      r.stderr,
      `error [PARTITION_CLOSED]: partition 1 of topic "${topic}" is closed on broker ${address(broker)}: it cannot be read to its end\n` +
        `hint: reopen it with: meta partitions open -t ${topic} --start 1 --end 1, or leave it out of -p\n`,
    )
  })

  it('a whole topic: reads the open partitions, says which is closed, exit 0', async (t) => {
    const broker = await startTestBroker(t, {numPartitions: 3})
    const topic = uniqueName('closed')
    await produce(broker, topic, [
      {payload: 'a', partition: 0},
      {payload: 'b', partition: 1},
      {payload: 'c', partition: 2},
    ])
    await closePartition(broker.port, topic, 1)
    const r = await runCli(['tail', '-t', topic, '-e', '-b', address(broker)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(r.stdout.split('\n').filter(Boolean).sort(), ['a', 'c'])
    assert.match(r.stderr, new RegExp(`^% topic ${topic} \\[1\\] is closed: skipping it$`, 'm'))
    assert.match(r.stderr, new RegExp(`^% Reached end of topic ${topic} \\[0\\] at offset \\d+$`, 'm'))
    assert.match(r.stderr, new RegExp(`^% Reached end of topic ${topic} \\[2\\] at offset \\d+$`, 'm'))
  })
})
