/**
 * MessageStore.cutTail (storage/cut.ts): a replica's divergent tail is cut at a record
 * boundary; the cut bytes are kept in `<offset>.meta.cut-<ms>`, later segments and their side
 * indexes go, counts and seeks are right afterwards, and the log appends on from the cut.
 */
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {isMetaError} from '../../src/protocol/errors.js'
import {classifyPartitionFile} from '../../src/storage/layout.js'
import {tmpDir} from '../helpers/index.js'
import {files, openStore, put, putMany, readAll} from './support.js'

describe('MessageStore.cutTail', () => {
  test('cuts across segments at a record boundary and keeps exactly the cut bytes', async (t) => {
    const dir = await tmpDir(t)
    const store = await openStore(t, dir, {maxSegmentBytes: 100})
    const log = store.getOrCreate('orders', 0)
    const offsets: number[] = []
    for (let i = 0; i < 12; i++) offsets.push(await put(log, `message ${i}`.padEnd(30, '.'), BigInt(i + 1)))
    const before = await readAll(log)
    assert.ok(log.info().segmentCount >= 4)
    const at = offsets[5] // inside a segment
    const result = await store.cutTail('orders', 0, at)
    assert.deepEqual(
      {from: result.from, to: result.to, messages: result.messages, bytes: result.bytes},
      {from: at, to: before.length, messages: 7, bytes: before.length - at},
    )
    const cut = store.get('orders', 0)!
    assert.notEqual(cut, log, 'the partition was opened again')
    assert.equal(cut.maxOffset, at)
    assert.equal(cut.info().messageCount, 5)
    assert.ok((await readAll(cut)).equals(before.subarray(0, at)))
    assert.ok(readFileSync(result.file!).equals(before.subarray(at)), 'the cut file holds the cut bytes')
    const pdir = join(dir, 'orders-0')
    const names = files(pdir)
    assert.ok(names.includes(`${String(at).padStart(20, '0')}.meta.cut-${result.file!.split('.cut-')[1]}`))
    assert.deepEqual(classifyPartitionFile(result.file!.split('/').pop()!), {kind: 'cut', offset: at})
    assert.ok(
      names.filter((n) => n.endsWith('.meta')).every((n) => Number(n.slice(0, 20)) < at),
      `no segment starts at or after the cut: ${names.join(' ')}`,
    )
    // Appends go on from the cut; counts and seeks see the new records.
    const next = await putMany(cut, ['after cut'], 100n)
    assert.deepEqual(next, [at])
    assert.equal(cut.info().messageCount, 6)
    assert.equal(await cut.offsetBeforeEnd(1), at)
    await store.close()
    const reopened = await openStore(t, dir, {maxSegmentBytes: 100})
    assert.equal(reopened.get('orders', 0)!.maxOffset, next[0] + 20 + 'after cut'.length)
  })

  test('cuts at a segment start and to the log start; refuses a non-boundary or out-of-range offset', async (t) => {
    const dir = await tmpDir(t)
    const store = await openStore(t, dir, {maxSegmentBytes: 60})
    const log = store.getOrCreate('orders', 1)
    const offsets = await putMany(log, ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40), 'd'.repeat(40)])
    const starts = files(join(dir, 'orders-1'))
      .filter((n) => n.endsWith('.meta'))
      .map((n) => Number(n.slice(0, 20)))
    assert.ok(starts.length >= 2)
    await assert.rejects(
      store.cutTail('orders', 1, offsets[1] + 3),
      (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT') && /not a record boundary/.test((e as Error).message),
    )
    await assert.rejects(
      store.cutTail('orders', 1, log.maxOffset + 1),
      (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT') && /expected a record boundary in \[0, /.test((e as Error).message),
    )
    await assert.rejects(store.cutTail('nope', 0, 0), (e: unknown) => isMetaError(e, 'INVALID_ARGUMENT'))
    const none = await store.cutTail('orders', 1, log.maxOffset)
    assert.equal(none.messages, 0)
    assert.equal(none.file, undefined)
    const second = starts[1]
    const r1 = await store.cutTail('orders', 1, second)
    assert.equal(store.get('orders', 1)!.maxOffset, second)
    assert.ok(!files(join(dir, 'orders-1')).includes(`${String(second).padStart(20, '0')}.meta`))
    const r0 = await store.cutTail('orders', 1, 0)
    assert.equal(r0.messages, r1.from === second ? offsets.filter((o) => o < second).length : -1)
    const empty = store.get('orders', 1)!
    assert.equal(empty.maxOffset, 0)
    assert.equal(empty.minOffset, 0)
    assert.deepEqual(await putMany(empty, ['x']), [0])
  })
})
