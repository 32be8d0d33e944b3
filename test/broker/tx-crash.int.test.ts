/**
 * Transactions across kill -9: 20 cycles of a `meta serve` process killed at a random moment
 * while workers begin, put, prepare and commit local and XA transactions. After each restart:
 * every transaction whose commit was acknowledged is whole; every transaction is whole or
 * absent, never partial, no message twice; one never committed is absent; every XA
 * transaction whose PREPARE was acknowledged is listed by RECOVER, and is then committed or
 * rolled back (alternately) with the outcome checked in the next cycle.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {decodeMessageSet} from '../../src/protocol/index.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {exited, spawnBroker} from '../helpers/process.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

const CYCLES = 20
const WORKERS = 3
const PARTITIONS = 2

interface TxRecord {
  id: string
  size: number
  /** What the test knows: commit acknowledged, committed after recovery, rolled back, never to be committed. */
  expect: 'present' | 'absent' | 'either'
}

describe('transactions across kill -9', () => {
  it(`keep committed transactions whole and drop in-flight ones over ${CYCLES} crash cycles`, async (t) => {
    const dataPath = await tmpDir(t)
    const topic = uniqueName('txcrash')
    const known = new Map<string, TxRecord>()
    let opaque = 1
    let totalOps = 0
    let decided = 0

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const proc = await spawnBroker(t, ['--data-dir', dataPath, '--partitions', String(PARTITIONS)], {timeoutMs: 30_000})
      // First: what recovery brought back, and the prepared transactions of the last cycle.
      const admin = await RawClient.connect(t, proc.port)
      const stored = await verify(admin, topic, known, cycle)
      const recovered = text(await admin.request(`transaction null s RECOVER ${opaque++}\r\n`, 20_000))
        .split('\r\n')
        .filter((k) => k !== '')
      for (const rec of known.values() as Iterable<TxRecord & {prepared?: boolean}>) {
        if (rec.expect !== 'either') continue
        const listed = rec.id.startsWith('x') && recovered.includes(xaKey(rec.id))
        // An acknowledged PREPARE (no commit sent) must be listed; an unanswered one may be.
        if (rec.prepared) assert.ok(listed, `cycle ${cycle}: prepared ${xaKey(rec.id)} is listed by RECOVER`)
        assert.ok(!(listed && stored.has(rec.id)), `cycle ${cycle}: ${rec.id} is not both prepared and stored`)
        // What recovery decided is final: stored stays stored, gone stays gone (prepared ones are decided below).
        if (!listed) rec.expect = stored.has(rec.id) ? 'present' : 'absent'
        rec.prepared = false
      }
      let flip = cycle % 2 === 0
      for (const key of recovered) {
        const id = idOfXaKey(key)
        flip = !flip
        const reply = await admin.request(`transaction ${key} s ${flip ? 'COMMIT_TWO_PHASE' : 'ROLLBACK'} ${opaque++}\r\n`, 20_000)
        assert.equal(reply.type === 'result' && reply.code, 200, `cycle ${cycle}: ${flip ? 'commit' : 'rollback'} of recovered ${key}: ${text(reply)}`)
        const rec = known.get(id)
        if (rec !== undefined) rec.expect = flip ? 'present' : 'absent'
        decided += 1
      }
      await verify(admin, topic, known, cycle)

      // Then: load, and a kill at a random moment of it.
      let stop = false
      const workers = Array.from({length: WORKERS}, async (_, w) => {
        const client = await RawClient.connect(t, proc.port)
        for (let n = 0; !stop; n++) {
          const xa = (n + w) % 3 === 0
          const id = `${xa ? 'x' : 'l'}${cycle}_${w}_${n}`
          const size = 1 + ((n * 7 + w) % 5)
          const rec: TxRecord & {prepared?: boolean} = {id, size, expect: 'absent'}
          known.set(id, rec)
          const key = xa ? xaKey(id) : `TX:s${w}:${n + 1}`
          try {
            expectOk(await client.request(`transaction ${key} s${w} BEGIN 60 ${opaque++}\r\n`, 20_000))
            totalOps += 1
            for (let i = 0; i < size; i++) {
              const body = `${id}/${i}/${size}`
              client.send(`put ${topic} ${i % PARTITIONS} ${body.length} 0 -1 ${key} ${opaque++}\r\n${body}`)
            }
            for (let i = 0; i < size; i++) expectOk(await client.next(20_000))
            totalOps += 1
            if (xa) {
              client.send(`transaction ${key} s${w} PREPARE ${opaque++}\r\n`)
              rec.expect = 'either' // from here on a crash may leave it prepared
              expectOk(await client.next(20_000))
              rec.prepared = true
              totalOps += 1
              if (n % 2 === 0) continue // stays prepared: recovered next cycle
              rec.prepared = false // a commit sent may complete whatever happens next
              client.send(`transaction ${key} s${w} COMMIT_TWO_PHASE ${opaque++}\r\n`)
            } else {
              client.send(`transaction ${key} s${w} COMMIT_ONE_PHASE ${opaque++}\r\n`)
              rec.expect = 'either'
            }
            expectOk(await client.next(20_000))
            rec.expect = 'present'
            rec.prepared = false
            totalOps += 1
          } catch {
            return // the broker is gone
          }
        }
      })
      const target = totalOps + 5 + Math.floor(Math.random() * 60)
      await waitFor(() => totalOps >= target, {what: `${target} transaction steps in cycle ${cycle}`, timeoutMs: 30_000})
      proc.child.kill('SIGKILL')
      assert.equal((await exited(proc.child)).signal, 'SIGKILL')
      stop = true
      await Promise.all(workers)
    }
    const proc = await spawnBroker(t, ['--data-dir', dataPath, '--partitions', String(PARTITIONS)], {timeoutMs: 30_000})
    const last = await RawClient.connect(t, proc.port)
    await verify(last, topic, known, CYCLES)
    assert.ok([...known.values()].filter((r) => r.expect === 'present').length >= CYCLES, 'transactions were committed along the way')
    assert.ok(decided >= 1, 'prepared transactions were recovered and decided along the way')
  })
})

function xaKey(id: string): string {
  return `XID:1:${Buffer.from(id).toString('hex')}:01:crash`
}

function idOfXaKey(key: string): string {
  return Buffer.from(key.split(':')[2], 'hex').toString()
}

function expectOk(frame: Awaited<ReturnType<RawClient['next']>>): void {
  if (frame.type !== 'result' || frame.code !== 200) throw new Error(`not ok: ${text(frame)}`)
}

/** Every transaction whole or absent, none twice; what must be there is, what must not is not. */
async function verify(client: RawClient, topic: string, known: Map<string, TxRecord>, cycle: number): Promise<Set<string>> {
  const seen = new Map<string, Set<number>>()
  const sizes = new Map<string, number>()
  let opaque = 1_000_000 + cycle * 1000
  for (let partition = 0; partition < PARTITIONS; partition++) {
    for (let offset = 0; ;) {
      const frame = await client.request(`get ${topic} g ${partition} ${offset} 1048576 ${opaque++}\r\n`, 20_000)
      if (frame.type !== 'value') break
      const {messages, bytesConsumed, error} = decodeMessageSet(frame.body, {baseOffset: offset})
      assert.equal(error, undefined, 'no corrupt record is served')
      for (const m of messages) {
        const [id, index, size] = m.data.toString().split('/')
        let indexes = seen.get(id)
        if (indexes === undefined) seen.set(id, (indexes = new Set()))
        assert.ok(!indexes.has(Number(index)), `cycle ${cycle}: message ${m.data.toString()} is stored once`)
        indexes.add(Number(index))
        sizes.set(id, Number(size))
      }
      offset += bytesConsumed
    }
  }
  for (const [id, indexes] of seen) {
    assert.equal(indexes.size, sizes.get(id), `cycle ${cycle}: transaction ${id} is whole (${indexes.size} of ${sizes.get(id)})`)
    const rec = known.get(id)
    assert.ok(rec !== undefined, `cycle ${cycle}: ${id} was sent by the test`)
    assert.notEqual(rec.expect, 'absent', `cycle ${cycle}: ${id} was never committed (or was rolled back) but is stored`)
  }
  for (const rec of known.values()) {
    if (rec.expect === 'present') assert.ok(seen.has(rec.id), `cycle ${cycle}: committed transaction ${rec.id} is stored`)
  }
  return new Set(seen.keys())
}
