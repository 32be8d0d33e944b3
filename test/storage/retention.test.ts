/**
 * Retention primitives: removing a prefix of sealed segments (delete, MetaQ's archive rename,
 * or a real zip) takes their side index along, moves minOffset, keeps counts exact, and leaves
 * a directory that reopens to the same state; the age and size rules pick the right prefix;
 * a zipped segment unzips (with the `unzip` program) to exactly the segment's bytes.
 */
import assert from 'node:assert/strict'
import {readFile, utimes} from 'node:fs/promises'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {selectExpired, type SegmentInfo} from '../../src/storage/retention.js'
import {tmpDir} from '../helpers/index.js'
import {unzipContents, unzipList, unzipTest} from '../helpers/unzip.js'
import {files, openStore, putMany} from './support.js'

describe('retention', () => {
  test('PartitionLog.removeSegmentsBefore() removes sealed segments with their side index', async (t) => {
    const dataPath = await tmpDir(t)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 100})
    const log = store.getOrCreate('r', 0)
    // 30-byte records, 4 per segment: segments start at 0, 120, 240; the last is active.
    await putMany(
      log,
      Array.from({length: 10}, () => 'abcdefghij'),
    )
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
    assert.deepEqual(files(dir), ['00000000000000000120.meta.arc', '00000000000000000240.idx', '00000000000000000240.meta'])
    await store.close()

    const reopened = await openStore(t, dataPath, {maxSegmentBytes: 100})
    const again = reopened.get('r', 0)
    assert.equal(again?.minOffset, 240)
    assert.equal(again?.maxOffset, 300)
    assert.equal(again?.info().messageCount, 2)
  })

  test('selectExpired() takes the expired prefix, then the oldest beyond the size bound, never the active segment', () => {
    const now = 1_000_000
    const seg = (start: number, ageMs: number, sealed = true): SegmentInfo => ({start, sizeBytes: 100, sealed, lastModifiedMs: now - ageMs, path: ''})
    const infos = [seg(0, 5000), seg(100, 4000), seg(200, 500), seg(300, 6000), seg(400, 9000, false)]
    assert.deepEqual(selectExpired(infos, {maxAgeMs: 1000, nowMs: now}), ['age', 'age'], 'a young segment stops the age rule')
    assert.deepEqual(selectExpired(infos, {maxBytes: 250, nowMs: now}), ['size', 'size', 'size'], '500 bytes down to 200')
    assert.deepEqual(
      selectExpired(infos, {maxAgeMs: 1000, maxBytes: 250, nowMs: now}),
      ['age', 'age', 'size', 'age'],
      'the young one goes for size, which lets the age rule go on',
    )
    assert.deepEqual(selectExpired(infos, {maxAgeMs: 1, maxBytes: 1, nowMs: now}), ['age', 'age', 'age', 'age'], 'the active one stays')
    assert.deepEqual(selectExpired(infos, {maxBytes: 0, nowMs: now}), [], '0 = no size bound')
  })

  test('PartitionLog.applyRetention() zips old segments into <name>.meta.zip that unzip opens to the original bytes', async (t) => {
    const dataPath = await tmpDir(t)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 100})
    const log = store.getOrCreate('z', 0)
    await putMany(
      log,
      Array.from({length: 10}, (_, i) => `message-${i}`.padEnd(10, '.')),
    )
    const dir = join(dataPath, 'z-0')
    const original = await readFile(join(dir, '00000000000000000000.meta'))
    const hourAgo = new Date(Date.now() - 3_600_000)
    await utimes(join(dir, '00000000000000000000.meta'), hourAgo, hourAgo)

    const outcome = await log.applyRetention({maxAgeMs: 60_000}, 'archive-zip')
    assert.deepEqual(
      outcome.removed.map((r) => [r.start, r.reason]),
      [[0, 'age']],
      'only the segment older than the age',
    )
    assert.equal(outcome.minOffset, 120)
    assert.deepEqual(files(dir), [
      '00000000000000000000.meta.zip',
      '00000000000000000120.idx',
      '00000000000000000120.meta',
      '00000000000000000240.idx',
      '00000000000000000240.meta',
    ])
    const zip = join(dir, '00000000000000000000.meta.zip')
    const listing = unzipList(zip)
    assert.match(listing, /120\s+\S+\s+\S+\s+00000000000000000000\.meta\n/)
    const unzipped = unzipContents(zip)
    assert.deepEqual(unzipped, original, 'the archive holds exactly the segment bytes')
    unzipTest(zip)

    const bySize = await log.applyRetention({maxBytes: 100}, 'delete')
    assert.deepEqual(
      bySize.removed.map((r) => [r.start, r.reason]),
      [[120, 'size']],
      '180 bytes held, bound 100: the oldest sealed one goes',
    )
    assert.equal(log.minOffset, 240)
  })
})
