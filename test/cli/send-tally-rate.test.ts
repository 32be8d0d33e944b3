/**
 * The pure parts of `meta send`: SendTally keeps one range per partition whether messages are
 * counted one by one (plain sends) or as a committed transaction's batch (offsets -1 when the
 * broker does not say them); TokenBucket paces --rate with a burst of at most RATE_BURST_MS.
 * Both take explicit values (offsets, a clock), so these tests need no broker and no timers.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {SendTally} from '../../src/cli/send-tally.js'
import {RATE_BURST_MS, TokenBucket} from '../../src/cli/send-rate.js'
import {formatRate} from '../../src/cli/send-report.js'

describe('SendTally', () => {
  it('acknowledged() counts messages, bytes and the first and last offset of each partition', () => {
    const tally = new SendTally()
    tally.acknowledged('orders', 1, 200, 10)
    tally.acknowledged('orders', 0, 0, 5)
    tally.acknowledged('orders', 1, 100, 10)
    tally.acknowledged('orders', 1, 300, 10)
    assert.equal(tally.sent, 4)
    assert.equal(tally.bytes, 35)
    assert.deepEqual(tally.partitionSummary(), {'0': {first: 0, last: 0, count: 1}, '1': {first: 100, last: 300, count: 3}})
  })

  it('placed() merges batches into the same ranges; -1 (unknown) never wins over a known offset', () => {
    const tally = new SendTally()
    tally.placed('a', 0, -1, -1, 3)
    assert.deepEqual(tally.partitionSummary(), {'0': {first: -1, last: -1, count: 3}})
    tally.placed('a', 0, 500, 560, 4)
    tally.placed('a', 0, 100, 120, 2)
    tally.placed('a', 0, -1, -1, 1)
    tally.placed('b', 2, 7, 7, 1)
    assert.deepEqual(tally.partitionSummary(), {'a:0': {first: 100, last: 560, count: 10}, 'b:2': {first: 7, last: 7, count: 1}})
  })
})

describe('TokenBucket', () => {
  it('take() lets one message through at once, then paces at the rate', () => {
    const bucket = new TokenBucket(10, 0) // 10/s: one every 100 ms, a burst of one
    assert.equal(bucket.take(0), 0)
    assert.equal(bucket.take(0), 100, 'the next one waits 100 ms')
    assert.equal(bucket.take(100), 100, 'still in debt by one token')
    assert.equal(bucket.take(400), 0)
  })

  it(`take() after a long pause allows a burst of ${RATE_BURST_MS} ms of messages, no more`, () => {
    const bucket = new TokenBucket(1000, 0)
    let passed = 0
    while (bucket.take(60_000) === 0) passed++
    assert.equal(passed, (1000 * RATE_BURST_MS) / 1000)
  })
})

describe('formatRate (the summary of meta send)', () => {
  it('reads right at any speed: two significant digits below 100 msg/s, whole numbers with separators above', () => {
    assert.equal(formatRate(6 / 27.4), '0.22')
    assert.equal(formatRate(0.0012), '0.0012')
    assert.equal(formatRate(5.55), '5.5')
    assert.equal(formatRate(32.4), '32')
    assert.equal(formatRate(99.7), '100')
    assert.equal(formatRate(24_390.2), '24,390')
    assert.equal(formatRate(0), '0')
  })
})
