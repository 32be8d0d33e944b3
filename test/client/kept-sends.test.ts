/**
 * KeptSends, the ring of a producer's kept sends: items leave in any order, enumeration is in
 * add order, and that holds while the ring wraps, doubles behind a stuck oldest item, and its
 * indexes wrap at 2^30.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {KeptSends} from '../../src/client/kept-sends.js'

interface Item {
  keptAt: number
  name: number
}

function kept(ring: KeptSends<Item>): number[] {
  const names: number[] = []
  ring.forEach(
    () => true,
    (item) => names.push(item.name),
  )
  return names
}

function fill(ring: KeptSends<Item>, from: number, count: number): Item[] {
  const items: Item[] = []
  for (let name = from; name < from + count; name++) {
    const item = {keptAt: -1, name}
    ring.add(item)
    items.push(item)
  }
  return items
}

describe('KeptSends', () => {
  it('enumerates in add order while items leave out of order, across wraps and growth', () => {
    for (const first of [0, 2 ** 30 - 700]) {
      const ring = new KeptSends<Item>(first)
      const items = fill(ring, 0, 5000)
      // Even items answered, odd ones still out: the ring must hold a span wider than its first size.
      for (const item of items) if (item.name % 2 === 0) ring.remove(item)
      assert.equal(ring.size, 2500)
      const more = fill(ring, 5000, 3000)
      assert.deepEqual(
        kept(ring),
        [...items.filter((item) => item.name % 2 === 1), ...more].map((item) => item.name),
        `first index ${first}`,
      )
      for (const item of items) if (item.name % 2 === 1) ring.remove(item)
      assert.deepEqual(
        kept(ring),
        more.map((item) => item.name),
      )
      assert.ok(items.every((item) => item.keptAt === -1))
    }
  })

  it('keeps the oldest item while it stays unanswered and many after it come and go', () => {
    const ring = new KeptSends<Item>()
    const [stuck] = fill(ring, 0, 1)
    for (let name = 1; name < 10_000; name++) {
      const [item] = fill(ring, name, 1)
      if (name % 10 !== 0) ring.remove(item!)
    }
    const names = kept(ring)
    assert.equal(names[0], stuck!.name)
    assert.deepEqual(names.slice(1, 4), [10, 20, 30])
    assert.equal(names.length, 1000)
  })

  it('visit may remove the item it is given', () => {
    const ring = new KeptSends<Item>()
    fill(ring, 0, 10)
    ring.forEach(
      (item) => item.name % 3 === 0,
      (item) => ring.remove(item),
    )
    assert.deepEqual(kept(ring), [1, 2, 4, 5, 7, 8])
    assert.equal(ring.size, 6)
  })
})
