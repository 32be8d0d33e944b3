/**
 * The spooling producer's FIFO (src/client/spool/queue.ts) against a plain array: random
 * sequences of push, shift (also on an empty queue), pop (take back the last push), peek and
 * drain, with bursts long enough to cross the point where the queue compacts its array (4096
 * shifted items). After every step its length and head are the model's; drain hands back
 * exactly the model's items in order. A failure names the seed (META_TEST_SEED=<seed> replays it).
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {Queue} from '../../src/client/spool/queue.js'
import {scaleFor, seeds, withSeed} from '../helpers/seeded.js'

const OPERATIONS = {push: 40, shift: 30, pop: 6, peek: 6, drain: 1, 'push burst': 2, 'shift burst': 2}

for (const seed of seeds({ci: 5, all: 40})) {
  test(`Queue follows an array through a random sequence of operations (seed ${seed})`, () =>
    withSeed(import.meta.url, seed, (random, steps) => {
      const initial = Array.from({length: random.pick([0, 0, random.int(1, 5000)])}, (_, i) => -i - 1)
      steps.step(`start with ${initial.length} items`)
      const queue = new Queue<number>([...initial])
      // The model keeps a moving head too, so that a shift costs what it costs the queue.
      const model: number[] = [...initial]
      let head = 0
      let next = 0
      const count = scaleFor({ci: 20_000, all: 200_000})
      for (let i = 0; i < count; i++) {
        const op = random.weighted(OPERATIONS)
        const n = op === 'push burst' || op === 'shift burst' ? random.int(1000, 9000) : 1
        steps.step(n > 1 ? `${op} of ${n}` : op)
        if (op === 'push' || op === 'push burst') {
          for (let j = 0; j < n; j++) {
            queue.push(next)
            model.push(next++)
          }
        } else if (op === 'shift' || op === 'shift burst') {
          for (let j = 0; j < n; j++) {
            assert.equal(queue.peek(), model[head], 'the head before a shift')
            queue.shift()
            if (head < model.length) head += 1
          }
        } else if (op === 'pop') {
          queue.pop()
          if (model.length > head) model.pop()
        } else if (op === 'drain') {
          assert.deepEqual(queue.drain(), model.slice(head), 'drain hands back every item in order')
          model.length = 0
          head = 0
        }
        assert.equal(queue.length, model.length - head, 'length')
        assert.equal(queue.peek(), model[head], 'head')
      }
      assert.deepEqual(queue.drain(), model.slice(head))
      assert.equal(queue.length, 0)
      assert.equal(queue.peek(), undefined)
    }))
}
