/**
 * Damage that stays local (docs/invariants.md#recovery). Each test writes real segments
 * with the store, closes it, damages the files the way disks and people do (a flipped
 * length word, a flipped payload byte, a truncated or deleted sealed segment, stray
 * `.meta` names), reopens, and checks what readers get: every record that is not damaged, at
 * its original offset, a `damaged` answer pointing past what is, and quarantine for a
 * partition whose segments do not fit together — the other partitions keep working.
 */
import assert from 'node:assert/strict'
import {existsSync, mkdirSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, test} from 'node:test'
import {decodeMessageSet} from '../../src/protocol/message-set.js'
import type {MessageStore, PartitionLog} from '../../src/storage/index.js'
import {tmpDir, waitFor, type Cleanup} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {files, handRecord, openStore, putMany} from './support.js'

const SEGMENT_0 = '00000000000000000000.meta'

function name20(offset: number, suffix: string): string {
  return `${String(offset).padStart(20, '0')}${suffix}`
}

/** `count` messages "message-00".. (30-byte records), in segments of about `segmentBytes`. */
async function writeLog(t: Cleanup, dataPath: string, count: number, segmentBytes: number, partition = 0): Promise<number[]> {
  const store = await openStore(t, dataPath, {maxSegmentBytes: segmentBytes})
  const log = store.getOrCreate('t', partition)
  const offsets = await putMany(
    log,
    Array.from({length: count}, (_, i) => `message-${String(i).padStart(2, '0')}`),
  )
  await store.close()
  return offsets
}

/** The segment file holding `offset` (the one with the largest start <= offset). */
function segmentOf(dir: string, offset: number): {path: string; start: number} {
  const starts = readdirSync(dir)
    .filter((n) => /^\d{20}\.meta$/.test(n))
    .map((n) => Number(n.slice(0, 20)))
    .sort((a, b) => a - b)
  const start = starts.filter((s) => s <= offset).pop() as number
  return {path: join(dir, name20(start, '.meta')), start}
}

/** Overwrite 4 bytes at log `offset` + `at` with `value`. */
function writeWord(dir: string, offset: number, at: number, value: number): void {
  const {path, start} = segmentOf(dir, offset)
  const bytes = readFileSync(path)
  bytes.writeUInt32BE(value >>> 0, offset - start + at)
  writeFileSync(path, bytes)
}

/** Read the whole log as a consumer would: follow `damaged` answers, decode whole records. */
async function consumeAll(log: PartitionLog): Promise<Array<{offset: number; text: string}>> {
  const out: Array<{offset: number; text: string}> = []
  let offset = log.minOffset
  while (offset < log.maxOffset) {
    const result = await log.read(offset, 4096)
    if (result.kind === 'damaged' || result.kind === 'below') {
      assert.ok(result.offset > offset, `a ${result.kind} answer moves forward (${offset} → ${result.offset})`)
      offset = result.offset
      continue
    }
    assert.equal(result.kind, 'data', `data at ${offset}`)
    if (result.kind !== 'data') break
    const decoded = decodeMessageSet(result.data, {baseOffset: offset})
    assert.equal(decoded.error, undefined, `no bad record is ever served (at ${offset})`)
    assert.ok(decoded.bytesConsumed > 0, `whole records at ${offset}`)
    for (const m of decoded.messages) out.push({offset: m.offset, text: m.data.toString()})
    offset += decoded.bytesConsumed
  }
  return out
}

function expected(offsets: number[], skip: number[]): Array<{offset: number; text: string}> {
  return offsets.flatMap((offset, i) => (skip.includes(i) ? [] : [{offset, text: `message-${String(i).padStart(2, '0')}`}]))
}

function partitionOf(store: MessageStore, partition = 0): PartitionLog {
  const log = store.get('t', partition)
  assert.ok(log, `partition t-${partition} is open`)
  return log
}

describe('damage in a sealed segment (item 2)', () => {
  test('PartitionLog.read() answers `damaged` past a record whose length is 0x7fffffff, logged once', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 20, 200)
    const dir = join(dataPath, 't-0')
    writeWord(dir, offsets[2], 0, 0x7fffffff)
    const captured = captureLogger()
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200}, {logger: captured.logger, scrub: false})
    const log = partitionOf(store)

    assert.deepEqual(await log.read(offsets[2], 4096), {kind: 'damaged', offset: offsets[3]})
    const before = await log.read(offsets[0], 4096)
    assert.equal(before.kind, 'data')
    assert.equal(before.kind === 'data' && before.data.length, offsets[2] - offsets[0], 'a read stops where the damage starts')
    assert.deepEqual(await consumeAll(log), expected(offsets, [2]))
    assert.equal(await log.checkOffset(offsets[2], 1024 * 1024), offsets[3], '`offset` answers the next valid record')

    const warnings = captured.find('warn', /damaged/)
    assert.equal(warnings.length, 1, `one warning, got ${JSON.stringify(captured.entries)}`)
    assert.equal(warnings[0].offset, offsets[2])
    assert.equal(warnings[0].file, segmentOf(dir, offsets[2]).path)
    assert.equal(store.health().crcFailures, 1)
    assert.deepEqual(
      log.damagedRanges().map((r) => [r.offset, r.bytes]),
      [[offsets[2], offsets[3] - offsets[2]]],
    )
  })

  test('the background scrub finds a flipped payload byte in a sealed segment without any read', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 20, 200)
    const dir = join(dataPath, 't-0')
    const {path, start} = segmentOf(dir, offsets[9])
    const bytes = readFileSync(path)
    bytes[offsets[9] - start + 22] ^= 0x20
    writeFileSync(path, bytes)
    const captured = captureLogger()
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200}, {logger: captured.logger})
    await waitFor(() => store.health().unverifiedSegments === 0, {what: 'the scrub to verify every sealed segment'})
    assert.equal(store.health().crcFailures, 1)
    assert.equal(captured.find('warn', /damaged/).length, 1)
    const log = partitionOf(store)
    assert.deepEqual(await log.read(offsets[9], 4096), {kind: 'damaged', offset: offsets[10]})
    assert.deepEqual(await consumeAll(log), expected(offsets, [9]))
    assert.equal(log.info().messageCount, 19, 'the side index no longer counts the damaged record')
  })

  test('checkOffset() finds damage made after the segment was verified (a MetaQ client asking `offset`)', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 20, 200)
    const dir = join(dataPath, 't-0')
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200})
    await waitFor(() => store.health().unverifiedSegments === 0, {what: 'the scrub'})
    const log = partitionOf(store)
    // Bit rot while the broker runs: the segment was verified, so reads no longer check it.
    writeWord(dir, offsets[5], 20, 0x01020304)
    const first = segmentOf(dir, offsets[5]).start
    const served = await log.read(first, 4096)
    assert.equal(served.kind, 'data')
    // The client's CRC check fails; it asks `offset` for the offset it fetched from.
    assert.equal(await log.checkOffset(first, 1024 * 1024), first, 'an aligned offset is valid: fetch again from it')
    assert.deepEqual(await log.read(offsets[5], 4096), {kind: 'damaged', offset: offsets[6]})
    assert.deepEqual(await consumeAll(log), expected(offsets, [5]))
  })

  test('damage at the end of a sealed segment costs the rest of that segment only', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 20, 200)
    // Message 6 is the last record of segment [0, 210): its length now points past the end.
    writeWord(join(dataPath, 't-0'), offsets[6], 0, 1000)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200}, {scrub: false})
    const log = partitionOf(store)
    assert.deepEqual(await log.read(offsets[6], 4096), {kind: 'damaged', offset: offsets[7]})
    assert.equal(offsets[7], 210, 'readers continue in the next segment')
    assert.deepEqual(await consumeAll(log), expected(offsets, [6]))
  })

  test('a misaligned read of an unverified segment registers no damage', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 20, 200)
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200}, {scrub: false})
    const log = partitionOf(store)
    const result = await log.read(offsets[1] + 7, 4096)
    assert.equal(result.kind, 'data')
    assert.equal(store.health().crcFailures, 0)
    assert.deepEqual(await consumeAll(log), expected(offsets, []))
  })
})

describe('damage early in the last segment (item 3)', () => {
  for (const [what, at, value] of [
    ['a flipped payload word', 22, 0x5a5a5a5a],
    ['a flipped length word', 0, 0x00ff0000],
  ] as const) {
    test(`MessageStore.open() resynchronises past ${what} and keeps every later record`, async (t) => {
      const dataPath = await tmpDir(t)
      const offsets = await writeLog(t, dataPath, 40, 1024 * 1024)
      const dir = join(dataPath, 't-0')
      const segment = join(dir, SEGMENT_0)
      const size = readFileSync(segment).length
      writeWord(dir, offsets[1], at, value)
      const damagedBytes = readFileSync(segment).subarray(offsets[1], offsets[2])

      const captured = captureLogger()
      const store = await openStore(t, dataPath, {}, {logger: captured.logger})
      const log = partitionOf(store)
      assert.equal(log.maxOffset, size, 'nothing after the damage is dropped')
      assert.deepEqual(await consumeAll(log), expected(offsets, [1]))
      assert.deepEqual(await log.read(offsets[1], 4096), {kind: 'damaged', offset: offsets[2]})
      const aside = join(dir, name20(offsets[1], '.damaged'))
      assert.deepEqual(readFileSync(aside), damagedBytes, 'the damaged bytes are kept aside')
      const warnings = captured.find('warn', /damaged/)
      assert.equal(warnings.length, 1)
      assert.equal(warnings[0].offset, offsets[1])
      assert.equal(warnings[0].bytes, offsets[2] - offsets[1])
      assert.equal(warnings[0].keptAside, aside)
      assert.equal(log.info().messageCount, 39)
      const next = await putMany(log, ['after'])
      assert.equal(next[0], size, 'new records go after the old ones')
      await store.close()

      // write → close → reopen → same state; the kept-aside file is not written twice.
      const again = await openStore(t, dataPath)
      const reopened = partitionOf(again)
      assert.deepEqual(
        (await consumeAll(reopened)).map((m) => m.text),
        [...expected(offsets, [1]).map((m) => m.text), 'after'],
      )
      assert.deepEqual(
        files(dir).filter((n) => n.endsWith('.damaged')),
        [name20(offsets[1], '.damaged')],
      )
    })
  }

  test('MessageStore.open() steps over a zero-filled range in the last segment and keeps nothing aside for it', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 10, 1024 * 1024)
    const segment = join(dataPath, 't-0', SEGMENT_0)
    const bytes = readFileSync(segment)
    bytes.fill(0, offsets[3], offsets[6])
    writeFileSync(segment, bytes)
    const store = await openStore(t, dataPath)
    const log = partitionOf(store)
    assert.deepEqual(await consumeAll(log), expected(offsets, [3, 4, 5]))
    assert.deepEqual(
      log.damagedRanges().map((r) => [r.offset, r.bytes, r.reason]),
      [[offsets[3], offsets[6] - offsets[3], 'zero-fill']],
    )
    assert.deepEqual(
      files(join(dataPath, 't-0')).filter((n) => n.endsWith('.damaged')),
      [],
    )
  })

  test('MessageStore.open() still truncates a torn tail, keeping the cut bytes aside', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeLog(t, dataPath, 5, 1024 * 1024)
    const segment = join(dataPath, 't-0', SEGMENT_0)
    const whole = readFileSync(segment)
    truncateSync(segment, offsets[4] + 25)
    const captured = captureLogger()
    const store = await openStore(t, dataPath, {}, {logger: captured.logger})
    assert.equal(partitionOf(store).maxOffset, offsets[4])
    const aside = join(dataPath, 't-0', name20(offsets[4], '.damaged'))
    assert.deepEqual(readFileSync(aside), whole.subarray(offsets[4], offsets[4] + 25))
    assert.equal(captured.find('warn', 'truncated torn tail')[0]?.keptAside, aside)
  })
})

describe('quarantine (items 4, 5, 12)', () => {
  async function twoPartitions(t: Cleanup, dataPath: string): Promise<number[]> {
    const offsets = await writeLog(t, dataPath, 20, 200, 0)
    await writeLog(t, dataPath, 3, 200, 1)
    return offsets
  }

  async function assertQuarantined(t: Cleanup, dataPath: string, pattern: RegExp): Promise<void> {
    const dir = join(dataPath, 't-0')
    const before = files(dir)
    const captured = captureLogger()
    const store = await openStore(t, dataPath, {maxSegmentBytes: 200}, {logger: captured.logger})
    assert.equal(store.get('t', 0), undefined, 'the damaged partition is not served')
    const quarantined = store.quarantined()
    assert.equal(quarantined.length, 1)
    assert.equal(quarantined[0].topic, 't')
    assert.equal(quarantined[0].partition, 0)
    assert.match(quarantined[0].reason, pattern)
    assert.throws(
      () => store.getOrCreate('t', 0),
      (err: Error & {code?: string}) => {
        assert.equal(err.code, 'PARTITION_QUARANTINED')
        assert.match(err.message, /meta repair/)
        return true
      },
    )
    assert.deepEqual(files(dir), before, 'nothing is written into a quarantined partition')
    assert.equal(captured.find('error', /quarantined/).length, 1)
    assert.deepEqual((await consumeAll(partitionOf(store, 1))).length, 3, 'the other partition is served')
    assert.equal(store.health().quarantinedPartitions, 1)
  }

  test('a sealed segment missing from the middle quarantines only its partition', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await twoPartitions(t, dataPath)
    rmSync(segmentOf(join(dataPath, 't-0'), offsets[8]).path)
    await assertQuarantined(t, dataPath, /not contiguous/)
  })

  test('a truncated sealed segment quarantines only its partition', async (t) => {
    const dataPath = await tmpDir(t)
    await twoPartitions(t, dataPath)
    const first = join(dataPath, 't-0', SEGMENT_0)
    truncateSync(first, readFileSync(first).length - 5)
    await assertQuarantined(t, dataPath, /not contiguous/)
  })

  test('a .meta file that is not a segment name quarantines its partition (junk.meta)', async (t) => {
    const dataPath = await tmpDir(t)
    await twoPartitions(t, dataPath)
    writeFileSync(join(dataPath, 't-0', 'junk.meta'), 'junk')
    await assertQuarantined(t, dataPath, /"junk\.meta".*not a segment name/)
  })

  test('a short segment name quarantines its partition instead of having its offsets reused (525041.meta)', async (t) => {
    const dataPath = await tmpDir(t)
    await twoPartitions(t, dataPath)
    writeFileSync(join(dataPath, 't-0', '525041.meta'), handRecord(1n, 0, Buffer.from('stray')))
    await assertQuarantined(t, dataPath, /"525041\.meta"/)
  })

  test('a duplicate segment is named by both of its files (item 12)', async (t) => {
    const dataPath = await tmpDir(t)
    await twoPartitions(t, dataPath)
    const dir = join(dataPath, 't-0')
    writeFileSync(join(dir, `0${SEGMENT_0}`), readFileSync(join(dir, SEGMENT_0)))
    await assertQuarantined(t, dataPath, new RegExp(`"0${SEGMENT_0}".*"${SEGMENT_0}"|"${SEGMENT_0}".*"0${SEGMENT_0}"`))
  })

  test('a partition found under two data paths is quarantined, the rest is served', async (t) => {
    const dataPath = await tmpDir(t)
    const other = await tmpDir(t)
    await writeLog(t, dataPath, 3, 200, 1)
    await writeLog(t, other, 3, 200, 0)
    mkdirSync(join(dataPath, 't-0'))
    const store = await openStore(t, dataPath, {}, {extraDataPaths: [other]})
    assert.equal(store.get('t', 0), undefined)
    assert.match(store.quarantined()[0]?.reason ?? '', /exists twice/)
    assert.ok(store.get('t', 1))
  })

  test('unknown files in a partition directory are reported once; the files meta writes are not', async (t) => {
    const dataPath = await tmpDir(t)
    await writeLog(t, dataPath, 3, 200)
    const dir = join(dataPath, 't-0')
    for (const known of [`${SEGMENT_0}.arc`, `${SEGMENT_0}.zip`, name20(7, '.damaged'), name20(0, '.damage.json'), 'junk.meta.aside', 'x.tmp']) {
      writeFileSync(join(dir, known), known === name20(0, '.damage.json') ? '{"version":1,"ranges":[]}' : 'x')
    }
    writeFileSync(join(dir, 'notes.txt'), 'stray')
    mkdirSync(join(dir, 'subdir'))
    const captured = captureLogger()
    const store = await openStore(t, dataPath, {}, {logger: captured.logger})
    assert.ok(store.get('t', 0), 'unknown files do not stop a partition')
    const reports = captured.find('warn', /unrecognised files/)
    assert.equal(reports.length, 1)
    assert.deepEqual(reports[0].files, ['notes.txt', 'subdir'])
    assert.ok(existsSync(join(dir, 'notes.txt')), 'unknown files are left alone')
  })
})
