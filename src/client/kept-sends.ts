/**
 * The sends a producer keeps for a SpoolingProducer (Producer.sendKept): unanswered, in send
 * order, so that an outage or close() can hand them to a spool (Producer.handOver).
 *
 * An intrusive doubly linked list through the send tasks themselves: a send links itself at
 * the newest end and its answer unlinks it, in any order (partitions are answered separately),
 * so keeping a send costs a few stores and no array slot, allocation or call of its own (the
 * spooling layer's own ring of slots it replaces cost ~400–500 instructions per message).
 */

/** What the list threads through: the fields it owns on each item. */
export interface KeptLink<T> {
  /** In the list: kept, not yet answered nor handed over. */
  kept: boolean
  older: T | undefined
  newer: T | undefined
}

export class KeptSends<T extends KeptLink<T>> {
  private oldest: T | undefined
  private newest: T | undefined
  private count = 0

  /** Items in the list. */
  get size(): number {
    return this.count
  }

  /** Add at the newest end. */
  add(item: T): void {
    const newest = this.newest
    item.kept = true
    item.older = newest
    item.newer = undefined
    if (newest === undefined) this.oldest = item
    else newest.newer = item
    this.newest = item
    this.count += 1
  }

  /** Take an item out, wherever it is. */
  remove(item: T): void {
    const {older, newer} = item
    if (older === undefined) this.oldest = newer
    else older.newer = newer
    if (newer === undefined) this.newest = older
    else newer.older = older
    item.kept = false
    this.count -= 1
  }

  /** Items oldest first, for which `match` holds; `visit` may remove the item it is given. */
  forEach(match: (item: T) => boolean, visit: (item: T) => void): void {
    for (let item = this.oldest; item !== undefined; ) {
      const newer = item.newer
      if (match(item)) visit(item)
      item = newer
    }
  }
}
