/**
 * Buffers of up to a MiB for data that lives until someone is done with it, reused once they
 * say so: the broker's segment reads (storage/read-buffers.ts, given back once the socket
 * wrote them) and a client's large reply bodies (client/connection.ts, given back by
 * FetchedBatch#release()). Allocated per use, each MiB is external memory that makes V8
 * collect the whole heap every few dozen of them, and fresh pages the kernel must fault in
 * (~256 per MiB). Sizes above {@link POOLED_MIN_BYTES} up to `bufferBytes` take a buffer from
 * here; up to `maxFree` given-back buffers are kept. Only buffers lent by the pool are taken
 * back, each once (a WeakSet of lent ones): a holder that never gives its buffer back just
 * leaves it to the garbage collector.
 */

/** Sizes up to this take a pooled buffer (the broker's default maxTransferSize, a consumer's default fetch size). */
const POOLED_BYTES = 1024 * 1024
/** Smaller sizes are allocated per use (Node's pool serves the smallest). */
const POOLED_MIN_BYTES = 64 * 1024
/** Free buffers kept at most (8 MiB). */
const POOL_MAX_FREE = 8

export class BufferPool {
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
