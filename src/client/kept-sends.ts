/**
 * The sends a producer keeps for a SpoolingProducer (Producer.sendKept): unanswered, in send
 * order, so that an outage or close() can hand them to a spool (Producer.handOver).
 *
 * A ring of references to the send tasks themselves. A send takes the next slot and remembers
 * its index; its answer clears that slot, in any order (partitions are answered separately).
 * The oldest end moves past cleared slots only when the ring wraps, so keeping a send costs two
 * stores and answering it two more, with no allocation or call of their own.
 *
 * The ring's array is made anew each time it wraps (the kept slots copied over), so it stays in
 * V8's young generation: storing a young task into an array promoted to the old generation
 * takes the write barrier's slow path and adds a slot every scavenge visits, as a list linked
 * through the tasks would on every message.
 */

/** What the ring keeps on each item. */
export interface KeptLink {
  /** Index of the item's slot while it is kept (not yet answered nor handed over), else -1. */
  keptAt: number
}

/** Slots at first (the ring doubles when full: sends may run past the producer's window). */
const INITIAL_CAPACITY = 1024
/** Indexes run modulo this (2^30: a small integer in V8, and above any capacity). */
const INDEX_MASK = 2 ** 30 - 1

export class KeptSends<T extends KeptLink> {
  private capacity = INITIAL_CAPACITY
  private mask = INITIAL_CAPACITY - 1
  private slots: Array<T | undefined> = new Array(INITIAL_CAPACITY).fill(undefined)
  /** Index of the oldest slot that may be in use, and of the next. */
  private head: number
  private tail: number
  private count = 0

  /** `firstIndex`: the first slot index (tests start near the wrap of INDEX_MASK). */
  constructor(firstIndex = 0) {
    this.head = this.tail = firstIndex & INDEX_MASK
  }

  /** Items kept. */
  get size(): number {
    return this.count
  }

  /** Add at the newest end. */
  add(item: T): void {
    const index = this.tail
    if ((index & this.mask) === 0 || ((index - this.head) & INDEX_MASK) === this.capacity) this.wrap()
    item.keptAt = index
    this.slots[index & this.mask] = item
    this.tail = (index + 1) & INDEX_MASK
    this.count += 1
  }

  /** Take an item out, wherever it is. */
  remove(item: T): void {
    this.slots[item.keptAt & this.mask] = undefined
    item.keptAt = -1
    this.count -= 1
  }

  /** Items kept, oldest first, for which `match` holds; `visit` may remove the item it is given. */
  forEach(match: (item: T) => boolean, visit: (item: T) => void): void {
    for (let i = this.head; i !== this.tail; i = (i + 1) & INDEX_MASK) {
      const item = this.slots[i & this.mask]
      if (item !== undefined && match(item)) visit(item)
    }
  }

  /**
   * The ring wraps or is full: the oldest end moves past cleared slots, the ring doubles if it
   * is still full, and the kept slots move to a new array (see the top of the file).
   */
  private wrap(): void {
    let head = this.head
    while (head !== this.tail && this.slots[head & this.mask] === undefined) head = (head + 1) & INDEX_MASK
    this.head = head
    const full = ((this.tail - head) & INDEX_MASK) === this.capacity
    const capacity = full ? this.capacity * 2 : this.capacity
    const mask = capacity - 1
    const slots: Array<T | undefined> = new Array(capacity).fill(undefined)
    for (let i = head; i !== this.tail; i = (i + 1) & INDEX_MASK) slots[i & mask] = this.slots[i & this.mask]
    this.capacity = capacity
    this.mask = mask
    this.slots = slots
  }
}
