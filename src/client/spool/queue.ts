/** A FIFO with O(1) shift (Array#shift moves every element of a large array). */
export class Queue<T> {
  private items: T[]
  private head = 0

  constructor(items: T[] = []) {
    this.items = items
  }

  get length(): number {
    return this.items.length - this.head
  }

  peek(): T | undefined {
    return this.items[this.head]
  }

  push(item: T): void {
    this.items.push(item)
  }

  /** Take back the item pushed last (a send refused before it left). */
  pop(): void {
    if (this.items.length > this.head) this.items.pop()
  }

  shift(): void {
    this.head += 1
    if (this.head >= this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head >= 4096 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }

  /** Every item, oldest first; the queue is empty after. */
  drain(): T[] {
    const out = this.items.slice(this.head)
    this.items = []
    this.head = 0
    return out
  }
}
