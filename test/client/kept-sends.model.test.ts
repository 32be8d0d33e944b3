/**
 * KeptSends, the ring of a producer's unanswered sends, against a plain array in add order:
 * random sequences of adds, removals anywhere (oldest, newest, any), bursts that make the ring
 * grow behind a stuck oldest item or wrap, and forEach with a filter whose visitor removes some
 * of the items it is given; the ring's first index is drawn near the 2^30 wrap of its
 * indexes too. After every step the size, each item's keptAt, and (while the ring is small, or
 * every few steps) the whole enumeration are the model's. A failure names the seed
 * (META_TEST_SEED=<seed> replays it).
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {KeptSends} from '../../src/client/kept-sends.js'
import {scaleFor, seeds, withSeed, type Random} from '../helpers/seeded.js'

interface Item {
  keptAt: number
  name: number
}

const OPERATIONS = {add: 40, remove: 25, 'remove oldest': 6, 'remove newest': 4, forEach: 6, 'add burst': 2, 'remove burst': 2, check: 5}

/** The model: the kept items in add order (a Map keeps insertion order), and a pool to draw from. */
class Model {
  private readonly ordered = new Map<Item, true>()
  private readonly pool: Item[] = []
  private readonly at = new Map<Item, number>()

  get size(): number {
    return this.ordered.size
  }

  add(item: Item): void {
    this.ordered.set(item, true)
    this.at.set(item, this.pool.length)
    this.pool.push(item)
  }

  remove(item: Item): void {
    this.ordered.delete(item)
    const i = this.at.get(item) as number
    const last = this.pool.pop() as Item
    if (last !== item) {
      this.pool[i] = last
      this.at.set(last, i)
    }
    this.at.delete(item)
  }

  pick(random: Random): Item {
    return random.pick(this.pool)
  }

  inOrder(): Item[] {
    return [...this.ordered.keys()]
  }
}

function enumerate(ring: KeptSends<Item>): number[] {
  const names: number[] = []
  ring.forEach(
    () => true,
    (item) => names.push(item.name),
  )
  return names
}

for (const seed of seeds({ci: 5, all: 30})) {
  test(`KeptSends follows an array in add order through a random sequence of operations (seed ${seed})`, () =>
    withSeed(import.meta.url, seed, (random: Random, steps) => {
      const first = random.pick([0, 2 ** 30 - random.int(1, 3000), random.int(0, 2 ** 30 - 1)])
      steps.step(`first index ${first}`)
      const ring = new KeptSends<Item>(first)
      const model = new Model()
      const gone: Item[] = []
      let next = 0
      const add = () => {
        const item = {keptAt: -1, name: next++}
        ring.add(item)
        model.add(item)
      }
      const remove = (item: Item) => {
        ring.remove(item)
        model.remove(item)
        gone.push(item)
      }
      const count = scaleFor({ci: 3000, all: 20_000})
      for (let i = 0; i < count; i++) {
        const op = random.weighted(OPERATIONS)
        if (op === 'add') {
          steps.step('add')
          add()
        } else if (op === 'add burst') {
          const n = random.int(500, 5000)
          steps.step(`add ${n}`)
          for (let j = 0; j < n; j++) add()
        } else if (model.size === 0) {
          steps.step(`${op} on an empty ring`)
        } else if (op === 'remove') {
          const item = model.pick(random)
          steps.step(`remove ${item.name}`)
          remove(item)
        } else if (op === 'remove oldest') {
          const oldest = model.inOrder()[0]
          steps.step(`remove the oldest, ${oldest.name}`)
          remove(oldest)
        } else if (op === 'remove newest') {
          const newest = model.inOrder().at(-1) as Item
          steps.step(`remove the newest, ${newest.name}`)
          remove(newest)
        } else if (op === 'remove burst') {
          // Answers for all but a few: the oldest often among those left (a stuck send).
          const keep = new Set(Array.from({length: random.int(0, 5)}, () => model.pick(random)))
          steps.step(`remove all but ${keep.size}`)
          for (const item of model.inOrder()) if (!keep.has(item)) remove(item)
        } else if (op === 'forEach') {
          const modulus = random.int(1, 5)
          const residue = random.int(0, modulus - 1)
          const match = (item: Item) => item.name % modulus === residue
          const removeWhen = random.pick([0, 0.5, 1])
          steps.step(`forEach name % ${modulus} === ${residue}, removing ${removeWhen * 100}% of those visited`)
          const expected = model.inOrder().filter(match)
          const visited: Item[] = []
          const removed: Item[] = []
          ring.forEach(match, (item) => {
            visited.push(item)
            if (random.chance(removeWhen)) {
              ring.remove(item)
              removed.push(item)
            }
          })
          assert.deepEqual(
            visited.map((item) => item.name),
            expected.map((item) => item.name),
            'forEach visits the matching items in add order',
          )
          for (const item of removed) model.remove(item)
          gone.push(...removed)
        } else {
          steps.step('check')
        }
        assert.equal(ring.size, model.size, 'size')
        if (model.size < 300 || op === 'check' || i % 50 === 0) {
          const kept = model.inOrder()
          assert.deepEqual(
            enumerate(ring),
            kept.map((item) => item.name),
            'the kept items, in add order',
          )
          assert.ok(
            kept.every((item) => item.keptAt >= 0),
            'a kept item knows its slot',
          )
        }
        for (const item of gone.splice(0)) assert.equal(item.keptAt, -1, `removed item ${item.name} holds no slot`)
      }
      assert.deepEqual(
        enumerate(ring),
        model.inOrder().map((item) => item.name),
      )
    }))
}
