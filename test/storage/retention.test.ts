/**
 * Retention primitives: removing a prefix of sealed segments (delete or MetaQ's archive
 * rename) takes their side index along, moves minOffset, keeps counts exact, and leaves a
 * directory that reopens to the same state.
 */
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {tmpDir} from '../helpers/index.js'
import {files, openStore, putMany} from './support.js'

describe('retention', () => {
  test('PartitionLog.removeSegmentsBefore() removes sealed segments with their side index', async (t) => {
    const dataPath = await tmpDir(t)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 100})
    const log = store.getOrCreate('r', 0)
    // 30-byte records, 4 per segment: segments start at 0, 120, 240; the last is active.
    await putMany(log, Array.from({length: 10}, () => 'abcdefghij'))
    const infos = await log.segmentInfos()
    assert.deepEqual(
      infos.map((i) => [i.start, i.sizeBytes, i.sealed]),
      [
        [0, 120, true],
        [120, 120, true],
        [240, 60, false],
      ],
    )
    assert.ok(infos.every((i) => i.lastModifiedMs > 0))

    assert.equal(await log.removeSegmentsBefore(130), 1, 'only segments that end at or before the offset')
    assert.equal(log.minOffset, 120)
    assert.deepEqual(await log.read(0, 100), {kind: 'below', offset: 120})
    assert.equal(log.info().messageCount, 6)
    assert.equal(await log.offsetBeforeEnd(100), 120)
    assert.equal(await log.countBetween(0, log.maxOffset), 6)

    assert.equal(await log.removeSegmentsBefore(Number.MAX_SAFE_INTEGER, 'archive'), 1, 'the active segment stays')
    const dir = join(dataPath, 'r-0')
    assert.deepEqual(files(dir), [
      '00000000000000000120.meta.arc',
      '00000000000000000240.idx',
      '00000000000000000240.meta',
    ])
    await store.close()

    const reopened = await openStore(t, dataPath, {maxSegmentBytes: 100})
    const again = reopened.get('r', 0)
    assert.equal(again?.minOffset, 240)
    assert.equal(again?.maxOffset, 300)
    assert.equal(again?.info().messageCount, 2)
  })
})
