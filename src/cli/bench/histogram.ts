/**
 * Latency histograms for `meta bench`: hdr-histogram-js (the JavaScript port of
 * HdrHistogram), recording microseconds with 3 significant digits from 1 µs to 60 s.
 * Recording costs ~70 ns; a window histogram is folded into the run's total once per
 * progress interval, so each value is recorded once.
 *
 * A percentile is the highest value of its bucket (3 significant digits), which can lie
 * above the largest value recorded (e.g. max 57.9 ms, p99 57.919 ms): percentiles are
 * capped at the exact maximum, kept here, so p50 ≤ p99 ≤ p99.9 ≤ max always holds.
 */
import * as hdr from 'hdr-histogram-js'

const HIGHEST_TRACKABLE_US = 60_000_000

/** Latency percentiles in milliseconds. */
export interface LatencyPercentiles {
  p50: number
  p95: number
  p99: number
  p999: number
  max: number
  mean: number
  /** How many latencies were recorded. */
  count: number
}

export class LatencyHistogram {
  private readonly h = hdr.build({
    bitBucketSize: 32,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_TRACKABLE_US,
    numberOfSignificantValueDigits: 3,
    autoResize: false,
  })
  /** The largest value recorded, in µs, exactly (the histogram's own is bucket-rounded). */
  private maxUs = 0

  /** Record one latency in milliseconds (clamped to 1 µs .. 60 s). */
  record(ms: number): void {
    const rounded = Math.round(ms * 1000)
    const us = rounded < 1 ? 1 : rounded > HIGHEST_TRACKABLE_US ? HIGHEST_TRACKABLE_US : rounded
    if (us > this.maxUs) this.maxUs = us
    this.h.recordValue(us)
  }

  get count(): number {
    return this.h.totalCount
  }

  /** The value at a percentile (0–100), in milliseconds; 0 when empty. */
  percentile(p: number): number {
    return this.h.totalCount === 0 ? 0 : Math.min(this.h.getValueAtPercentile(p), this.maxUs) / 1000
  }

  percentiles(): LatencyPercentiles {
    const h = this.h
    const empty = h.totalCount === 0
    return {
      p50: round3(this.percentile(50)),
      p95: round3(this.percentile(95)),
      p99: round3(this.percentile(99)),
      p999: round3(this.percentile(99.9)),
      max: empty ? 0 : round3(this.maxUs / 1000),
      mean: empty ? 0 : round3(h.mean / 1000),
      count: h.totalCount,
    }
  }

  /** Add every value of `other` to this one. */
  add(other: LatencyHistogram): void {
    this.h.add(other.h)
    if (other.maxUs > this.maxUs) this.maxUs = other.maxUs
  }

  reset(): void {
    this.h.reset()
    this.maxUs = 0
  }
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000
}
