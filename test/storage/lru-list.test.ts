import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {LruList, type LruEntry} from '../../src/storage/lru-list.js'

class Entry implements LruEntry<Entry> {
  lruPrev: Entry | undefined = undefined
  lruNext: Entry | undefined = undefined
  inLru = false
  constructor(readonly name: string) {}
}

const order = (list: LruList<Entry>) => [...list.oldestFirst()].map((e) => e.name)

describe('LruList', () => {
  it('keeps entries least recently used first; touch moves one to the end', () => {
    const list = new LruList<Entry>()
    const [a, b, c] = ['a', 'b', 'c'].map((n) => new Entry(n))
    for (const e of [a, b, c]) list.touch(e)
    assert.deepEqual(order(list), ['a', 'b', 'c'])
    list.touch(a)
    assert.deepEqual(order(list), ['b', 'c', 'a'])
    list.touch(a)
    assert.deepEqual(order(list), ['b', 'c', 'a'])
    list.touch(c)
    assert.deepEqual(order(list), ['b', 'a', 'c'])
    assert.equal(list.size, 3)
  })

  it('removes from the front, the middle and the end, and says whether it held the entry', () => {
    const list = new LruList<Entry>()
    const entries = ['a', 'b', 'c', 'd'].map((n) => new Entry(n))
    for (const e of entries) list.touch(e)
    assert.equal(list.remove(entries[1]), true)
    assert.equal(list.remove(entries[1]), false)
    assert.deepEqual(order(list), ['a', 'c', 'd'])
    assert.equal(list.remove(entries[0]), true)
    assert.equal(list.remove(entries[3]), true)
    assert.deepEqual(order(list), ['c'])
    assert.equal(list.remove(entries[2]), true)
    assert.deepEqual(order(list), [])
    assert.equal(list.size, 0)
    list.touch(entries[3])
    assert.deepEqual(order(list), ['d'])
  })

  it('lets a walk remove the entry it is at (cache eviction)', () => {
    const list = new LruList<Entry>()
    const entries = ['a', 'b', 'c', 'd', 'e'].map((n) => new Entry(n))
    for (const e of entries) list.touch(e)
    const seen: string[] = []
    for (const e of list.oldestFirst()) {
      seen.push(e.name)
      if (e.name !== 'c') list.remove(e)
    }
    assert.deepEqual(seen, ['a', 'b', 'c', 'd', 'e'])
    assert.deepEqual(order(list), ['c'])
    assert.equal(list.size, 1)
  })

  it('agrees with a Map used as an LRU over random operations', () => {
    const list = new LruList<Entry>()
    const model = new Map<Entry, true>()
    const entries = Array.from({length: 20}, (_, i) => new Entry(String(i)))
    let seed = 7
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (let step = 0; step < 5000; step += 1) {
      const e = entries[random(entries.length)]
      if (random(3) === 0) {
        assert.equal(list.remove(e), model.delete(e))
      } else {
        list.touch(e)
        model.delete(e)
        model.set(e, true)
      }
      assert.equal(list.size, model.size)
    }
    assert.deepEqual(
      order(list),
      [...model.keys()].map((e) => e.name),
    )
  })
})
