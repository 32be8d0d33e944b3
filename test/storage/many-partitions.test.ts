/**
 * 10,000 partitions under a small descriptor budget: create, append one message each, close,
 * reopen (bounded-concurrency recovery) and read every message back, counting this process's
 * open descriptors (/proc/self/fd) at each step and every millisecond against maxOpenFiles.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {tmpDir} from '../helpers/index.js'
import {openFdCount, openStore, put} from './support.js'

const PARTITIONS = 10_000
const MAX_OPEN_FILES = 64
/** Descriptors the store may hold beyond its budget: one synchronous write's file. */
const SLACK = 4

describe('many partitions', () => {
  test('MessageStore keeps 10,000 partitions within maxOpenFiles descriptors', async (t) => {
    const dataPath = await tmpDir(t)
    const baseline = openFdCount()
    let peak = 0
    const sample = () => {
      peak = Math.max(peak, openFdCount() - baseline)
    }
    const options = {maxOpenFiles: MAX_OPEN_FILES, tailCacheBytes: 1024 * 1024}
    // Also sample between the steps, while writes, fdatasyncs and recovery are in flight.
    const sampler = setInterval(sample, 1)
    t.after(() => clearInterval(sampler))

    const store = await openStore(t, dataPath, {}, options)
    const logs = Array.from({length: PARTITIONS}, (_, p) => store.getOrCreate('many', p))
    sample()
    await Promise.all(logs.map((log, p) => put(log, `message for partition ${p}`, BigInt(p + 1))))
    sample()
    await store.close()
    assert.ok(openFdCount() - baseline <= SLACK, 'close releases every descriptor')

    const reopened = await openStore(t, dataPath, {}, options)
    sample()
    assert.equal(reopened.list().length, PARTITIONS)
    const reads = await Promise.all(
      reopened.list().map(async (log) => {
        const result = await log.read(0, 1024)
        sample()
        assert.equal(result.kind, 'data')
        return result.kind === 'data' ? decodeMessageSet(result.data).messages[0] : undefined
      }),
    )
    for (const [p, message] of reads.entries()) {
      assert.equal(message?.data.toString(), `message for partition ${p}`)
      assert.equal(message?.id, BigInt(p + 1))
    }
    sample()
    assert.ok(peak <= MAX_OPEN_FILES + SLACK, `peak of ${peak} open descriptors over a budget of ${MAX_OPEN_FILES}`)
  })
})
