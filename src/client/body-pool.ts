/**
 * Memory for the bodies of large responses (a get's message set, up to a MiB), used again once
 * the batch made from a body is released (FetchedBatch#release: meta tail and `bench --verify`
 * do, after writing or checking its records). A fresh MiB per get costs ~256 page faults when
 * the kernel or a copy first touches it, and as external memory it has V8 run a full GC every
 * few dozen MiB: at 1 KiB messages the faults and GC took more of a consumer's CPU than reading
 * the records did (docs/benchmarks.md, ninth pass). Bodies that are never released are
 * collected as before; one released twice, or one this pool did not hand out, is ignored.
 */

/** Bodies below this are not pooled (they come from Node's pool or are views of a read). */
const POOLED_MIN_BYTES = 64 * 1024
/** Pooled memory is handed out in multiples of this, so a little-larger body fits next time. */
const ROUND_BYTES = 64 * 1024
/** Released buffers kept per connection (one get in flight per partition needs two or three). */
const FREE_MAX = 4

export class BodyPool {
  private readonly free: ArrayBuffer[] = []
  /** Memory handed out and not yet given back (weak: a body never released is collected). */
  private readonly issued = new WeakSet<ArrayBuffer>()

  /** A buffer of exactly `bytes` bytes (contents undefined). */
  take(bytes: number): Buffer {
    if (bytes < POOLED_MIN_BYTES) return Buffer.allocUnsafe(bytes)
    let memory: ArrayBuffer | undefined
    for (let i = this.free.length - 1; i >= 0; i--) {
      if (this.free[i].byteLength >= bytes) {
        memory = this.free[i]
        this.free.splice(i, 1)
        break
      }
    }
    // Buffer.allocUnsafe above Node's pool size owns its ArrayBuffer, from byte 0.
    memory ??= Buffer.allocUnsafe(Math.ceil(bytes / ROUND_BYTES) * ROUND_BYTES).buffer as ArrayBuffer
    this.issued.add(memory)
    return Buffer.from(memory, 0, bytes)
  }

  /** `body` (a buffer take() returned) is no longer read by anyone. */
  give(body: Uint8Array): void {
    const memory = body.buffer as ArrayBuffer
    if (!this.issued.has(memory)) return
    this.issued.delete(memory)
    if (this.free.length >= FREE_MAX) this.free.shift()
    this.free.push(memory)
  }
}
