/**
 * The spool's window of unacknowledged records (src/client/spool/spool.ts) against a plain
 * list: random sequences of appends (empty to larger than the write buffer and a segment),
 * flushes, reads from any record boundary with any size, acknowledgements in any order (and
 * twice), saves of the position, close and reopen, and a torn or padded last record. After
 * every step position, end, pending, pendingBytes, full, isAcked and the 'room' events are the
 * model's; a read returns the model's records; a reopen resumes at the saved position with
 * everything after it pending again (at-least-once), or, once nothing was pending, empty.
 * A failure names the seed (META_TEST_SEED=<seed> replays it).
 */
import assert from 'node:assert/strict'
import {appendFileSync, readdirSync, truncateSync} from 'node:fs'
import {join} from 'node:path'
import {test} from 'node:test'
import {parseSegmentName} from '../../src/client/spool/format.js'
import {Spool, SPOOL_MAX_BYTES_FLOOR, type SpoolEntry, type SpoolRecord} from '../../src/client/spool/index.js'
import {tmpDir} from '../helpers/index.js'
import {scaleFor, seeds, withSeed, type Random, type Steps} from '../helpers/seeded.js'

interface ModelRecord extends SpoolEntry {
  position: number
  end: number
  acked: boolean
}

/**
 * Operations and how often each is drawn, by phase: the window fills (a broker that does not
 * answer) until it is full, then drains (answers, in order and not).
 */
const OPERATIONS = {
  fill: {append: 40, ack: 3, 'ack ahead': 3, 'ack again': 1, read: 8, flush: 4, save: 2, reopen: 2, tear: 2, check: 3},
  drain: {append: 8, ack: 40, 'ack ahead': 12, 'ack again': 3, read: 8, flush: 2, save: 4, reopen: 2, tear: 1, check: 3},
}

/** What the spool must show. */
class Model {
  records: ModelRecord[] = []
  end = 0
  room = 0

  constructor(readonly maxBytes: number) {}

  get position(): number {
    return this.records.find((r) => !r.acked)?.position ?? this.end
  }

  get pending(): number {
    return this.records.filter((r) => !r.acked).length
  }

  get pendingBytes(): number {
    return this.end - this.position
  }

  get full(): boolean {
    return this.pendingBytes >= this.maxBytes
  }

  unacked(): ModelRecord[] {
    return this.records.filter((r) => !r.acked)
  }

  /** What read(from, maxBytes) returns: records from `from` until maxBytes are taken (at least one). */
  read(from: number, maxBytes: number): ModelRecord[] {
    const out: ModelRecord[] = []
    let taken = 0
    for (const r of this.records) {
      if (r.position < from) continue
      if (out.length > 0 && taken >= maxBytes) break
      out.push(r)
      taken += r.end - r.position
    }
    return out
  }

  /** Closed with `pending` records and opened again: the position saved at close, everything after it pending. */
  reopened(): void {
    if (this.pending === 0) {
      // An empty spool is removed at close: the next one starts over at 0.
      this.records = []
      this.end = 0
      return
    }
    const position = this.position
    this.records = this.records.filter((r) => r.position >= position).map((r) => ({...r, acked: false}))
  }
}

function entry(random: Random): SpoolEntry {
  const size = random.weighted({small: 70, medium: 24, large: 6})
  const bytes = size === 'small' ? random.int(0, 100) : size === 'medium' ? random.int(1000, 20_000) : random.int(100_000, 400_000)
  const attribute = random.pick([undefined, '', `k-${random.int(0, 99)}`, 'clé-ü-😀'])
  return {partition: random.int(-1, 7), attribute, payload: random.bytes(bytes)}
}

/** What opening cut or stepped over: a torn tail, or damaged bytes (quarantined). */
function droppedBytes(spool: Spool): number {
  return spool.opened.tornBytes + spool.opened.damaged.reduce((n, d) => n + (d.to - d.from), 0)
}

function checkState(spool: Spool, model: Model): void {
  assert.deepEqual(
    {position: spool.position, end: spool.end, pending: spool.pending, pendingBytes: spool.pendingBytes, full: spool.full},
    {position: model.position, end: model.end, pending: model.pending, pendingBytes: model.pendingBytes, full: model.full},
    "the spool's window is the model's",
  )
}

function checkRecords(got: SpoolRecord[], expected: ModelRecord[], what: string): void {
  assert.deepEqual(
    got.map((r) => ({position: r.position, end: r.end, partition: r.partition, attribute: r.attribute})),
    expected.map((r) => ({position: r.position, end: r.end, partition: r.partition, attribute: r.attribute})),
    what,
  )
  for (const [i, r] of got.entries()) assert.ok(r.payload.equals(expected[i].payload), `${what}: the payload of the record at ${r.position}`)
}

/** No segment file lies wholly before the saved position (savePosition deletes those). */
function checkSegmentsAfterSave(dir: string, position: number): void {
  const starts = readdirSync(dir)
    .map((name) => parseSegmentName(name))
    .filter((start): start is number => start !== undefined)
    .sort((a, b) => a - b)
  assert.ok(starts.length <= 1 || starts[1] > position, `segments ${starts.join(', ')} with the position at ${position}`)
}

async function run(t: {after(fn: () => unknown): void}, random: Random, steps: Steps): Promise<void> {
  const dir = join(await tmpDir(t), 'topic')
  const maxBytes = random.pick([SPOOL_MAX_BYTES_FLOOR, 2 * SPOOL_MAX_BYTES_FLOOR])
  steps.step(`maxBytes ${maxBytes}`)
  const model = new Model(maxBytes)
  let spool = Spool.open(dir, {maxBytes})
  // The run closes it; after a failure, this does (the temp dir may be gone by then).
  t.after(() => {
    try {
      spool.close()
    } catch {}
  })
  const watch = (s: Spool) => s.on('room', () => (model.room += 1))
  watch(spool)
  let roomSeen = 0
  const reopen = (damage?: () => void) => {
    spool.close()
    model.reopened()
    damage?.()
    spool = Spool.open(dir, {maxBytes})
    watch(spool)
    roomSeen = model.room
  }
  const count = scaleFor({ci: 400, all: 3000})
  let phase: keyof typeof OPERATIONS = 'fill'
  for (let i = 0; i < count; i++) {
    if (phase === 'fill' ? model.full && random.chance(0.2) : model.pending === 0 || random.chance(0.02)) phase = phase === 'fill' ? 'drain' : 'fill'
    const op = random.weighted(OPERATIONS[phase])
    let roomExpected = 0
    if (op === 'append') {
      const e = entry(random)
      steps.step(`append ${e.payload.length} bytes to partition ${e.partition}`)
      const position = spool.append(e)
      assert.equal(position, model.end, 'a record is appended at the end')
      assert.ok(spool.end > position, 'the end moves past it')
      model.records.push({...e, position, end: spool.end, acked: false})
      model.end = spool.end
    } else if (op === 'ack' || op === 'ack ahead' || op === 'ack again') {
      const candidates = op === 'ack again' ? model.records.filter((r) => r.acked) : model.unacked()
      if (candidates.length === 0) {
        steps.step(`${op}: nothing to acknowledge`)
      } else {
        // 'ack' takes the oldest unacknowledged record mostly; 'ack ahead' any other.
        const r = op === 'ack' && random.chance(0.8) ? candidates[0] : random.pick(candidates)
        steps.step(`${op} [${r.position}, ${r.end})`)
        const wasFull = model.full
        spool.ack(r.position, r.end)
        r.acked = true
        if (wasFull && !model.full) roomExpected = 1
      }
    } else if (op === 'read') {
      const boundaries = [model.position, model.end, ...model.records.filter((r) => r.position >= model.position).map((r) => r.position)]
      const from = random.pick(boundaries)
      const maxBytes = random.pick([1, 100, random.int(1, 500_000), 1 << 20, 4 << 20])
      steps.step(`read(${from}, ${maxBytes})`)
      checkRecords(spool.read(from, maxBytes), model.read(from, maxBytes), `read(${from}, ${maxBytes})`)
    } else if (op === 'flush') {
      steps.step('flush')
      spool.flush()
    } else if (op === 'save') {
      steps.step('savePosition')
      spool.savePosition()
      checkSegmentsAfterSave(dir, model.position)
    } else if (op === 'reopen') {
      steps.step(`close and reopen with ${model.pending} pending`)
      reopen()
      assert.equal(droppedBytes(spool), 0, 'a clean close drops nothing')
    } else if (op === 'tear') {
      const last = model.records.at(-1)
      const segmentStarts = readdirSync(dir)
        .map((name) => parseSegmentName(name))
        .filter((s): s is number => s !== undefined)
      if (model.pending === 0 || last === undefined) {
        steps.step('tear: nothing pending')
      } else if (segmentStarts.some((s) => s > last.position)) {
        // An earlier reopen started an empty segment after the last record: a cut there is damage in
        // the middle (quarantined, the damage tests' case), not the torn tail a writer's crash leaves.
        steps.step('tear: the last record is not in the last segment')
      } else {
        const torn = random.chance(0.7)
        const cut = random.int(1, last.end - last.position - 1)
        steps.step(torn ? `tear the record at ${last.position} after ${cut} bytes` : 'zeros after the last record')
        reopen(() => {
          const starts = readdirSync(dir)
            .map((name) => parseSegmentName(name))
            .filter((s): s is number => s !== undefined)
          const start = Math.max(...starts.filter((s) => s <= last.position))
          const file = join(dir, readdirSync(dir).find((name) => parseSegmentName(name) === start) as string)
          if (torn) truncateSync(file, last.position - start + cut)
          else appendFileSync(file, Buffer.alloc(random.int(1, 100)))
        })
        if (torn) {
          model.records.pop()
          model.end = last.position
        }
        // Torn: a torn tail; zeros: a torn tail when fewer than a length's four bytes, damage (quarantined) from there on.
        assert.ok(torn ? spool.opened.tornBytes > 0 : droppedBytes(spool) > 0, 'the damaged tail is counted')
      }
    } else {
      steps.step('check')
      for (const r of model.records) assert.equal(spool.isAcked(r.position), r.acked, `isAcked(${r.position})`)
    }
    checkState(spool, model)
    assert.equal(model.room - roomSeen, roomExpected, "'room' once, when an acknowledgement ends a full window")
    roomSeen = model.room
  }
  checkRecords(
    spool.read(model.position, Number.MAX_SAFE_INTEGER),
    model.records.filter((r) => r.position >= model.position),
    'everything from the position',
  )
  reopen()
  checkState(spool, model)
  spool.close()
}

for (const seed of seeds({ci: 3, all: 30})) {
  test(`Spool's window follows the model through a random sequence of operations (seed ${seed})`, (t) =>
    withSeed(import.meta.url, seed, (random, steps) => run(t, random, steps)))
}
