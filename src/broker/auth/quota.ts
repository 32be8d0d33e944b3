/**
 * Quotas per principal (`meta user limit`, docs/security.md#quotas): what one logged-in user
 * may hold and how fast it may move bytes, over all of its connections.
 *
 * - Counts (connections, groups, partitions) are refused past their limit with an error that
 *   names it. A user's groups and partitions are those whose names its `group` and `put` grants
 *   match (its namespace), counted when one more would be made, so the count survives restarts
 *   and needs no bookkeeping per request.
 * - Byte rates are throttled, never refused (as Kafka does): each user has a bucket per
 *   direction that fills at its rate, up to one second's worth; a put or a fetch takes its bytes
 *   from it, and when it goes below zero the connection's answers wait and its socket is not
 *   read ({@link Connection.throttle}) for as long as the debt takes to repay, at most
 *   {@link MAX_THROTTLE_MS}.
 *
 * Every logged-in connection carries its user's PrincipalQuota (one object per user, its limits
 * replaced in place at a reload), so the put path costs one counter increment for a user with no
 * byte rate and nothing at all for an anonymous connection.
 */
import type {Limits} from './users-file.js'

/** Longest a connection is held for one put or fetch past its rate. */
const MAX_THROTTLE_MS = 30_000

/** Bytes moved against a rate: a bucket that fills at `rate` per second, up to one second's worth. */
class RateBucket {
  private tokens: number
  private atMs: number

  constructor(
    private rate: number,
    nowMs: number,
  ) {
    this.tokens = rate
    this.atMs = nowMs
  }

  setRate(rate: number): void {
    this.rate = rate
    this.tokens = Math.min(this.tokens, rate)
  }

  /** Take `bytes`; how long to wait (ms) before the debt is repaid (0: none). */
  take(bytes: number, nowMs: number): number {
    this.tokens = Math.min(this.rate, this.tokens + ((nowMs - this.atMs) * this.rate) / 1000)
    this.atMs = nowMs
    this.tokens -= bytes
    return this.tokens >= 0 ? 0 : Math.min(MAX_THROTTLE_MS, Math.ceil((-this.tokens * 1000) / this.rate))
  }
}

export class PrincipalQuota {
  /** Bytes its puts and fetches moved since the start (counted for every logged-in user). */
  producedBytes = 0
  fetchedBytes = 0
  /** Time its connections were held for its byte rates, in ms. */
  throttledMs = 0
  private produce: RateBucket | undefined
  private fetch: RateBucket | undefined

  constructor(
    readonly user: string,
    public limits: Limits,
  ) {
    this.setLimits(limits)
  }

  /** New limits (a reload): the buckets keep what they hold, at the new rates. */
  setLimits(limits: Limits, nowMs = Date.now()): void {
    this.limits = limits
    this.produce = bucketFor(this.produce, limits.produceByteRate, nowMs)
    this.fetch = bucketFor(this.fetch, limits.fetchByteRate, nowMs)
  }

  /** A put of `bytes`: how long to hold the connection (0: not at all). */
  chargeProduce(bytes: number): number {
    this.producedBytes += bytes
    if (this.produce === undefined) return 0
    const waitMs = this.produce.take(bytes, Date.now())
    this.throttledMs += waitMs
    return waitMs
  }

  /** A fetch answered with `bytes`: how long to hold the connection (0: not at all). */
  chargeFetch(bytes: number): number {
    this.fetchedBytes += bytes
    if (this.fetch === undefined) return 0
    const waitMs = this.fetch.take(bytes, Date.now())
    this.throttledMs += waitMs
    return waitMs
  }
}

function bucketFor(bucket: RateBucket | undefined, rate: number | undefined, nowMs: number): RateBucket | undefined {
  if (rate === undefined) return undefined
  if (bucket === undefined) return new RateBucket(rate, nowMs)
  bucket.setRate(rate)
  return bucket
}

/** The error a count past its limit is refused with: names the user, the limit and how to change it. */
export function limitMessage(user: string, what: string, count: number, limit: number, key: keyof Limits): string {
  return `user "${user}" has ${count} ${what}, its limit (${key} ${limit}; meta user limit ${user} --${key === 'connections' ? 'connections' : key})`
}
