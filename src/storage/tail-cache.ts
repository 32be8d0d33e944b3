/**
 * The in-memory tail of each partition log, which doubles as its pending-append buffer.
 *
 * `append` copies each record once, into the partition's current {@link CacheBlock}; the
 * end-of-turn write sends the block's pending range to the segment; from then on those bytes
 * are immutable and reads of the recently written tail are served as views of the block
 * (consumers tailing the head never touch the disk). A block is never written again below
 * its `written` mark, so a view handed to a reader stays valid after eviction.
 *
 * Memory: one global budget ({@link TailCache}) over all partitions; least recently used
 * blocks without pending bytes are dropped first. Blocks grow from 4 KiB (an idle partition
 * costs little) by doubling up to 1 MiB (a busy one makes few allocations).
 *
 * Recycling: an evicted full-size block with no view of it out (see {@link CacheBlock.leases})
 * keeps its buffer in a small spare pool (at most 1/16 of the budget) for the next block. Without
 * it a busy partition would allocate a fresh 1 MiB buffer per MiB appended; V8 counts such buffers
 * as external memory, and that churn runs a full mark-compact every few tens of milliseconds, a
 * large share of the broker's work on 1 KiB puts. Every view {@link PartitionTail.slice} hands out
 * is a lease on its block: a reader that knows when it is done with the bytes calls the returned
 * `release` (the get handler: once the reply is copied, or once its socket write has completed); a
 * reader that never does (a replica, a transaction check) pins the block, which is then left to the
 * GC after eviction. A buffer is never reused while a lease is out.
 */
import assert from 'node:assert'
import {LruList, type LruEntry} from './lru-list.js'
import {readBuffers} from './read-buffers.js'

/** Size of a partition's first block, and again after its blocks were evicted. */
const TAIL_BLOCK_MIN_BYTES = 4 * 1024
/** Blocks stop growing at this size (a single larger record gets a block of its size). */
export const TAIL_BLOCK_MAX_BYTES = 1024 * 1024

/** A run of log bytes starting at log offset `start`. */
export class CacheBlock implements LruEntry<CacheBlock> {
  lruPrev: CacheBlock | undefined = undefined
  lruNext: CacheBlock | undefined = undefined
  inLru = false
  /** Bytes [0, written) are on disk and immutable. */
  written = 0
  /** Bytes [written, filled) are appended but not yet written. */
  filled = 0
  /**
   * Views of `buf` handed to readers ({@link PartitionTail.slice}) and not released: while
   * any is out the buffer is not recycled (at eviction, or when the last is released).
   */
  leases = 0
  /** Dropped from the cache (its buffer is recycled once no lease is out). */
  evicted = false
  /** A view of `buf` for writing record headers (see PartitionLog.append). */
  readonly view: DataView

  constructor(
    readonly buf: Buffer,
    readonly start: number,
    readonly owner: PartitionTail,
  ) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  }
}

/** The global byte budget and LRU order of every partition's blocks. */
export class TailCache {
  private readonly lru = new LruList<CacheBlock>()
  private usedBytes = 0
  /** Full-size buffers of evicted blocks no reader saw, for the next blocks. */
  private readonly spare: Buffer[] = []
  private readonly maxSpare: number

  constructor(readonly budgetBytes: number) {
    this.maxSpare = Math.floor(budgetBytes / 16 / TAIL_BLOCK_MAX_BYTES)
  }

  /** Buffers waiting in the spare pool (tests). */
  get spareBlocks(): number {
    return this.spare.length
  }

  /** A buffer for a new block of `bytes` bytes: a spare one when it is full-size. */
  allocate(bytes: number): Buffer {
    if (bytes === TAIL_BLOCK_MAX_BYTES && this.spare.length > 0) return this.spare.pop()!
    return Buffer.allocUnsafeSlow(bytes)
  }

  /** Keep an evicted block's buffer for reuse when no reader holds a view of it. */
  recycle(block: CacheBlock): void {
    if (block.leases === 0 && block.buf.length === TAIL_BLOCK_MAX_BYTES && this.spare.length < this.maxSpare) this.spare.push(block.buf)
  }

  /** Bytes held by blocks now. */
  get bytes(): number {
    return this.usedBytes
  }

  add(block: CacheBlock): void {
    if (!block.inLru) this.usedBytes += block.buf.length
    this.lru.touch(block)
  }

  touch(block: CacheBlock): void {
    if (block.inLru) this.lru.touch(block)
  }

  remove(block: CacheBlock): void {
    if (this.lru.remove(block)) this.usedBytes -= block.buf.length
  }

  /** Evict least recently used blocks that hold no pending bytes until within budget. */
  trim(): void {
    for (const block of this.lru.oldestFirst()) {
      if (this.usedBytes <= this.budgetBytes) return
      if (block.filled === block.written) block.owner.evict(block)
    }
  }
}

/** One partition's blocks, oldest first; they cover a contiguous range ending at the append end. */
export class PartitionTail {
  private blocks: CacheBlock[] = []
  private current: CacheBlock | undefined
  private nextBlockBytes = TAIL_BLOCK_MIN_BYTES

  constructor(private readonly cache: TailCache) {}

  /** The block to copy `bytes` bytes into at log offset `start` (the append end). */
  reserve(start: number, bytes: number): CacheBlock {
    const block = this.current
    if (block !== undefined && block.buf.length - block.filled >= bytes && block.start + block.filled === start) {
      return block
    }
    return this.grow(start, bytes)
  }

  /** Views of the pending bytes in [from, to), in order, for one gather write. */
  pending(from: number, to: number): Buffer[] {
    const pieces: Buffer[] = []
    for (let i = this.blocks.length - 1; i >= 0; i -= 1) {
      const block = this.blocks[i]
      const blockEnd = block.start + block.filled
      if (blockEnd <= from) break
      const lo = Math.max(from, block.start)
      const hi = Math.min(to, blockEnd)
      if (hi > lo) pieces.push(block.buf.subarray(lo - block.start, hi - block.start))
    }
    assert(pieces.reduce((sum, piece) => sum + piece.length, 0) === to - from, 'the tail holds every pending byte, without a gap')
    return pieces.reverse()
  }

  /** Everything appended is now written: make it readable from the cache. */
  commit(): void {
    for (let i = this.blocks.length - 1; i >= 0; i -= 1) {
      const block = this.blocks[i]
      if (block.written === block.filled) break
      block.written = block.filled
    }
    if (this.current !== undefined) this.cache.touch(this.current)
  }

  /**
   * Written bytes [from, to) when the cache holds all of them, else undefined. A view of a
   * block comes with `release`, to call once the view is no longer used (never calling it is
   * safe: the block is just not recycled); a copy (the range spans blocks) needs none, and
   * is a buffer of the read-buffer pool that its sender may give back (read-buffers.ts).
   */
  slice(from: number, to: number): {data: Buffer; release?: () => void} | undefined {
    let i = this.blocks.length - 1
    while (i >= 0 && this.blocks[i].start > from) i -= 1
    if (i < 0) return undefined
    const first = this.blocks[i]
    if (from >= first.start + first.written) return undefined
    this.cache.touch(first)
    if (to > first.start + first.written) {
      const data = this.gather(i, from, to)
      return data === undefined ? undefined : {data}
    }
    first.leases += 1
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      first.leases -= 1
      if (first.evicted) this.cache.recycle(first)
    }
    return {data: first.buf.subarray(from - first.start, to - first.start), release}
  }

  /** Drop every block (the log was truncated, or is closing). */
  clear(): void {
    for (const block of this.blocks) this.cache.remove(block)
    this.blocks = []
    this.current = undefined
    this.nextBlockBytes = TAIL_BLOCK_MIN_BYTES
  }

  /** Called by the cache to drop `block` under memory pressure. */
  evict(block: CacheBlock): void {
    this.cache.remove(block)
    const i = this.blocks.indexOf(block)
    if (i >= 0) this.blocks.splice(i, 1)
    if (block === this.current) {
      this.current = undefined
      this.nextBlockBytes = TAIL_BLOCK_MIN_BYTES
    }
    block.evicted = true
    this.cache.recycle(block)
  }

  private grow(start: number, bytes: number): CacheBlock {
    const last = this.current
    if (last !== undefined) {
      assert(last.start + last.filled === start, `append at ${start} does not follow the tail at ${last.start + last.filled}`)
      this.nextBlockBytes = Math.min(this.nextBlockBytes * 2, TAIL_BLOCK_MAX_BYTES)
    }
    const block = new CacheBlock(this.cache.allocate(Math.max(this.nextBlockBytes, bytes)), start, this)
    this.blocks.push(block)
    this.current = block
    this.cache.add(block)
    return block
  }

  /**
   * Copy [from, to) out of consecutive blocks starting at index `i`, or undefined on a gap.
   * A consumer's 1 MiB get from the tail nearly always spans two blocks: the copy comes from
   * the read-buffer pool, not a fresh 1 MiB allocation per get.
   */
  private gather(i: number, from: number, to: number): Buffer | undefined {
    const out = readBuffers.take(to - from)
    let pos = from
    for (; i < this.blocks.length && pos < to; i += 1) {
      const block = this.blocks[i]
      const blockEnd = block.start + block.written
      if (block.start > pos || blockEnd <= pos) break
      const hi = Math.min(to, blockEnd)
      block.buf.copy(out, pos - from, pos - block.start, hi - block.start)
      pos = hi
    }
    if (pos === to) return out
    readBuffers.give(out)
    return undefined
  }
}
