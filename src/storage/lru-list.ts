/**
 * A least-recently-used order kept in the entries themselves (a doubly linked list through
 * `lruPrev`/`lruNext`): touching, adding and removing an entry allocate nothing.
 *
 * Not a `Map` (delete + set to move an entry to the end): with 10,000 partitions that is
 * 10,000s of entries, and a Map whose entries keep moving re-hashes its table every few
 * thousand touches, a new table of several hundred KiB each time, allocated straight into
 * the old generation, so only a full GC frees it. With puts spread over 10,000 partitions
 * that garbage would be a good part of the broker's peak RSS (docs/benchmarks.md).
 */
export interface LruEntry<T> {
  lruPrev: T | undefined
  lruNext: T | undefined
  inLru: boolean
}

export class LruList<T extends LruEntry<T>> {
  private oldest: T | undefined
  private newest: T | undefined
  private count = 0

  get size(): number {
    return this.count
  }

  /** Add `entry` as the most recently used, or move it there. */
  touch(entry: T): void {
    if (entry.inLru) {
      if (entry === this.newest) return
      this.unlink(entry)
    }
    entry.lruPrev = this.newest
    entry.lruNext = undefined
    if (this.newest === undefined) this.oldest = entry
    else this.newest.lruNext = entry
    this.newest = entry
    entry.inLru = true
    this.count += 1
  }

  /** Take `entry` out; false when it was not in the list. */
  remove(entry: T): boolean {
    if (!entry.inLru) return false
    this.unlink(entry)
    return true
  }

  /**
   * Entries from least to most recently used. The entry just returned may be removed before
   * the next one is asked for; other changes during the walk are not allowed.
   */
  *oldestFirst(): Generator<T> {
    let entry = this.oldest
    while (entry !== undefined) {
      const next: T | undefined = entry.lruNext
      yield entry
      entry = next
    }
  }

  private unlink(entry: T): void {
    const {lruPrev: prev, lruNext: next} = entry
    if (prev === undefined) this.oldest = next
    else prev.lruNext = next
    if (next === undefined) this.newest = prev
    else next.lruPrev = prev
    entry.lruPrev = undefined
    entry.lruNext = undefined
    entry.inLru = false
    this.count -= 1
  }
}
