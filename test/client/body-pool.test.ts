/**
 * BodyPool: large bodies are handed out from memory given back, in multiples of 64 KiB; small
 * ones, memory it did not hand out and a second give of the same body are left alone.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {BodyPool} from '../../src/client/body-pool.js'

describe('BodyPool', () => {
  it('hands out memory given back for a body that fits, and fresh memory otherwise', () => {
    const pool = new BodyPool()
    const a = pool.take(1_000_000)
    assert.equal(a.length, 1_000_000)
    assert.equal(a.buffer.byteLength % (64 * 1024), 0, 'rounded up to 64 KiB')
    const b = pool.take(1_000_000)
    assert.notEqual(b.buffer, a.buffer, 'memory still held is not handed out')
    pool.give(a)
    const c = pool.take(999_000)
    assert.equal(c.buffer, a.buffer, 'a smaller body takes the memory given back')
    assert.equal(c.length, 999_000)
    const d = pool.take(2_000_000)
    assert.notEqual(d.buffer, a.buffer)
    assert.ok(d.buffer.byteLength >= 2_000_000)
  })

  it('ignores a second give, memory it did not hand out, and does not pool small bodies', () => {
    const pool = new BodyPool()
    const a = pool.take(200_000)
    pool.give(a)
    pool.give(a)
    const first = pool.take(200_000)
    const second = pool.take(200_000)
    assert.equal(first.buffer, a.buffer)
    assert.notEqual(second.buffer, a.buffer, 'given twice, handed out once')
    const foreign = Buffer.allocUnsafe(300_000)
    pool.give(foreign)
    assert.notEqual(pool.take(300_000).buffer, foreign.buffer, 'memory from elsewhere is never handed out')
    const small = pool.take(1000)
    assert.equal(small.length, 1000)
    pool.give(small)
    assert.notEqual(pool.take(64 * 1024).buffer, small.buffer, 'a small body (Node\'s pool) never comes back as a large one')
  })

  it('keeps at most four buffers given back', () => {
    const pool = new BodyPool()
    const taken = Array.from({length: 6}, () => pool.take(100_000))
    for (const body of taken) pool.give(body)
    const again = Array.from({length: 6}, () => pool.take(100_000).buffer)
    const reused = again.filter((memory) => taken.some((body) => body.buffer === memory))
    assert.equal(reused.length, 4)
  })
})
