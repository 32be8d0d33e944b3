/**
 * I/O failures injected through the store's FileOps seam (docs/invariants.md#puts): a full disk
 * fails the whole batch with DISK_FULL and leaves no partial record; a failed group-commit
 * fdatasync fails the appends it was to acknowledge and rolls them back; in every case the log
 * keeps serving reads and accepts later appends, and the process does not crash.
 */
import assert from 'node:assert/strict'
import {statSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {isMetaError} from '../../src/protocol/errors.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir} from '../helpers/index.js'
import {files, openStore, put, putMany, readAll} from './support.js'

/** Settle every promise and return the error codes (undefined for successes). */
async function codes(promises: Array<Promise<unknown>>): Promise<Array<string | undefined>> {
  const results = await Promise.allSettled(promises)
  return results.map((r) => (r.status === 'rejected' && isMetaError(r.reason) ? r.reason.code : undefined))
}

describe('I/O faults', () => {
  test('PartitionLog.append() fails the whole batch with DISK_FULL and leaves no partial record', async (t) => {
    const dataPath = await tmpDir(t)
    const ops = new FaultFileOps()
    const store = await openStore(t, dataPath, {}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['good-0', 'good-1'])
    const segment = join(dataPath, 't-0', '00000000000000000000.meta')
    assert.equal(statSync(segment).size, 52)

    ops.failWrites = 'ENOSPC'
    ops.partialWriteBytes = 30 // the disk took a record and a half before filling up
    const failed = await codes([put(log, 'lost-0'), put(log, 'lost-1'), put(log, 'lost-2')])
    assert.deepEqual(failed, ['DISK_FULL', 'DISK_FULL', 'DISK_FULL'])
    assert.equal(statSync(segment).size, 52, 'truncated back to where the batch started')
    assert.equal(log.maxOffset, 52)

    ops.failWrites = undefined
    const [offset] = await putMany(log, ['after'])
    assert.equal(offset, 52)
    const messages = decodeMessageSet(await readAll(log)).messages.map((m) => m.data.toString())
    assert.deepEqual(messages, ['good-0', 'good-1', 'after'])
  })

  test('PartitionLog.append() error names the file and the code', async (t) => {
    const ops = new FaultFileOps()
    const store = await openStore(t, await tmpDir(t), {}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    ops.failWrites = 'EIO'
    await assert.rejects(put(log, 'x'), (err: Error & {code?: string}) => {
      assert.equal(err.code, 'STORAGE_ERROR')
      assert.match(err.message, /00000000000000000000\.meta/)
      return true
    })
    ops.failWrites = undefined
    assert.equal(await put(log, 'y'), 0)
  })

  test('PartitionLog removes a segment created by a batch that failed', async (t) => {
    const dataPath = await tmpDir(t)
    const ops = new FaultFileOps()
    const store = await openStore(t, dataPath, {maxSegmentBytes: 50}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['0123456789'])
    ops.failWrites = 'ENOSPC'
    ops.writesBeforeFailure = 1
    // Three 30-byte records: [30, 60) goes to the first segment, the record at 60 starts a new
    // one, and the write to that one fails.
    const failed = await codes([put(log, 'abcdefghij'), put(log, 'abcdefghij'), put(log, 'abcdefghij')])
    assert.deepEqual(failed, ['DISK_FULL', 'DISK_FULL', 'DISK_FULL'])
    assert.deepEqual(
      files(join(dataPath, 't-0')).filter((f) => f.endsWith('.meta')),
      ['00000000000000000000.meta'],
    )
    assert.equal(log.info().segmentCount, 1)
    ops.failWrites = undefined
    assert.deepEqual(await putMany(log, ['abcdefghij', 'abcdefghij', 'abcdefghij']), [30, 60, 90])
    assert.equal(log.info().segmentCount, 2)
  })

  test('PartitionLog group commit fails and rolls back the appends a failed fdatasync covered', async (t) => {
    const dataPath = await tmpDir(t)
    const ops = new FaultFileOps()
    const store = await openStore(t, dataPath, {unflushThreshold: 0}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['durable'])
    ops.failSyncs = 'EIO'
    const failed = await codes([put(log, 'a'), put(log, 'b')])
    assert.deepEqual(failed, ['STORAGE_ERROR', 'STORAGE_ERROR'])
    assert.equal(log.maxOffset, 27, 'back to the last synced end')
    assert.equal(statSync(join(dataPath, 't-0', '00000000000000000000.meta')).size, 27)
    ops.failSyncs = undefined
    assert.deepEqual(await putMany(log, ['c']), [27])
    const messages = decodeMessageSet(await readAll(log)).messages.map((m) => m.data.toString())
    assert.deepEqual(messages, ['durable', 'c'])
  })

  test('PartitionLog threshold mode keeps acknowledged appends when an fdatasync fails, and retries', async (t) => {
    const ops = new FaultFileOps()
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 1000}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['a', 'b'])
    ops.failSyncs = 'EIO'
    await assert.rejects(log.flush(), {code: 'STORAGE_ERROR'})
    assert.equal(log.info().unflushedCount, 2)
    ops.failSyncs = undefined
    await log.flush()
    assert.equal(log.info().unflushedCount, 0)
    assert.equal(log.maxOffset, 42)
  })
})
