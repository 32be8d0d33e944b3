/**
 * A single-consumer async queue: producers push items, one `for await` loop pulls them.
 * Iterating it twice throws (two loops would silently split the items between them).
 * `end()` finishes the loop after the queued items; `end(error)` drops them and makes the
 * loop throw `error` (at once if it is waiting, or at its next step).
 *
 * Back-pressure: the queue has a high-water mark (items; default
 * {@link DEFAULT_QUEUE_HIGH_WATER_MARK}). `push()` always queues, and returns false, as
 * {@link QueuedIterator.wantsMore} does, once the mark is reached: a writer stops producing
 * then and resumes on `onDrain` (called when the reader has taken the queue down to half the
 * mark, or is waiting on an empty queue).
 */
import {MetaError} from '../protocol/errors.js'

/** The high-water mark of a QueuedIterator created without one, in items. */
export const DEFAULT_QUEUE_HIGH_WATER_MARK = 1024
/** The largest high-water mark a QueuedIterator accepts, in items. */
export const MAX_QUEUE_HIGH_WATER_MARK = 1_048_576

export class QueuedIterator<T> implements AsyncIterable<T> {
  private items: T[] = []
  private head = 0
  private waiter: {resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void} | undefined
  private done = false
  private error: Error | undefined
  private iterated = false
  /** Called whenever the queue was drained below its high-water mark by the reader. */
  onDrain: (() => void) | undefined

  /**
   * `highWaterMark`: items queued before the queue stops wanting more, a whole number in
   * 1..{@link MAX_QUEUE_HIGH_WATER_MARK}; throws INVALID_ARGUMENT otherwise.
   */
  constructor(private readonly highWaterMark = DEFAULT_QUEUE_HIGH_WATER_MARK) {
    if (!Number.isInteger(highWaterMark) || highWaterMark < 1 || highWaterMark > MAX_QUEUE_HIGH_WATER_MARK) {
      throw MetaError.invalidArgument(`invalid queue high-water mark "${highWaterMark}": expected a whole number of items in 1..${MAX_QUEUE_HIGH_WATER_MARK}`)
    }
  }

  get length(): number {
    return this.items.length - this.head
  }

  /** True while the queue holds fewer items than its high-water mark. */
  get wantsMore(): boolean {
    return this.length < this.highWaterMark
  }

  /** Queue an item (ignored after end()); returns {@link wantsMore}: false = stop writing until onDrain. */
  push(item: T): boolean {
    if (this.done) return false
    if (this.waiter !== undefined) {
      const waiter = this.waiter
      this.waiter = undefined
      waiter.resolve({value: item, done: false})
      return true
    }
    this.items.push(item)
    return this.length < this.highWaterMark
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
