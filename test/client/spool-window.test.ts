/**
 * The direct window of a spooling producer: a ring that keeps send order across its wraparound,
 * its growth and the wrap of its sequence numbers, lets answers come in any order, and hands
 * what is unanswered to the spool oldest first.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {SendWindow} from '../../src/client/spool/window.js'
import type {SendResult} from '../../src/client/types.js'

/** A callback that tells which message it belongs to (SendWindow hands callbacks back). */
type Tagged = ((result: SendResult) => void) & {tag: number}

function tagged(tag: number): Tagged {
  return Object.assign(() => {}, {tag})
}

function push(window: SendWindow, i: number): number {
  return window.push(i % 4, i % 2 === 0 ? `k${i}` : undefined, Buffer.from(`line-${i}`), tagged(i))
}

/** What spoolInto hands over, as [tag, partition, attribute, payload]; each gets position 10*tag. */
function spoolAll(window: SendWindow): Array<[number, number, string | undefined, string]> {
  const out: Array<[number, number, string | undefined, string]> = []
  window.spoolInto((partition, attribute, payload, callback) => {
    const tag = (callback as Tagged).tag
    out.push([tag, partition, attribute, payload.toString()])
    return {position: 10 * tag, end: 10 * tag + 10}
  })
  return out
}

describe('SendWindow', () => {
  it('SendWindow keeps send order across the wraparound of its ring', () => {
    const window = new SendWindow()
    const seqs: number[] = []
    // 100 unanswered at any time, 10,000 sent: the ring's slots are reused about ten times.
    for (let i = 0; i < 10_000; i++) {
      seqs.push(push(window, i))
      if (i >= 100) assert.equal((window.answer(seqs[i - 100]!) as Tagged).tag, i - 100)
    }
    assert.equal(window.pending, 100)
    assert.equal(window.length, 100)
    assert.deepEqual(spoolAll(window).map(([tag]) => tag), Array.from({length: 100}, (_, i) => 9_900 + i))
  })

  it('SendWindow grows past its capacity without losing or reordering a message', () => {
    const window = new SendWindow()
    // Start mid-ring, so the slots in use wrap around its end when it grows.
    for (let i = 0; i < 700; i++) window.answer(push(window, -1))
    const seqs = Array.from({length: 5000}, (_, i) => push(window, i))
    // Answer every third one first: the others stay, in order, with their fields.
    for (let i = 0; i < 5000; i += 3) window.answer(seqs[i]!)
    const spooled = spoolAll(window)
    const expected = Array.from({length: 5000}, (_, i) => i).filter((i) => i % 3 !== 0)
    assert.deepEqual(spooled.map(([tag]) => tag), expected)
    for (const [i, partition, attribute, payload] of spooled) {
      assert.deepEqual([partition, attribute, payload], [i % 4, i % 2 === 0 ? `k${i}` : undefined, `line-${i}`])
    }
  })

  it('SendWindow lets answers come in any order across partitions: a slot leaves only behind answered ones', () => {
    const window = new SendWindow()
    const seqs = Array.from({length: 6}, (_, i) => push(window, i))
    // Partition 1's acknowledgement (messages 1, 5) comes before partition 0's (0, 4).
    window.answer(seqs[1]!)
    window.answer(seqs[5]!)
    assert.deepEqual([window.pending, window.length], [4, 6])
    window.answer(seqs[0]!)
    assert.deepEqual([window.pending, window.length], [3, 4], 'the oldest leaves, and the answered one behind it')
    assert.deepEqual(spoolAll(window).map(([tag]) => tag), [2, 3, 4])
    assert.deepEqual([window.pending, window.length], [0, 4], 'spooled slots stay until answered')
    assert.deepEqual([window.positionOf(seqs[3]!), window.endOf(seqs[3]!)], [30, 40])
    assert.equal(window.positionOf(seqs[5]!), -1)
    for (const i of [4, 3, 2]) window.answer(seqs[i]!)
    assert.deepEqual([window.pending, window.length], [0, 0])
  })

  it('SendWindow numbers messages modulo 2^30 and keeps order across that wrap while it grows', () => {
    const window = new SendWindow(2 ** 30 - 3)
    const seqs = Array.from({length: 3000}, (_, i) => push(window, i))
    assert.deepEqual(seqs.slice(0, 5), [2 ** 30 - 3, 2 ** 30 - 2, 2 ** 30 - 1, 0, 1])
    for (let i = 2999; i >= 1500; i--) window.answer(seqs[i]!)
    assert.deepEqual(spoolAll(window).map(([tag]) => tag), Array.from({length: 1500}, (_, i) => i))
    for (let i = 0; i < 1500; i++) assert.equal((window.answer(seqs[i]!) as Tagged).tag, i)
    assert.equal(window.length, 0)
  })

  it('SendWindow.pop() takes back the message pushed last', () => {
    const window = new SendWindow()
    push(window, 0)
    push(window, 1)
    window.pop()
    push(window, 2)
    assert.equal(window.pending, 2)
    assert.deepEqual(spoolAll(window).map(([tag]) => tag), [0, 2])
  })
})
