/**
 * The library's producer with a local store (createSpoolingProducer) against a real broker
 * whose partition 0 cannot write (ENOSPC through the store's file-operations seam): messages
 * pinned or hash-keyed to it wait in the spool, in order, instead of moving to partition 1,
 * and are stored there once it recovers.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createSpoolingProducer} from '../../src/client/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir, uniqueName, waitFor, withDeadline} from '../helpers/index.js'
import {byPartition, readAll} from '../cli/support.js'

describe('createSpoolingProducer and a failing partition', () => {
  for (const how of ['pinned', 'hash-keyed'] as const) {
    it(`${how} messages for a full partition wait in the spool, in order, and never move to another partition`, async (t) => {
      const topic = uniqueName('full')
      const fileOps = new FaultFileOps({paths: new RegExp(`/${topic}-0/`), failWrites: 'ENOSPC'})
      const broker = await startTestBroker(t, {fileOps, numPartitions: 2})
      const spoolDir = await tmpDir(t)
      const producer = createSpoolingProducer({broker: `127.0.0.1:${broker.port}`, selector: 'hash', retries: 0, spool: {spoolDir}})
      producer.on('error', () => {})
      t.after(() => producer.close())
      const outages: string[] = []
      producer.on('outage', (_topic: string, error: {code: string}) => outages.push(error.code))
      // Keys 'k-0'..: the hash selector spreads them over both partitions; pinned: every other one to 0.
      const options = (i: number) => (how === 'pinned' ? {partition: i % 2} : {attribute: `k-${i % 8}`})
      for (let i = 0; i < 200; i++) producer.send(topic, `m-${i}`, options(i))
      await waitFor(() => outages.length > 0 && producer.stats.pending > 0, {timeoutMs: 20_000, what: 'the outage'})
      assert.deepEqual([...new Set(outages)], ['DISK_FULL'])
      const whileFull = await readAll(broker, topic)
      fileOps.failWrites = undefined
      await withDeadline(producer.flush(), 30_000, 'the spool to drain')
      assert.ok(producer.stats.spooled > 0, 'messages went through the spool')
      await producer.close() // before the spool's temp dir goes

      const messages = await readAll(broker, topic)
      const firstCopies = new Map<string, number>()
      for (const m of messages) if (!firstCopies.has(m.data.toString())) firstCopies.set(m.data.toString(), m.partition)
      assert.equal(firstCopies.size, 200, 'every message stored')
      // Where each message belongs: its pinned partition, or the one its key hashed to in the messages stored while partition 0 was full... or after.
      const partitionOfKey = new Map<string, number>()
      for (const m of messages) {
        const i = Number(m.data.toString().slice(2))
        const key = how === 'pinned' ? `p${i % 2}` : `k-${i % 8}`
        if (how === 'pinned') assert.equal(m.partition, i % 2, `m-${i} stays on its partition`)
        const known = partitionOfKey.get(key)
        assert.ok(known === undefined || known === m.partition, `${key} never moves (m-${i} in ${m.partition}, before ${known})`)
        partitionOfKey.set(key, m.partition)
      }
      assert.ok(
        whileFull.every((m) => m.partition === 1),
        'nothing reached the full partition',
      )
      assert.ok([...partitionOfKey.values()].includes(0), 'some messages belong to partition 0')
      for (const [p, list] of byPartition(messages)) {
        const seen = new Set<number>()
        const order = list.map((m) => Number(m.data.toString().slice(2))).filter((i) => !seen.has(i) && seen.add(i))
        assert.deepEqual(
          order,
          [...order].sort((a, b) => a - b),
          `partition ${p} keeps send order`,
        )
      }
    })
  }
})
