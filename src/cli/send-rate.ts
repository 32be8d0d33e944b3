/**
 * `meta send --rate`: a token bucket. Tokens refill at `ratePerSecond`; the bucket holds at
 * most RATE_BURST_MS worth of them (at least one), so a send that paused does not burst
 * beyond that when it resumes.
 */
import {performance} from 'node:perf_hooks'

/** The most a paused `--rate` send may catch up at once: this many ms of messages. */
export const RATE_BURST_MS = 100

export class TokenBucket {
  private tokens = 1
  private lastRefillMs: number
  private readonly capacity: number

  /** `ratePerSecond` > 0 (the flag's floor); `nowMs` starts the clock (performance.now()). */
  constructor(
    private readonly ratePerSecond: number,
    nowMs: number = performance.now(),
  ) {
    this.lastRefillMs = nowMs
    this.capacity = Math.max(1, (ratePerSecond * RATE_BURST_MS) / 1000)
  }

  /** Take one token: 0 when there was one, else the ms to wait until the debt is refilled. */
  take(nowMs: number = performance.now()): number {
    this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.lastRefillMs) * this.ratePerSecond) / 1000)
    this.lastRefillMs = nowMs
    this.tokens -= 1
    if (this.tokens >= 0) return 0
    return Math.max(1, Math.ceil((-this.tokens * 1000) / this.ratePerSecond))
  }
}
