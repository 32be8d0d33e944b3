/**
 * Recovery (docs/protocol.md#recovery, docs/invariants.md#recovery): write → close → reopen gives
 * the same state; damage at the tail of the last segment (torn record, flipped byte, garbage, zero
 * fill) is truncated to the last good record; damage elsewhere (segments that are not contiguous)
 * quarantines the partition (damage.test.ts has the rest). The damage is done to real files between
 * close and reopen.
 */
import assert from 'node:assert/strict'
import {appendFileSync, mkdirSync, readFileSync, statSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {MessageStore} from '../../src/storage/index.js'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import {SCAN_CHUNK_BYTES} from '../../src/storage/layout.js'
import {tmpDir} from '../helpers/index.js'
import {files, handRecord, openStore, putMany, readAll, THRESHOLD_DEFAULTS} from './support.js'

const SEGMENT = '00000000000000000000.meta'

/** Write three 25-byte records ("msg-0".."msg-2") to topic t partition 0, close. */
async function writeThree(t: Parameters<typeof tmpDir>[0], dataPath: string): Promise<string> {
  const store = await openStore(t, dataPath)
  await putMany(store.getOrCreate('t', 0), ['msg-0', 'msg-1', 'msg-2'])
  await store.close()
  return join(dataPath, 't-0', SEGMENT)
}

async function reopenMessages(t: Parameters<typeof tmpDir>[0], dataPath: string) {
  const store = await openStore(t, dataPath)
  const log = store.get('t', 0)
  assert.ok(log, 'partition t-0 recovered')
  const decoded = decodeMessageSet(await readAll(log))
  assert.equal(decoded.error, undefined)
  return {log, data: decoded.messages.map((m) => m.data.toString())}
}

describe('recovery', () => {
  test('MessageStore.open() after close gives the same state', async (t) => {
    const dataPath = await tmpDir(t)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 64})
    const log = store.getOrCreate('orders-eu', 2)
    await putMany(
      log,
      Array.from({length: 9}, (_, i) => `message ${i}`),
    )
    await log.flush()
    const before = {...log.info(), lastAppendMs: 0}
    const bytes = await readAll(log)
    await store.close()

    const reopened = await openStore(t, dataPath, {maxSegmentBytes: 64})
    const again = reopened.get('orders-eu', 2)
    assert.ok(again)
    assert.deepEqual({...again.info(), lastAppendMs: 0}, before)
    assert.deepEqual(await readAll(again), bytes)
    assert.deepEqual(reopened.topics(), ['orders-eu'])
    const offset = await new Promise<number>((resolve, reject) => {
      const at = again.append(99n, 0, Buffer.from('after'), 0, (err) => (err ? reject(err) : resolve(at)))
    })
    assert.equal(offset, before.maxOffset)
  })

  test('MessageStore.open() truncates a record torn in the middle', async (t) => {
    const dataPath = await tmpDir(t)
    const segment = await writeThree(t, dataPath)
    truncateSync(segment, 50 + 12)
    const {log, data} = await reopenMessages(t, dataPath)
    assert.equal(log.maxOffset, 50)
    assert.deepEqual(data, ['msg-0', 'msg-1'])
    assert.equal(statSync(segment).size, 50)
  })

  test('MessageStore.open() drops a last record whose checksum fails', async (t) => {
    const dataPath = await tmpDir(t)
    const segment = await writeThree(t, dataPath)
    const bytes = readFileSync(segment)
    bytes[74] ^= 0x01
    writeFileSync(segment, bytes)
    const {log, data} = await reopenMessages(t, dataPath)
    assert.equal(log.maxOffset, 50)
    assert.deepEqual(data, ['msg-0', 'msg-1'])
  })

  test('MessageStore.open() drops garbage appended after the last record', async (t) => {
    const dataPath = await tmpDir(t)
    const segment = await writeThree(t, dataPath)
    appendFileSync(segment, Buffer.from('this is not a record, it is garbage'.repeat(3)))
    const {log, data} = await reopenMessages(t, dataPath)
    assert.equal(log.maxOffset, 75)
    assert.deepEqual(data, ['msg-0', 'msg-1', 'msg-2'])
    assert.equal(statSync(segment).size, 75)
  })

  test('MessageStore.open() drops a zero-filled tail', async (t) => {
    const dataPath = await tmpDir(t)
    const segment = await writeThree(t, dataPath)
    appendFileSync(segment, Buffer.alloc(4096))
    const {log, data} = await reopenMessages(t, dataPath)
    assert.equal(log.maxOffset, 75)
    assert.deepEqual(data, ['msg-0', 'msg-1', 'msg-2'])
    assert.equal(statSync(segment).size, 75)
  })

  test('MessageStore.open() keeps a record with an empty payload', async (t) => {
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 't-0')
    mkdirSync(dir)
    const records = Buffer.concat([handRecord(1n, 0, Buffer.alloc(0)), handRecord(2n, 0, Buffer.from('x'))])
    writeFileSync(join(dir, SEGMENT), records)
    const store = await openStore(t, dataPath)
    assert.equal(store.get('t', 0)?.maxOffset, records.length)
  })

  test('MessageStore.open() quarantines a partition whose segments are not contiguous, naming both files', async (t) => {
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 'gap-0')
    mkdirSync(dir)
    writeFileSync(join(dir, SEGMENT), handRecord(1n, 0, Buffer.from('abc')))
    writeFileSync(join(dir, '00000000000000000030.meta'), handRecord(2n, 0, Buffer.from('def')))
    const store = await openStore(t, dataPath)
    assert.equal(store.get('gap', 0), undefined)
    const [quarantined] = store.quarantined()
    assert.equal(quarantined.code, 'STORAGE_CORRUPT')
    assert.match(quarantined.reason, /gap-0/)
    assert.match(quarantined.reason, /"00000000000000000000\.meta" ends at 23/)
    assert.match(quarantined.reason, /"00000000000000000030\.meta" starts at 30/)
  })

  test('MessageStore.open() takes sealed segments at file size and scans only the last', async (t) => {
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 'multi-0')
    mkdirSync(dir)
    const first = Buffer.concat([handRecord(1n, 0, Buffer.from('one')), handRecord(2n, 0, Buffer.from('two'))])
    const second = handRecord(3n, 0, Buffer.from('three'))
    writeFileSync(join(dir, SEGMENT), first)
    writeFileSync(join(dir, `${String(first.length).padStart(20, '0')}.meta`), Buffer.concat([second, Buffer.from('torn')]))
    const store = await openStore(t, dataPath)
    const log = store.get('multi', 0)
    assert.ok(log)
    assert.equal(log.minOffset, 0)
    assert.equal(log.maxOffset, first.length + second.length)
    assert.equal(log.nearestOffset(first.length + 3), first.length)
    assert.deepEqual(await readAll(log), Buffer.concat([first, second]))
  })

  test('MessageStore.open() scans past a read chunk that ends exactly on a record boundary: every record counted, a torn tail after it cut', async (t) => {
    // 1024-byte records: one ends exactly where the scan's first 1 MiB read ends. A scan that
    // took that chunk's end for the end of the range counted none of the records after it
    // and kept the torn tail as part of the log (a sync master then could not send it).
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 'chunk-0')
    mkdirSync(dir)
    const record = (i: number) => handRecord(BigInt(i + 1), 0, Buffer.from(String(i).padStart(1004, '.')))
    const count = SCAN_CHUNK_BYTES / 1024 + 3
    const whole = Buffer.concat(Array.from({length: count}, (_, i) => record(i)))
    const torn = record(count).subarray(0, 7)
    writeFileSync(join(dir, SEGMENT), Buffer.concat([whole, torn]))
    const store = await openStore(t, dataPath, {maxSegmentBytes: 4 * SCAN_CHUNK_BYTES})
    const log = store.get('chunk', 0)
    assert.ok(log)
    assert.equal(log.maxOffset, whole.length, 'the torn 7 bytes are not part of the log')
    assert.equal(statSync(join(dir, SEGMENT)).size, whole.length)
    assert.equal(log.info().messageCount, count)
    assert.equal(await log.shiftOffset(0, count - 1), whole.length - 1024, 'the index reaches the last record')
    assert.deepEqual(await readAll(log), whole)
  })

  test("MessageStore.open() rebuilds a sealed segment's missing index past a read chunk that ends on a record boundary", async (t) => {
    const dataPath = await tmpDir(t)
    const dir = join(dataPath, 'sealed-0')
    mkdirSync(dir)
    const count = SCAN_CHUNK_BYTES / 1024 + 3
    const first = Buffer.concat(Array.from({length: count}, (_, i) => handRecord(BigInt(i + 1), 0, Buffer.alloc(1004, 0x61 + (i % 26)))))
    writeFileSync(join(dir, SEGMENT), first)
    writeFileSync(join(dir, `${String(first.length).padStart(20, '0')}.meta`), handRecord(9999n, 0, Buffer.from('last')))
    const store = await openStore(t, dataPath, {maxSegmentBytes: 4 * SCAN_CHUNK_BYTES})
    const log = store.get('sealed', 0)
    assert.ok(log)
    assert.equal(log.info().messageCount, count + 1)
    assert.equal(await log.shiftOffset(0, count), first.length, "the sealed segment's records are all counted")
  })

  test('MessageStore.open() ignores other files and directories and fills empty partitions', async (t) => {
    const dataPath = await tmpDir(t)
    mkdirSync(join(dataPath, 'not-a-partition-x'))
    mkdirSync(join(dataPath, 'nodash'))
    writeFileSync(join(dataPath, 'file-0'), 'a file, not a directory')
    const dir = join(dataPath, 'my-topic-7')
    mkdirSync(dir)
    writeFileSync(join(dir, '00000000000000000000.meta.arc'), 'archived')
    writeFileSync(join(dir, '00000000000000000000.meta.zip'), 'zipped')
    writeFileSync(join(dir, 'notes.txt'), 'ignore me')
    const store = await openStore(t, dataPath)
    assert.deepEqual(
      store.list().map((log) => [log.topic, log.partition, log.maxOffset]),
      [['my-topic', 7, 0]],
    )
    assert.ok(files(dir).includes(SEGMENT), 'an empty partition gets a first segment')
  })

  test('MessageStore.open() scans extraDataPaths and quarantines a partition found twice', async (t) => {
    const dataPath = await tmpDir(t)
    const other = await tmpDir(t)
    const store = await openStore(t, other)
    await putMany(store.getOrCreate('moved', 1), ['x'])
    await store.close()
    const both = await MessageStore.open({
      dataPath,
      extraDataPaths: [other],
      topicConfig: () => ({dataPath, ...THRESHOLD_DEFAULTS}),
    })
    t.after(() => both.close())
    assert.equal(both.get('moved', 1)?.maxOffset, 21)
    assert.equal(both.get('moved', 1)?.dir, join(other, 'moved-1'))
    await both.close()

    mkdirSync(join(dataPath, 'moved-1'))
    const twice = await openStore(t, dataPath, {}, {extraDataPaths: [other]})
    assert.equal(twice.get('moved', 1), undefined)
    assert.deepEqual(
      twice.quarantined().map((q) => [q.topic, q.partition, q.code, q.dirs.length]),
      [['moved', 1, 'STORAGE_CORRUPT', 2]],
    )
  })
})
