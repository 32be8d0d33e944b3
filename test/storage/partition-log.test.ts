/**
 * PartitionLog append and read paths against real files in a temp dir: record bytes equal
 * MetaQ's format, offsets are byte positions that stay contiguous across batches and rolls,
 * and reads honour segment boundaries and the below/end cases.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {checksum} from '../../src/protocol/crc.js'
import {MetaError} from '../../src/protocol/errors.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {tmpDir} from '../helpers/index.js'
import {files, handRecord, openStore, put, putMany, readAll} from './support.js'

describe('PartitionLog', () => {
  test('PartitionLog.append() writes MetaQ records that read() returns byte for byte', async (t) => {
    const dir = await tmpDir(t)
    const store = await openStore(t, dir)
    const log = store.getOrCreate('orders', 0)
    const first = Buffer.from('hello')
    const second = Buffer.from('\u0000\u0000\u0000\u0002hiworld', 'latin1')
    await put(log, first, 0x0123456789abcdefn, 0)
    await put(log, second, -2n, 1)
    const expected = Buffer.concat([handRecord(0x0123456789abcdefn, 0, first), handRecord(-2n, 1, second)])
    assert.deepEqual(await readAll(log), expected)
    assert.deepEqual(readFileSync(join(dir, 'orders-0', '00000000000000000000.meta')), expected)
  })

  test('PartitionLog.append() assigns contiguous offsets within and across batches', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('orders', 3)
    const batch1 = await putMany(log, ['a', 'bb', 'ccc'])
    const batch2 = await putMany(log, ['dddd'])
    assert.deepEqual([...batch1, ...batch2], [0, 21, 43, 66])
    assert.equal(log.maxOffset, 90)
    assert.equal(log.minOffset, 0)
  })

  test('PartitionLog.append() returns the offset synchronously and becomes readable after the turn', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('t', 0)
    const payload = Buffer.from('x')
    const offset = log.append(7n, 0, payload, checksum(payload), () => {})
    assert.equal(offset, 0)
    assert.equal(log.maxOffset, 0, 'not written before the end of the turn')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(log.maxOffset, 21)
  })

  test('PartitionLog.appendRecords() appends preformatted records as one batch', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('t', 0)
    await put(log, 'first')
    const records = Buffer.concat([handRecord(5n, 0, Buffer.from('a')), handRecord(6n, 0, Buffer.from('b'))])
    const offset = await new Promise<number>((resolve, reject) => {
      const at = log.appendRecords(records, 2, (err) => (err ? reject(err) : resolve(at)))
    })
    assert.equal(offset, 25)
    assert.deepEqual((await readAll(log, offset)).subarray(0), records)
    assert.throws(() => log.appendRecords(records.subarray(0, 30), 2, () => {}), {code: 'INVALID_ARGUMENT'})
    assert.throws(() => log.appendRecords(records, 3, () => {}), {code: 'INVALID_ARGUMENT'})
    const corrupt = Buffer.from(records)
    corrupt[20] ^= 1
    assert.throws(() => log.appendRecords(corrupt, 2, () => {}), {code: 'CHECKSUM_MISMATCH'})
  })

  test('PartitionLog rolls at maxSegmentBytes and keeps offsets contiguous', async (t) => {
    const dir = await tmpDir(t)
    const store = await openStore(t, dir, {maxSegmentBytes: 100})
    const log = store.getOrCreate('roll', 0)
    // 30-byte records: a segment takes records until it holds >= 100 bytes (4 records = 120).
    const offsets = await putMany(
      log,
      Array.from({length: 10}, (_, i) => `0123456789${i}`.slice(0, 10)),
    )
    assert.deepEqual(offsets, [0, 30, 60, 90, 120, 150, 180, 210, 240, 270])
    assert.deepEqual(
      files(join(dir, 'roll-0')).filter((f) => f.endsWith('.meta')),
      ['00000000000000000000.meta', '00000000000000000120.meta', '00000000000000000240.meta'],
    )
    const more = await putMany(log, ['abcdefghij'])
    assert.deepEqual(more, [300])
    assert.equal(log.info().segmentCount, 3)
    const decoded = decodeMessageSet(await readAll(log))
    assert.equal(decoded.messages.length, 11)
    assert.deepEqual(
      decoded.messages.map((m) => m.offset),
      [...offsets, 300],
    )
  })

  test('PartitionLog.read() never crosses a segment boundary', async (t) => {
    const store = await openStore(t, await tmpDir(t), {maxSegmentBytes: 100})
    const log = store.getOrCreate('roll', 0)
    await putMany(
      log,
      Array.from({length: 6}, () => 'abcdefghij'),
    )
    const fromStart = await log.read(0, 1000)
    assert.equal(fromStart.kind, 'data')
    assert.equal(fromStart.kind === 'data' && fromStart.data.length, 120)
    const midRecord = await log.read(110, 1000)
    assert.equal(midRecord.kind === 'data' && midRecord.data.length, 10)
    const second = await log.read(120, 1000)
    assert.equal(second.kind === 'data' && second.data.length, 60)
    const short = await log.read(125, 7)
    assert.equal(short.kind === 'data' && short.data.length, 7)
  })

  test('PartitionLog.read() reports below and end', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('t', 0, 1000)
    await put(log, 'abc')
    assert.deepEqual(await log.read(999, 10), {kind: 'below', offset: 1000})
    assert.deepEqual(await log.read(0, 10), {kind: 'below', offset: 1000})
    assert.deepEqual(await log.read(1023, 10), {kind: 'end', end: 1023})
    assert.deepEqual(await log.read(5000, 10), {kind: 'end', end: 1023})
    assert.deepEqual(await log.read(Number.MAX_SAFE_INTEGER, 10), {kind: 'end', end: 1023})
    await assert.rejects(log.read(1000, 0), {code: 'INVALID_ARGUMENT'})
  })

  test('PartitionLog.nearestOffset() answers the segment start, minOffset or maxOffset', async (t) => {
    const store = await openStore(t, await tmpDir(t), {maxSegmentBytes: 100})
    const log = store.getOrCreate('t', 0, 40)
    await putMany(
      log,
      Array.from({length: 6}, () => 'abcdefghij'),
    )
    assert.equal(log.nearestOffset(0), 40)
    assert.equal(log.nearestOffset(40), 40)
    assert.equal(log.nearestOffset(100), 40)
    assert.equal(log.nearestOffset(160), 160)
    assert.equal(log.nearestOffset(170), 160)
    assert.equal(log.nearestOffset(log.maxOffset), 220)
    assert.equal(log.nearestOffset(Number.MAX_SAFE_INTEGER), 220)
  })

  test('PartitionLog.read() serves from disk when the tail cache is disabled', async (t) => {
    const store = await openStore(t, await tmpDir(t), {}, {tailCacheBytes: 0})
    const log = store.getOrCreate('t', 0)
    const offsets = await putMany(log, ['one', 'two', 'three'])
    const decoded = decodeMessageSet(await readAll(log))
    assert.deepEqual(
      decoded.messages.map((m) => [m.offset, m.data.toString()]),
      [
        [offsets[0], 'one'],
        [offsets[1], 'two'],
        [offsets[2], 'three'],
      ],
    )
  })

  test('PartitionLog.read() views from the tail cache stay valid after more appends', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('t', 0)
    await put(log, 'first')
    const before = await log.read(0, 1000)
    assert.equal(before.kind, 'data')
    const copy = Buffer.from(before.kind === 'data' ? before.data : Buffer.alloc(0))
    await putMany(
      log,
      Array.from({length: 2000}, (_, i) => `message ${i}`),
    )
    assert.deepEqual(before.kind === 'data' && before.data, copy)
    assert.equal(decodeMessageSet(await readAll(log)).messages.length, 2001)
  })

  test('PartitionLog.append() after close fails with STORAGE_ERROR', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const log = store.getOrCreate('t', 0)
    await store.close()
    await store.close()
    assert.throws(
      () => log.append(1n, 0, Buffer.from('x'), 0, () => {}),
      (err: unknown) => {
        return err instanceof MetaError && err.code === 'STORAGE_ERROR'
      },
    )
    await assert.rejects(log.read(0, 10), {code: 'STORAGE_ERROR'})
    assert.throws(() => store.getOrCreate('u', 0), {code: 'STORAGE_ERROR'})
  })

  test('MessageStore.getOrCreate() validates names and lists logs in order', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    assert.throws(() => store.getOrCreate('a/b', 0), {code: 'INVALID_ARGUMENT'})
    assert.throws(() => store.getOrCreate('ok', -1), {code: 'INVALID_ARGUMENT'})
    assert.throws(() => store.getOrCreate('ok', 0, -5), {code: 'INVALID_ARGUMENT'})
    store.getOrCreate('b-topic', 10)
    store.getOrCreate('b-topic', 2)
    store.getOrCreate('a', 0)
    assert.equal(store.getOrCreate('a', 0), store.get('a', 0))
    assert.deepEqual(
      store.list().map((log) => `${log.topic}/${log.partition}`),
      ['a/0', 'b-topic/2', 'b-topic/10'],
    )
    assert.deepEqual(store.topics(), ['a', 'b-topic'])
  })

  test('MessageStore.onAppend() fires once per partition per written batch', async (t) => {
    const store = await openStore(t, await tmpDir(t))
    const seen: string[] = []
    store.onAppend((log) => seen.push(`${log.topic}-${log.partition}@${log.maxOffset}`))
    const a = store.getOrCreate('a', 0)
    const b = store.getOrCreate('b', 0)
    await Promise.all([putMany(a, ['1', '2', '3']), put(b, 'x')])
    assert.deepEqual(seen.sort(), ['a-0@63', 'b-0@21'])
  })
})
