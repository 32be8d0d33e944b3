/**
 * `meta bench produce --verify`'s read-back (src/cli/bench/verify.ts) against a real broker:
 * it reads the records where they lie in the fetched bodies, and must still find every
 * acknowledged message, and name a missing, a corrupt and a duplicated one.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createProducer} from '../../src/client/producer.js'
import {VerifiedPayloads} from '../../src/cli/bench/verify.js'
import type {BenchRunOptions} from '../../src/cli/bench/types.js'
import {startTestBroker} from '../helpers/broker.js'
import {uniqueName} from '../helpers/index.js'
import {address} from './support.js'

const BYTES = 100

function runOptions(broker: string, topic: string): BenchRunOptions {
  return {broker, topic, messageBytes: BYTES, maxInFlight: 100, connections: 1, progressIntervalMs: 0, progress: () => {}}
}

describe('bench --verify read-back', () => {
  it('counts every acknowledged message once and skips other runs; names a missing, a corrupt and a duplicated one', async (t) => {
    const broker = await startTestBroker(t)
    const producer = createProducer({broker: address(broker)})
    t.after(() => producer.close())
    const topic = uniqueName('verify')
    const run = new VerifiedPayloads(BYTES)
    const sent: Buffer[] = []
    for (let i = 0; i < 500; i++) {
      const payload = run.payload()
      sent.push(payload)
      const result = await producer.send(topic, payload, {attribute: i % 7 === 0 ? 'k' : undefined})
      assert.ok(result.success, result.errorMessage)
      run.acknowledged(payload)
    }
    // Another run's messages (another tag, another size) in the same topic are not ours.
    const other = new VerifiedPayloads(BYTES)
    assert.ok((await producer.send(topic, other.payload())).success)
    assert.ok((await producer.send(topic, Buffer.alloc(BYTES + 1, 'x'))).success)

    const clean = await run.readBack(runOptions(address(broker), topic))
    assert.equal(clean.messages, 500)
    assert.equal(clean.acknowledged, 500)

    // One more acknowledged message that is never stored; a duplicate; one with a flipped filler byte.
    const lost = run.payload()
    run.acknowledged(lost)
    assert.ok((await producer.send(topic, sent[10]!)).success)
    const corrupt = Buffer.from(sent[20]!)
    corrupt[BYTES - 1] = 0x79
    assert.ok((await producer.send(topic, corrupt)).success)
    await assert.rejects(run.readBack(runOptions(address(broker), topic)), (error: Error) => {
      assert.match(error.message, /: 1 acknowledged messages missing, 1 corrupt, 1 duplicated; first: message 10 was read twice \(offset \d+ of partition 0\)$/)
      return true
    })
  })
})
