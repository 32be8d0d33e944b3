/** QueuedIterator: the single-reader queue under every consumer iterator. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {DEFAULT_QUEUE_HIGH_WATER_MARK, MAX_QUEUE_HIGH_WATER_MARK, QueuedIterator} from '../../src/client/queued-iterator.js'

describe('QueuedIterator', () => {
  it('end(error) makes a waiting for-await loop throw the error', async () => {
    const queue = new QueuedIterator<number>()
    const seen: number[] = []
    const loop = (async () => {
      for await (const n of queue) seen.push(n)
    })()
    queue.push(1)
    await new Promise((resolve) => setImmediate(resolve)) // the loop is now waiting for more
    queue.end(new Error('broker said no'))
    await assert.rejects(loop, /broker said no/)
    assert.deepEqual(seen, [1])
  })

  it('end(error) before the loop asks makes its next step throw, dropping queued items', async () => {
    const queue = new QueuedIterator<number>()
    queue.push(1)
    queue.push(2)
    queue.end(new Error('fatal'))
    const iterator = queue[Symbol.asyncIterator]()
    await assert.rejects(iterator.next(), /fatal/)
    assert.deepEqual(await iterator.next(), {value: undefined, done: true}, 'thrown once, then done')
  })

  it('end() without an error finishes after the queued items', async () => {
    const queue = new QueuedIterator<number>()
    queue.push(1)
    queue.push(2)
    queue.end()
    queue.push(3) // ignored after end
    const seen: number[] = []
    for await (const n of queue) seen.push(n)
    assert.deepEqual(seen, [1, 2])
  })

  it('throws when iterated twice', () => {
    const queue = new QueuedIterator<number>()
    queue[Symbol.asyncIterator]()
    assert.throws(() => queue[Symbol.asyncIterator](), /already being consumed/)
  })

  it(`stops wanting more at DEFAULT_QUEUE_HIGH_WATER_MARK (${DEFAULT_QUEUE_HIGH_WATER_MARK}) items when given no mark`, () => {
    const queue = new QueuedIterator<number>()
    for (let i = 0; i < DEFAULT_QUEUE_HIGH_WATER_MARK - 1; i++) assert.equal(queue.push(i), true, `item ${i}`)
    assert.equal(queue.push(-1), false, 'the item that reaches the mark')
    assert.equal(queue.wantsMore, false)
    assert.equal(queue.length, DEFAULT_QUEUE_HIGH_WATER_MARK, 'push() still queues past the mark')
  })

  it('calls onDrain once the reader takes it down to half its mark', async () => {
    const queue = new QueuedIterator<number>(4)
    let drains = 0
    queue.onDrain = () => drains++
    for (let i = 0; i < 4; i++) queue.push(i)
    assert.equal(queue.wantsMore, false)
    const iterator = queue[Symbol.asyncIterator]()
    await iterator.next()
    assert.equal(drains, 0, 'three left: above half')
    await iterator.next()
    assert.equal(drains, 1, 'two left: half the mark')
    assert.equal(queue.wantsMore, true)
  })

  it('refuses a high-water mark outside 1..MAX_QUEUE_HIGH_WATER_MARK with INVALID_ARGUMENT', () => {
    for (const mark of [0, -1, 1.5, Number.POSITIVE_INFINITY, Number.NaN, MAX_QUEUE_HIGH_WATER_MARK + 1]) {
      assert.throws(() => new QueuedIterator<number>(mark), {code: 'INVALID_ARGUMENT', message: /invalid queue high-water mark/}, String(mark))
    }
    assert.equal(new QueuedIterator<number>(MAX_QUEUE_HIGH_WATER_MARK).wantsMore, true)
  })
})
