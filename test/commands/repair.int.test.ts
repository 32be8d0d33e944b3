/**
 * `meta repair` end to end: the real CLI (bin/run.js, spawned with a deadline) on a data
 * directory written by the store and then damaged on disk — a sealed segment deleted from the
 * middle, a stray `junk.meta`, a flipped byte in a sealed record, a torn tail, an unknown
 * file. The dry run reports everything and changes nothing (exit 1); --execute repairs
 * without a prompt (no terminal), a second check is clean (exit 0), and the store then opens
 * the partition — no quarantine — with every undamaged record at its original offset.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {appendFileSync, existsSync, readFileSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'
import {decodeMessageSet} from '../../src/protocol/index.js'
import type {PartitionLog} from '../../src/storage/index.js'
import {runCli} from '../helpers/process.js'
import {tmpDir, type Cleanup} from '../helpers/index.js'
import {openStore, putMany} from '../storage/support.js'

const DEADLINE_MS = 60_000

/** Partition t-0: 20 messages in segments of ~200 bytes (30-byte records); t-1: 3 messages. */
async function writeData(t: Cleanup, dataPath: string): Promise<number[]> {
  const store = await openStore(t, dataPath, {maxSegmentBytes: 200})
  const offsets = await putMany(
    store.getOrCreate('t', 0),
    Array.from({length: 20}, (_, i) => `message-${String(i).padStart(2, '0')}`),
  )
  await putMany(store.getOrCreate('t', 1), ['a', 'b', 'c'])
  await store.close()
  return offsets
}

function segmentPath(dataPath: string, start: number): string {
  return join(dataPath, 't-0', `${String(start).padStart(20, '0')}.meta`)
}

function snapshot(dir: string): Map<string, Buffer> {
  return new Map(
    readdirSync(dir)
      .sort()
      .map((name) => [name, readFileSync(join(dir, name))]),
  )
}

/** Damage t-0 in five ways; resolves with the indexes of the messages lost. */
function damageEverything(dataPath: string, offsets: number[]): number[] {
  const dir = join(dataPath, 't-0')
  // Segments: [0, 210) messages 0-6, [210, 420) 7-13, [420, 600) 14-19 (the last).
  const first = readFileSync(segmentPath(dataPath, 0))
  first[offsets[3] + 25] ^= 0x40
  writeFileSync(segmentPath(dataPath, 0), first)
  rmSync(segmentPath(dataPath, 210))
  writeFileSync(join(dir, 'junk.meta'), 'not a segment')
  writeFileSync(join(dir, 'notes.txt'), "an operator's notes")
  appendFileSync(segmentPath(dataPath, 420), Buffer.from('torn record'))
  return [3, 7, 8, 9, 10, 11, 12, 13]
}

async function readAll(log: PartitionLog): Promise<Array<{offset: number; text: string}>> {
  const out: Array<{offset: number; text: string}> = []
  let offset = log.minOffset
  while (offset < log.maxOffset) {
    const result = await log.read(offset, 4096)
    if (result.kind === 'damaged') {
      offset = result.offset
      continue
    }
    assert.equal(result.kind, 'data')
    if (result.kind !== 'data') break
    const decoded = decodeMessageSet(result.data, {baseOffset: offset})
    assert.equal(decoded.error, undefined)
    out.push(...decoded.messages.map((m) => ({offset: m.offset, text: m.data.toString()})))
    offset += decoded.bytesConsumed
  }
  return out
}

describe('meta repair', () => {
  it('reports damage in a dry run without changing anything, repairs it with --execute, and the partition is served again', async (t) => {
    const dataPath = await tmpDir(t)
    const offsets = await writeData(t, dataPath)
    const lost = damageEverything(dataPath, offsets)
    const dir = join(dataPath, 't-0')
    const before = snapshot(dir)

    const dry = await runCli(['repair', '-d', dataPath], {timeoutMs: DEADLINE_MS})
    assert.equal(dry.code, 1, dry.stderr)
    for (const kind of ['gap', 'bad-segment-name', 'damaged-range', 'torn-tail', 'unknown-file']) assert.match(dry.stdout, new RegExp(kind))
    assert.match(dry.stdout, /00000000000000000210\.meta/)
    assert.match(dry.stderr, /dry run: nothing was changed; add --execute/)
    assert.deepEqual(snapshot(dir), before, 'a dry run changes nothing')

    const json = await runCli(['repair', '-d', dataPath, '--json'], {timeoutMs: DEADLINE_MS})
    assert.equal(json.code, 1)
    const report = JSON.parse(json.stdout) as {
      clean: boolean
      executed: boolean
      partitions: Array<{topic: string; partition: number; findings: Array<{kind: string; damage: boolean}>}>
    }
    assert.equal(report.clean, false)
    assert.equal(report.executed, false)
    assert.deepEqual(
      report.partitions.map((p) => [p.topic, p.partition]),
      [
        ['t', 0],
        ['t', 1],
      ],
    )
    assert.deepEqual(report.partitions[1].findings, [], 'the other partition is clean')

    const executed = await runCli(['repair', '-d', dataPath, '--execute'], {timeoutMs: DEADLINE_MS})
    assert.equal(executed.code, 0, executed.stderr)
    assert.match(executed.stderr, /repaired: no damage left/)
    assert.ok(existsSync(join(dir, 'junk.meta.aside')), 'the stray file is set aside, not deleted')
    assert.ok(existsSync(join(dir, '00000000000000000210.damage.json')), 'the bridged gap is acknowledged')
    assert.ok(existsSync(join(dir, '00000000000000000600.damaged')), 'the torn tail is kept aside')
    assert.ok(existsSync(join(dir, 'notes.txt')), 'unknown files are left alone')

    const again = await runCli(['repair', '-d', dataPath], {timeoutMs: DEADLINE_MS})
    assert.equal(again.code, 0, `${again.stdout}\n${again.stderr}`)
    assert.match(again.stdout, /known-damaged-range/)

    const store = await openStore(t, dataPath, {maxSegmentBytes: 200})
    assert.deepEqual(store.quarantined(), [])
    const log = store.get('t', 0) as PartitionLog
    assert.equal(log.maxOffset, 600)
    const expected = offsets.flatMap((offset, i) => (lost.includes(i) ? [] : [{offset, text: `message-${String(i).padStart(2, '0')}`}]))
    assert.deepEqual(await readAll(log), expected)
    assert.deepEqual(await log.read(300, 4096), {kind: 'damaged', offset: 420})
  })

  it('exits 0 on a clean directory and limits itself to -t and -p', async (t) => {
    const dataPath = await tmpDir(t)
    await writeData(t, dataPath)
    rmSync(segmentPath(dataPath, 210))
    const clean = await runCli(['repair', '-d', dataPath, '-t', 't', '-p', '1'], {timeoutMs: DEADLINE_MS})
    assert.equal(clean.code, 0, clean.stderr)
    assert.match(clean.stderr, /checked 1 partition: no damage/)
    const damaged = await runCli(['repair', '-d', dataPath, '-t', 't', '-p', '0'], {timeoutMs: DEADLINE_MS})
    assert.equal(damaged.code, 1)
    assert.match(damaged.stderr, /checked 1 partition: 1 damaged/)
  })

  it('refuses while a live process holds the data directory', async (t) => {
    const dataPath = await tmpDir(t)
    await writeData(t, dataPath)
    writeFileSync(
      join(dataPath, '.meta.lock'),
      JSON.stringify({pid: process.pid, host: hostname(), address: '127.0.0.1:8123', startedAt: new Date().toISOString(), command: 'meta serve'}),
    )
    const result = await runCli(['repair', '-d', dataPath, '--execute'], {timeoutMs: DEADLINE_MS})
    assert.equal(result.code, 1)
    assert.match(result.stderr, new RegExp(`DATA_DIR_LOCKED.*in use by meta serve, pid ${process.pid} listening on 127\\.0\\.0\\.1:8123`))
    // A lock left by a process that is gone does not stop it.
    writeFileSync(join(dataPath, '.meta.lock'), JSON.stringify({pid: 2 ** 22 + 12345, host: hostname(), startedAt: new Date().toISOString()}))
    const stale = await runCli(['repair', '-d', dataPath], {timeoutMs: DEADLINE_MS})
    assert.equal(stale.code, 0, stale.stderr)
  })

  it('fails clearly on a data directory that does not exist', async () => {
    const result = await runCli(['repair', '-d', '/nonexistent/meta-data'], {timeoutMs: DEADLINE_MS})
    assert.equal(result.code, 1)
    assert.match(result.stderr, /invalid data directory "\/nonexistent\/meta-data"/)
  })
})
