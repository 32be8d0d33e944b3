/**
 * The committed-offset log: commits survive a reopen, a torn or corrupt tail is truncated to
 * the last whole record, deleted groups stay deleted, and the file is compacted (atomically)
 * once it is mostly superseded records.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {appendFileSync, readdirSync, statSync, truncateSync} from 'node:fs'
import {join} from 'node:path'
import {OffsetLog, OFFSETS_DIR, OFFSETS_FILE} from '../../src/storage/offset-log.js'
import {tmpDir, waitFor} from '../helpers/index.js'

function commit(log: OffsetLog, group: string, offsets: Array<[string, number, number]>): Promise<void> {
  return new Promise((resolve, reject) =>
    log.commit(
      group,
      offsets.map(([topic, partition, offset]) => ({topic, partition, offset, msgId: String(offset * 10)})),
      (err) => (err ? reject(err) : resolve()),
    ),
  )
}

function plain(log: OffsetLog, group: string): Array<[string, number, number, string]> {
  return log.get(group).map((o) => [o.topic, o.partition, o.offset, o.msgId])
}

describe('OffsetLog', () => {
  it('keeps committed offsets across a reopen, later commits winning', async (t) => {
    const dir = await tmpDir(t)
    const log = OffsetLog.open(dir)
    await commit(log, 'g1', [
      ['orders', 0, 100],
      ['orders', 1, 200],
    ])
    await commit(log, 'g1', [['orders', 0, 150]])
    await commit(log, 'g2', [['logs', 0, 7]])
    await log.close()
    const again = OffsetLog.open(dir)
    t.after(() => again.close())
    assert.deepEqual(plain(again, 'g1'), [
      ['orders', 0, 150, '1500'],
      ['orders', 1, 200, '2000'],
    ])
    assert.deepEqual(plain(again, 'g2'), [['logs', 0, 7, '70']])
    assert.deepEqual(again.groupNames(), ['g1', 'g2'])
    assert.deepEqual(again.get('g1', ['logs']), [])
  })

  it('close() answers every commit it was given, including one queued behind an fdatasync', async (t) => {
    const dir = await tmpDir(t)
    const log = OffsetLog.open(dir)
    const answers: Array<string | null> = []
    const codes: Array<string | null> = []
    const entry = (offset: number) => [{topic: 't', partition: 0, offset, msgId: String(offset)}]
    log.commit('g', entry(1), (err) => answers.push(err?.message ?? null)) // starts an fdatasync
    log.commit('g', entry(2), (err) => answers.push(err?.message ?? null)) // waits for the next one
    await log.close()
    await waitFor(() => answers.length === 2, {what: 'both commits to be answered', timeoutMs: 10_000})
    assert.deepEqual(answers, [null, null])
    const again = OffsetLog.open(dir)
    t.after(() => again.close())
    assert.deepEqual(plain(again, 'g'), [['t', 0, 2, '2']])
    log.commit('g', entry(3), (err) => codes.push(err?.code ?? null))
    assert.deepEqual(codes, ['STORAGE_ERROR'], 'a commit after close fails at once')
  })

  it('truncates a torn tail and a corrupt last record, keeping the records before them', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, OFFSETS_DIR, OFFSETS_FILE)
    const log = OffsetLog.open(dir)
    await commit(log, 'g', [['t', 0, 1]])
    const good = statSync(path).size
    await commit(log, 'g', [['t', 0, 2]])
    await log.close()
    truncateSync(path, statSync(path).size - 3) // a record cut short
    const torn = OffsetLog.open(dir)
    assert.deepEqual(plain(torn, 'g'), [['t', 0, 1, '10']])
    await torn.close()
    assert.equal(statSync(path).size, good, 'the torn record is cut off')
    appendFileSync(path, Buffer.from([0, 0, 0, 4, 1, 2, 3, 4, 0x7b, 0x7d, 0x7b, 0x7d])) // a record whose CRC fails
    const corrupt = OffsetLog.open(dir)
    t.after(() => corrupt.close())
    assert.deepEqual(plain(corrupt, 'g'), [['t', 0, 1, '10']])
    assert.equal(statSync(path).size, good)
  })

  it('forgets a deleted group, also after a reopen', async (t) => {
    const dir = await tmpDir(t)
    const log = OffsetLog.open(dir)
    await commit(log, 'gone', [['t', 0, 5]])
    await new Promise<void>((resolve, reject) => log.deleteGroup('gone', (err) => (err ? reject(err) : resolve())))
    assert.deepEqual(log.get('gone'), [])
    await log.close()
    const again = OffsetLog.open(dir)
    t.after(() => again.close())
    assert.deepEqual(again.groupNames(), [])
  })

  it('compacts a file of superseded records into a snapshot, atomically', async (t) => {
    const dir = await tmpDir(t)
    const path = join(dir, OFFSETS_DIR, OFFSETS_FILE)
    const log = OffsetLog.open(dir)
    const partitions = Array.from({length: 50}, (_, p) => p)
    let recordBytes = 0
    for (let round = 1; round <= 600; round++) {
      await commit(
        log,
        'busy',
        partitions.map((p): [string, number, number] => ['topic-with-a-long-name', p, round * 1000 + p]),
      )
      if (round === 1) recordBytes = statSync(path).size
    }
    const size = statSync(path).size
    assert.ok(recordBytes * 600 > 1024 * 1024, 'uncompacted, the log would pass the 1 MiB threshold')
    assert.ok(size < (recordBytes * 600) / 2, `compacted: ${size} bytes instead of ${recordBytes * 600}`)
    assert.deepEqual(readdirSync(join(dir, OFFSETS_DIR)), [OFFSETS_FILE], 'no temp file left')
    await log.close()
    const again = OffsetLog.open(dir)
    t.after(() => again.close())
    assert.equal(again.get('busy').length, 50)
    assert.deepEqual(again.get('busy')[7], {...again.get('busy')[7], offset: 600 * 1000 + 7})
  })
})
