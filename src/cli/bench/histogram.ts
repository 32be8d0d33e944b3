/**
 * Latency histograms for `meta bench`: hdr-histogram-js (the JavaScript port of
 * HdrHistogram), recording microseconds with 3 significant digits from 1 µs to 60 s.
 * Recording costs ~70 ns; a window histogram is folded into the run's total once per
 * progress interval, so each value is recorded once.
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

  /** Record one latency in milliseconds (clamped to 1 µs .. 60 s). */
  record(ms: number): void {
    const us = Math.round(ms * 1000)
    this.h.recordValue(us < 1 ? 1 : us > HIGHEST_TRACKABLE_US ? HIGHEST_TRACKABLE_US : us)
  }

  get count(): number {
    return this.h.totalCount
  }

  /** The value at a percentile (0–100), in milliseconds; 0 when empty. */
  percentile(p: number): number {
    return this.h.totalCount === 0 ? 0 : this.h.getValueAtPercentile(p) / 1000
  }

  percentiles(): LatencyPercentiles {
    const h = this.h
    const empty = h.totalCount === 0
    return {
      p50: round3(this.percentile(50)),
      p95: round3(this.percentile(95)),
      p99: round3(this.percentile(99)),
      p999: round3(this.percentile(99.9)),
      max: empty ? 0 : round3(h.maxValue / 1000),
      mean: empty ? 0 : round3(h.mean / 1000),
      count: h.totalCount,
    }
  }

  /** Add every value of `other` to this one. */
  add(other: LatencyHistogram): void {
    this.h.add(other.h)
  }

  reset(): void {
    this.h.reset()
  }
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000
}
