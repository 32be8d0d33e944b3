/**
 * A single-consumer async queue: producers push items, one `for await` loop pulls them.
 * Iterating it twice throws (two loops would silently split the items between them).
 * `end()` finishes the loop after the queued items; `end(error)` drops them and makes the
 * loop throw `error` (at once if it is waiting, or at its next step).
 */
export class QueuedIterator<T> implements AsyncIterable<T> {
  private items: T[] = []
  private head = 0
  private waiter: {resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void} | undefined
  private done = false
  private error: Error | undefined
  private iterated = false
  /** Called whenever the queue was drained below its high-water mark by the reader. */
  onDrain: (() => void) | undefined

  constructor(private readonly highWaterMark = Number.POSITIVE_INFINITY) {}

  get length(): number {
    return this.items.length - this.head
  }

  /** True while the queue holds fewer items than its high-water mark. */
  get wantsMore(): boolean {
    return this.length < this.highWaterMark
  }

  push(item: T): void {
    if (this.done) return
    if (this.waiter !== undefined) {
      const waiter = this.waiter
      this.waiter = undefined
      waiter.resolve({value: item, done: false})
      return
    }
    this.items.push(item)
  }

  /** End the iteration after the queued items, or with an error (queued items are dropped). */
  end(error?: Error): void {
    if (this.done) return
    this.done = true
    if (error !== undefined) {
      this.items = []
      this.head = 0
      this.error = error
    }
    const waiter = this.waiter
    if (waiter === undefined) return
    // A waiting reader means the queue is empty: settle it now.
    this.waiter = undefined
    if (this.error === undefined) {
      waiter.resolve({value: undefined, done: true})
      return
    }
    this.error = undefined
    waiter.reject(error!)
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.iterated) throw new Error('this iterator is already being consumed')
    this.iterated = true
    return {
      next: () => this.next(),
      return: async () => {
        this.end()
        this.items = []
        this.head = 0
        return {value: undefined, done: true}
      },
    }
  }

  private next(): Promise<IteratorResult<T>> {
    if (this.error !== undefined) {
      const error = this.error
      this.error = undefined
      return Promise.reject(error)
    }
    if (this.length > 0) {
      const value = this.items[this.head]
      this.items[this.head++] = undefined as T // release it: consumed slots stay until the next compaction
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head)
        this.head = 0
      }
      if (this.onDrain !== undefined && this.length === Math.floor(this.highWaterMark / 2)) this.onDrain()
      return Promise.resolve({value, done: false})
    }
    if (this.done) return Promise.resolve({value: undefined, done: true})
    if (this.onDrain !== undefined) this.onDrain()
    return new Promise((resolve, reject) => {
      this.waiter = {resolve, reject}
    })
  }
}
