/**
 * The two flush policies (docs/protocol.md#flush-policy, docs/invariants.md#puts), observed through
 * info().unflushedCount and a FileOps wrapper that counts and holds fdatasync calls: threshold mode
 * acknowledges after the write and syncs by count or interval; group commit acknowledges only after
 * a covering fdatasync, and one fdatasync covers every append that waited for it. In both modes
 * written bytes are readable before they are synced.
 */
import assert from 'node:assert/strict'
import {describe, test} from 'node:test'
import {checksum} from '../../src/protocol/crc.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {MessageStore} from '../../src/storage/index.js'
import {FaultFileOps} from '../helpers/fault-file-ops.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {openStore, put, putMany, readAll} from './support.js'

describe('flush policy', () => {
  test('PartitionLog threshold mode fdatasyncs once more than unflushThreshold messages are unflushed', async (t) => {
    const ops = new FaultFileOps()
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 5, unflushIntervalMs: 3_600_000}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['1', '2', '3', '4', '5'])
    assert.equal(log.info().unflushedCount, 5, 'five is not more than the threshold')
    assert.equal(ops.syncCalls, 0)
    await put(log, '6')
    await waitFor(() => log.info().unflushedCount === 0, {what: 'the threshold fdatasync'})
    assert.equal(ops.syncCalls, 1)
  })

  test('PartitionLog threshold mode fdatasyncs after a batch once unflushIntervalMs has passed', async (t) => {
    const ops = new FaultFileOps()
    // Interval 0 ms has no periodic timer, so only the check after each batch can sync.
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 1000, unflushIntervalMs: 0}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await waitFor(
      async () => {
        await put(log, 'more')
        return ops.syncCalls > 0
      },
      {what: 'a batch written more than 0 ms after the last fdatasync'},
    )
    await waitFor(() => log.info().unflushedCount === 0, {what: 'the interval fdatasync'})
  })

  test('MessageStore periodic timer fdatasyncs idle threshold-mode logs', async (t) => {
    const ops = new FaultFileOps()
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 1000, unflushIntervalMs: 20}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['1', '2'])
    await waitFor(() => log.info().unflushedCount === 0, {what: 'the periodic flush'})
    assert.ok(ops.syncCalls >= 1)
  })

  test('PartitionLog threshold mode acknowledges after the write, before any fdatasync', async (t) => {
    const ops = new FaultFileOps()
    ops.holdSyncs = true
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 1}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    await putMany(log, ['a', 'b', 'c'])
    assert.equal(log.info().unflushedCount, 3)
    await waitFor(() => ops.heldSyncs.length === 1, {what: 'the held fdatasync'})
    assert.equal((await readAll(log)).length, 63)
    ops.holdSyncs = false
    ops.heldSyncs[0].open()
    await waitFor(() => log.info().unflushedCount === 0, {what: 'the fdatasync to finish'})
  })

  test('PartitionLog group commit acknowledges only after an fdatasync that covers the append', async (t) => {
    const ops = new FaultFileOps()
    ops.holdSyncs = true
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 0}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    let acked = false
    const first = put(log, 'first').then(() => (acked = true))
    await waitFor(() => ops.heldSyncs.length === 1, {what: 'the first fdatasync'})
    assert.equal(acked, false)
    assert.equal(log.maxOffset, 25, 'written before it is synced')
    const visible = await log.read(0, 100)
    assert.equal(visible.kind === 'data' && visible.data.length, 25, 'written means visible')
    ops.heldSyncs[0].open()
    await first
    assert.equal(acked, true)
    assert.equal(ops.syncCalls, 1)
  })

  test('PartitionLog group commit covers every append that waited with one fdatasync', async (t) => {
    const ops = new FaultFileOps()
    ops.holdSyncs = true
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: -1}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    const acked: string[] = []
    const track = (name: string) => put(log, name).then(() => acked.push(name))
    const first = track('first')
    await waitFor(() => ops.heldSyncs.length === 1, {what: 'the first fdatasync'})
    // Three more batches in later turns while the first fdatasync is in flight.
    const waiting = [track('a')]
    await new Promise((resolve) => setImmediate(resolve))
    waiting.push(track('b'), track('c'))
    await waitFor(() => log.maxOffset === 4 * 21 + 4, {what: 'the later batches to be written'})
    assert.deepEqual(acked, [])
    ops.heldSyncs[0].open()
    await first
    assert.deepEqual(acked, ['first'])
    await waitFor(() => ops.heldSyncs.length === 2, {what: 'the second fdatasync'})
    assert.deepEqual(acked, ['first'], 'the waiting appends need the second fdatasync')
    ops.holdSyncs = false
    ops.heldSyncs[1].open()
    await Promise.all(waiting)
    assert.deepEqual(acked.sort(), ['a', 'b', 'c', 'first'])
    assert.equal(ops.syncCalls, 2)
    assert.equal(log.info().unflushedCount, 0)
  })

  test('MessageStore.reloadConfig() switches a topic between flush policies', async (t) => {
    const dataPath = await tmpDir(t)
    const ops = new FaultFileOps()
    let config = {dataPath, unflushThreshold: 1000, unflushIntervalMs: 3_600_000, maxSegmentBytes: 1 << 20}
    const store = await MessageStore.open({dataPath, topicConfig: () => config, fileOps: ops})
    t.after(() => store.close())
    const log = store.getOrCreate('t', 0)
    await put(log, 'threshold')
    assert.equal(ops.syncCalls, 0, 'acknowledged without an fdatasync')
    config = {...config, unflushThreshold: 0}
    store.reloadConfig()
    await put(log, 'group')
    assert.equal(ops.syncCalls, 1, 'acknowledged after an fdatasync')
    assert.equal(log.info().unflushedCount, 0)
  })

  test('PartitionLog.flush() writes pending appends and fdatasyncs them', async (t) => {
    const ops = new FaultFileOps()
    const store = await openStore(t, await tmpDir(t), {unflushThreshold: 1000}, {fileOps: ops})
    const log = store.getOrCreate('t', 0)
    const payload = Buffer.from('x')
    log.append(1n, 0, payload, checksum(payload), () => {})
    await log.flush()
    assert.equal(log.maxOffset, 21)
    assert.equal(log.info().unflushedCount, 0)
    assert.equal(ops.syncCalls, 1)
    await store.flushAll()
    assert.equal(ops.syncCalls, 1, 'nothing left to sync')
  })
})

describe('flush policy reloaded while appends are unsynced', () => {
  /** A store whose topic config the test changes, with fdatasyncs it can fail or hold. */
  async function reloadable(t: Cleanup, unflushThreshold: number) {
    const dataPath = await tmpDir(t)
    const ops = new FaultFileOps()
    const config = {dataPath, unflushThreshold, unflushIntervalMs: 3_600_000, maxSegmentBytes: 1 << 20}
    const store = await MessageStore.open({dataPath, topicConfig: () => config, fileOps: ops})
    t.after(() => store.close())
    const reload = (threshold: number) => {
      config.unflushThreshold = threshold
      store.reloadConfig()
    }
    return {ops, log: store.getOrCreate('t', 0), reload}
  }

  test('a failed group-commit fdatasync never rolls back appends threshold mode acknowledged before the reload', async (t) => {
    const {ops, log, reload} = await reloadable(t, 1000)
    await putMany(log, ['acked-0', 'acked-1'])
    assert.equal(log.info().unflushedCount, 2, 'acknowledged after the write, not yet synced')
    reload(0)
    ops.failSyncs = 'EIO'
    await assert.rejects(put(log, 'lost'), {code: 'STORAGE_ERROR'})
    assert.equal(log.maxOffset, 54, 'the acknowledged appends stay')
    assert.equal(log.info().unflushedCount, 2, 'and are still to be synced')
    ops.failSyncs = undefined
    assert.equal(await put(log, 'next'), 54, 'the next append takes the offset after them')
    assert.deepEqual(
      decodeMessageSet(await readAll(log)).messages.map((m) => m.data.toString()),
      ['acked-0', 'acked-1', 'next'],
    )
    assert.equal(log.info().unflushedCount, 0)
  })

  test('appends waiting for a group-commit fdatasync are acknowledged once threshold mode is reloaded, also when that fdatasync fails', async (t) => {
    const {ops, log, reload} = await reloadable(t, 0)
    ops.holdSyncs = true
    const answers = new Map<string, number | string>()
    const tracked = (payload: string) =>
      put(log, payload).then(
        (offset) => answers.set(payload, offset),
        (error: {code: string}) => answers.set(payload, error.code),
      )
    void tracked('covered')
    await waitFor(() => ops.heldSyncs.length === 1, {what: 'the fdatasync covering the first append'})
    void tracked('waiting')
    await waitFor(() => log.maxOffset === 54, {what: 'the second append to be written'})
    reload(1000)
    // Threshold mode acknowledges what is written: the append that waited for the next fdatasync is.
    await waitFor(() => answers.has('waiting'), {what: 'the waiting append to be answered'})
    assert.equal(answers.get('waiting'), 27)
    assert.equal(answers.has('covered'), false, 'the covered append waits for its fdatasync')
    ops.holdSyncs = false
    ops.failSyncs = 'EIO'
    ops.heldSyncs[0].open()
    // Its bytes stay in the log, so its callback must not be lost, nor say it failed.
    await waitFor(() => answers.has('covered'), {what: 'the covered append to be answered after its fdatasync failed'})
    assert.equal(answers.get('covered'), 0)
    assert.equal(log.maxOffset, 54)
    ops.failSyncs = undefined
    await waitFor(
      () =>
        log.flush().then(
          () => true,
          () => false,
        ),
      {what: 'a flush once fdatasync works'},
    )
    assert.deepEqual(
      decodeMessageSet(await readAll(log)).messages.map((m) => m.data.toString()),
      ['covered', 'waiting'],
    )
  })
})
