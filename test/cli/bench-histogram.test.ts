/**
 * The bench's latency histogram: percentiles never exceed the maximum recorded (before, a
 * percentile was its bucket's highest value, so p99 could read 57.919 ms over a max of 57.9).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {LatencyHistogram} from '../../src/cli/bench/histogram.js'

describe('LatencyHistogram', () => {
  it('caps every percentile at the exact maximum, also after folding windows together', () => {
    const window = new LatencyHistogram()
    const total = new LatencyHistogram()
    // 57.9 ms lies inside a 32 µs bucket (57,888..57,919 µs at 3 significant digits).
    for (let i = 0; i < 98; i++) window.record(1)
    window.record(57.9)
    window.record(57.9)
    total.add(window)
    window.reset()
    assert.equal(window.count, 0)
    for (const h of [total]) {
      const p = h.percentiles()
      assert.equal(p.max, 57.9)
      assert.equal(p.p99, 57.9, 'p99 is the max, not the bucket top 57.919')
      assert.ok(p.p50 <= p.p95 && p.p95 <= p.p99 && p.p99 <= p.p999 && p.p999 <= p.max, JSON.stringify(p))
      assert.equal(p.count, 100)
    }
  })

  it('forgets the maximum on reset', () => {
    const h = new LatencyHistogram()
    h.record(10)
    h.reset()
    h.record(2)
    assert.equal(h.percentiles().max, 2)
    assert.equal(h.percentile(100), 2)
  })
})
