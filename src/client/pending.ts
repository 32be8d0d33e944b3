/**
 * The in-flight request table of one connection: a preallocated ring indexed by
 * `opaque & mask`, so matching a response costs an array lookup and no Map, promise or timer
 * is created per request. Opaques increase by one per request (wrapping within int32), so
 * live entries occupy a window of the ring; an opaque whose slot is still taken (a long poll
 * outlived a full turn of the ring) is skipped. Timeouts are found by one periodic scan of
 * that window.
 */
import type {ResponseFrame} from '../protocol/frames.js'
import type {MetaError} from '../protocol/errors.js'

export type ResponseCallback = (err: MetaError | null, frame: ResponseFrame | undefined) => void

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

export class PendingTable {
  private readonly callbacks: Array<ResponseCallback | undefined>
  private readonly opaques: Int32Array
  private readonly deadlines: Float64Array
  private readonly mask: number
  private nextOpaque = INT32_MIN
  private live = 0

  /** @param capacity a power of two: the most requests that can be in flight at once. */
  constructor(readonly capacity = 65536) {
    if ((capacity & (capacity - 1)) !== 0) throw new RangeError(`capacity ${capacity} is not a power of two`)
    this.callbacks = new Array(capacity).fill(undefined)
    this.opaques = new Int32Array(capacity)
    this.deadlines = new Float64Array(capacity)
    this.mask = capacity - 1
  }

  get size(): number {
    return this.live
  }

  get full(): boolean {
    return this.live >= this.capacity
  }

  /** Register a callback; returns the opaque to send. The table must not be full. */
  add(callback: ResponseCallback, deadlineMs: number): number {
    for (;;) {
      const opaque = this.nextOpaque
      this.nextOpaque = opaque === INT32_MAX ? INT32_MIN : opaque + 1
      const slot = opaque & this.mask
      if (this.callbacks[slot] !== undefined) continue
      this.callbacks[slot] = callback
      this.opaques[slot] = opaque
      this.deadlines[slot] = deadlineMs
      this.live += 1
      return opaque
    }
  }

  /** Remove and return the callback waiting for `opaque`, if any. */
  take(opaque: number): ResponseCallback | undefined {
    const slot = opaque & this.mask
    const callback = this.callbacks[slot]
    if (callback === undefined || this.opaques[slot] !== (opaque | 0)) return undefined
    this.callbacks[slot] = undefined
    this.live -= 1
    return callback
  }

  /** Remove every entry whose deadline is before `nowMs` and hand it to `onExpired`. */
  expire(nowMs: number, onExpired: (callback: ResponseCallback, opaque: number) => void): void {
    if (this.live === 0) return
    const expired: Array<[ResponseCallback, number]> = []
    for (let slot = 0; slot < this.capacity; slot++) {
      const callback = this.callbacks[slot]
      if (callback === undefined || this.deadlines[slot] >= nowMs) continue
      this.callbacks[slot] = undefined
      this.live -= 1
      expired.push([callback, this.opaques[slot]])
    }
    for (const [callback, opaque] of expired) onExpired(callback, opaque)
  }

  /** Remove every entry (connection lost or closed). */
  drain(onEach: (callback: ResponseCallback) => void): void {
    if (this.live === 0) return
    const all: ResponseCallback[] = []
    for (let slot = 0; slot < this.capacity; slot++) {
      const callback = this.callbacks[slot]
      if (callback === undefined) continue
      this.callbacks[slot] = undefined
      all.push(callback)
    }
    this.live = 0
    for (const callback of all) onEach(callback)
  }
}
