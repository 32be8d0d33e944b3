/**
 * Buffers for large segment reads, reused once their answer has been written.
 *
 * A get beyond the tail cache reads up to maxTransferSize (1 MiB by default) from a segment
 * into a fresh buffer that lives only until the socket has taken it; so does a get from the
 * tail cache that spans two of its blocks (tail-cache.ts copies it out). Allocated per read, those
 * buffers would cost the broker about a quarter of its replay time (1 KiB replay from disk, V8 CPU
 * profile). Reads take a buffer from this pool instead (protocol/buffer-pool.ts); whoever
 * sends the data gives it back when the socket has written it (src/broker/handlers/get.ts). A
 * reader that never gives its buffer back (replication, the HTTP API) just leaves it to the
 * garbage collector.
 */
import {BufferPool} from '../protocol/buffer-pool.js'

/** The process's pool (segment reads of every store). */
export const readBuffers = new BufferPool()
