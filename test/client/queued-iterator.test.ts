/** QueuedIterator: the single-reader queue under every consumer iterator. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {QueuedIterator} from '../../src/client/queued-iterator.js'

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
})
