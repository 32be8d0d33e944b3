/**
 * The byte offset of a followed file up to which every line needs no sending again. Lines are
 * added in file order with their end offsets; done() may come in any order (lines go to several
 * partitions), and the offset moves only over a run of done lines, so a restart from it resends
 * nothing that was settled and skips nothing that was not.
 */
import assert from 'node:assert'

export class LineTracker {
  /** End offsets of the lines not yet part of the settled run, oldest first (from `head`). */
  private ends: number[] = []
  private settled: boolean[] = []
  private head = 0
  /** Line index (the splitter's, from 1) of ends[head]. */
  private firstIndex = 1

  /** @param offset where the first line starts */
  constructor(public offset: number) {}

  /** Lines added and not yet in the settled run. */
  get pending(): number {
    return this.ends.length - this.head
  }

  /** Line `index` (the next one in order) ends at byte `end`. */
  add(index: number, end: number): void {
    assert(index === this.firstIndex + this.pending, `line ${index} added out of order`)
    this.ends.push(end)
    this.settled.push(false)
  }

  /** Line `index` needs no sending again; returns whether `offset` moved. */
  done(index: number): boolean {
    const i = this.head + index - this.firstIndex
    if (i < this.head || i >= this.ends.length) return false // settled before (the spool's ack after its store)
    this.settled[i] = true
    if (i !== this.head) return false
    while (this.head < this.ends.length && this.settled[this.head]) {
      this.offset = this.ends[this.head]
      this.head += 1
      this.firstIndex += 1
    }
    if (this.head === this.ends.length || this.head >= 4096) {
      this.ends = this.ends.slice(this.head)
      this.settled = this.settled.slice(this.head)
      this.head = 0
    }
    return true
  }
}
