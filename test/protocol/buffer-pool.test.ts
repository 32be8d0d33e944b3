/**
 * The buffer pool (the broker's segment reads, a client's reply bodies): large sizes get pooled
 * buffers, given-back ones are reused, and only buffers the pool lent are taken back, each once.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {BufferPool} from '../../src/protocol/buffer-pool.js'

describe('BufferPool', () => {
  it('lends large reads a pooled buffer and reuses it once given back', () => {
    const pool = new BufferPool(1024, 100, 2)
    const a = pool.take(500)
    assert.equal(a.length, 500)
    assert.equal(a.buffer.byteLength, 1024)
    assert.ok(Buffer.isBuffer(a))
    pool.give(a.subarray(10, 20)) // a view of it counts
    const b = pool.take(1024)
    assert.equal(b.buffer, a.buffer, 'the given-back buffer is reused')
    assert.equal(pool.reused, 1)
    const c = pool.take(600)
    assert.notEqual(c.buffer, b.buffer, 'a lent buffer is not lent twice')
  })

  it('allocates small and oversized reads as before and never takes them back', () => {
    const pool = new BufferPool(1024, 100, 2)
    const small = pool.take(100)
    const big = pool.take(1025)
    assert.equal(small.length, 100)
    assert.equal(big.length, 1025)
    pool.give(small)
    pool.give(big)
    pool.give(Buffer.allocUnsafeSlow(1024)) // a buffer the pool never lent (a tail-cache block)
    assert.notEqual(pool.take(500).buffer.byteLength, 0)
    assert.equal(pool.reused, 0)
  })

  it('takes a buffer back once, and keeps at most maxFree', () => {
    const pool = new BufferPool(1024, 100, 1)
    const a = pool.take(200)
    const b = pool.take(200)
    pool.give(a)
    pool.give(a)
    pool.give(b) // over maxFree: dropped
    const first = pool.take(200)
    const second = pool.take(200)
    assert.equal(first.buffer, a.buffer)
    assert.notEqual(second.buffer, a.buffer, 'given back twice, reused once')
    assert.notEqual(second.buffer, b.buffer, 'beyond maxFree, not kept')
    assert.equal(pool.reused, 1)
  })
})
