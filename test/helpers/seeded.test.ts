/**
 * The seeded runs of the model-based and permutation tests (seeded.ts): the same seed draws
 * the same choices, META_TEST_SEED replays one seed, and a failure names its seed, the command
 * that replays it and the last steps.
 */
import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {Random, seeds, withSeed} from './seeded.js'

describe('seeded runs', () => {
  it('a seed draws the same choices every time', () => {
    const draw = (seed: number) => {
      const random = new Random(seed)
      return [random.int(0, 1000), random.pick(['a', 'b', 'c']), random.weighted({x: 1, y: 5}), random.bytes(4).toString('hex'), random.chance(0.5)]
    }
    assert.deepEqual(draw(42), draw(42))
    assert.notDeepEqual(draw(42), draw(43))
    const random = new Random(7)
    for (let i = 0; i < 1000; i++) {
      const n = random.int(-3, 3)
      assert.ok(Number.isInteger(n) && n >= -3 && n <= 3, `int(-3, 3) gave ${n}`)
    }
  })

  it('META_TEST_SEED replays one seed; without it the seeds are new each run', (t) => {
    const saved = process.env.META_TEST_SEED
    t.after(() => {
      if (saved === undefined) delete process.env.META_TEST_SEED
      else process.env.META_TEST_SEED = saved
    })
    process.env.META_TEST_SEED = '12345'
    assert.deepEqual(seeds({ci: 3, all: 10}), [12345])
    process.env.META_TEST_SEED = 'x'
    assert.throws(() => seeds({ci: 3, all: 10}), /invalid META_TEST_SEED "x": expected an integer/)
    delete process.env.META_TEST_SEED
    const drawn = seeds({ci: 3, all: 10})
    assert.equal(drawn.length, 3)
    assert.equal(new Set(drawn).size, 3)
  })

  it('a failure names the seed, the replay command and the last steps', async () => {
    const failure = await withSeed(import.meta.url, 99, (random, steps) => {
      for (let i = 0; i < 20; i++) steps.step(`op ${i}`)
      assert.equal(random.int(0, 0), 1, 'the check that fails')
    }).then(
      () => undefined,
      (error: unknown) => error as Error,
    )
    assert.ok(failure instanceof Error)
    assert.match(failure.message, /^the check that fails\n/)
    assert.match(failure.message, /seed 99, after 20 steps; replay: META_TEST_SEED=99 npm test -- test\/helpers\/seeded\.test\.ts\n/)
    assert.match(failure.message, /last steps:\n {2}9: op 8\n[^]* {2}20: op 19$/)
    assert.doesNotMatch(failure.message, /op 7\n/, 'only the last twelve steps')
    assert.match(failure.stack ?? '', /seed 99, after 20 steps/, 'the stack the reporter prints says it too')
  })
})
