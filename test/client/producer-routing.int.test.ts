/**
 * The producer routes around a failing partition, against a real broker whose partition 0
 * cannot write (ENOSPC injected through the store's file-operations seam): messages the
 * selector places go to partition 1 until partition 0 recovers; a message pinned to
 * partition 0 fails with DISK_FULL and does not move.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createProducer, type SendResult} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {uniqueName, waitFor} from '../helpers/index.js'

describe('Producer routing around a failing partition', () => {
  it('sends the selector places avoid a full partition, lose nothing, and return to it once it recovers', async (t) => {
    const topic = uniqueName('full')
    const fileOps = new FaultFileOps({paths: new RegExp(`/${topic}-0/`), failWrites: 'ENOSPC'})
    const broker = await startTestBroker(t, {fileOps, numPartitions: 2})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`})
    t.after(() => producer.close())
    const results: SendResult[] = []
    for (let i = 0; i < 200; i++) results.push(await producer.send(topic, `m-${i}`))
    assert.deepEqual(
      results.filter((r) => !r.success).map((r) => r.errorMessage),
      [],
      'every message was stored',
    )
    assert.deepEqual(new Set(results.map((r) => r.partition)), new Set([1]), 'every message landed in partition 1')
    // One refused put, plus at most a probe per elapsed back-off (the first is 1 s): not one in two.
    assert.ok(fileOps.refusedWrites >= 1 && fileOps.refusedWrites <= 5, `${fileOps.refusedWrites} puts reached the full partition`)
    fileOps.failWrites = undefined
    const back = await waitFor(
      async () => {
        const r = await producer.send(topic, 'after recovery')
        assert.ok(r.success, r.errorMessage)
        return r.partition === 0 ? r : undefined
      },
      {timeoutMs: 20_000, intervalMs: 50, what: 'a message in partition 0 after the disk recovered'},
    )
    assert.ok(back.offset >= 0)
    // Recovered: round robin uses both partitions again.
    const next = [await producer.send(topic, 'x'), await producer.send(topic, 'y')]
    assert.deepEqual(next.map((r) => r.partition).sort(), [0, 1])
  })

  it('a message pinned to the full partition fails with DISK_FULL and does not move', async (t) => {
    const topic = uniqueName('full')
    const fileOps = new FaultFileOps({paths: new RegExp(`/${topic}-0/`), failWrites: 'ENOSPC'})
    const broker = await startTestBroker(t, {fileOps, numPartitions: 2})
    const producer = createProducer({broker: `127.0.0.1:${broker.port}`, retries: 1})
    t.after(() => producer.close())
    const pinned = await producer.send(topic, 'pinned', {partition: 0})
    assert.equal(pinned.success, false)
    assert.equal(pinned.error?.code, 'DISK_FULL')
    assert.equal(pinned.partition, 0)
    assert.equal(fileOps.refusedWrites, 2, 'sent and retried to partition 0 only')
    // A hash-keyed message whose key maps to partition 0 does not move either.
    const keyed = createProducer({broker: `127.0.0.1:${broker.port}`, retries: 0, selector: 'hash'})
    t.after(() => keyed.close())
    let key = 0
    while ((await keyed.send(topic, 'probe', {attribute: `k${key}`})).partition !== 0 && key < 100) key += 1
    const again = await keyed.send(topic, 'keyed', {attribute: `k${key}`})
    assert.equal(again.success, false)
    assert.equal(again.error?.code, 'DISK_FULL')
    assert.equal(again.partition, 0)
  })
})
