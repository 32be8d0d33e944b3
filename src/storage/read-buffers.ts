/**
 * Buffers for large segment reads, reused once their answer has been written.
 *
 * A get beyond the tail cache reads up to maxTransferSize (1 MiB by default) from a segment
 * into a fresh buffer that lives only until the socket has taken it; so does a get from the
 * tail cache that spans two of its blocks (tail-cache.ts copies it out). Allocated per read, those
 * buffers cost the broker about a quarter of its replay time (1 KiB replay from disk, V8 CPU
 * profile): every 1 MiB allocation is external memory that makes V8 collect the whole heap
 * every few dozen reads, and a fresh mmap the kernel must fault in. Reads of more than
 * {@link POOLED_MIN_BYTES} up to {@link POOLED_BYTES} take a buffer from here instead; whoever
 * sends the data gives it back when the socket has written it (src/broker/handlers/get.ts),
 * and up to {@link POOL_MAX_FREE} free buffers are kept. Only buffers lent by the pool are
 * taken back, each once (a WeakSet of lent ones): a reader that never gives its buffer back
 * (replication, the HTTP API) just leaves it to the garbage collector, as before.
 */

/** Reads up to this size use a pooled buffer (the default maxTransferSize). */
const POOLED_BYTES = 1024 * 1024
/** Smaller reads are allocated as before (they are copied into the reply anyway). */
const POOLED_MIN_BYTES = 64 * 1024
/** Free buffers kept at most (8 MiB). */
const POOL_MAX_FREE = 8

export class ReadBufferPool {
  private readonly free: ArrayBuffer[] = []
  private readonly lent = new WeakSet<ArrayBuffer>()
  /** Takes served from a given-back buffer (tests, benchmarks). */
  reused = 0
  /** Buffers allocated for the pool (tests, benchmarks). */
  allocated = 0

  constructor(
    readonly bufferBytes = POOLED_BYTES,
    readonly minBytes = POOLED_MIN_BYTES,
    readonly maxFree = POOL_MAX_FREE,
  ) {}

  /** A buffer of `bytes` bytes (uninitialised): a pooled one when the size qualifies. */
  take(bytes: number): Buffer {
    if (bytes <= this.minBytes || bytes > this.bufferBytes) return Buffer.allocUnsafe(bytes)
    const reused = this.free.pop()
    if (reused !== undefined) this.reused += 1
    else this.allocated += 1
    const arrayBuffer = reused ?? Buffer.allocUnsafeSlow(this.bufferBytes).buffer
    this.lent.add(arrayBuffer)
    return Buffer.from(arrayBuffer, 0, bytes)
  }

  /**
   * `data` (or a view of it) is no longer used by anyone: reuse its buffer if the pool lent it
   * and it has not been given back yet; anything else is ignored.
   */
  give(data: Uint8Array): void {
    const arrayBuffer = data.buffer as ArrayBuffer
    if (!this.lent.delete(arrayBuffer)) return
    if (this.free.length < this.maxFree) this.free.push(arrayBuffer)
  }
}

/** The process's pool (segment reads of every store). */
export const readBuffers = new ReadBufferPool()
