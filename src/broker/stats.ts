/**
 * Broker statistics (docs/protocol.md#stats); protocol/stats-body.ts encodes them into `stats`
 * answers.
 *
 * Counters are plain numbers bumped on the hot path. Realtime stats (`stats realtime`, the
 * `topic_realtime_*` lines) are recorded only for topics whose config has `stat=true`, and
 * reset on `stats reset` and every 30 minutes, as MetaQ does.
 */
import {realtimeValue, type RealtimeItem, type RealtimeValue, type SystemStats} from '../protocol/stats-body.js'

/** Totals since start: the system stats the broker counts itself (same names, same order). */
export type BrokerCounters = Pick<
  SystemStats,
  'cmdPut' | 'cmdGet' | 'cmdOffset' | 'txBegin' | 'txXaBegin' | 'txCommit' | 'txRollback' | 'getMiss' | 'putFailed'
>

/** Count and summed value of one realtime item since the last reset. */
class RealtimeCell {
  count = 0
  value = 0
  add(value: number): void {
    this.count += 1
    this.value += value
  }
}

const REALTIME_RESET_INTERVAL_MS = 30 * 60 * 1000

/** Realtime counters, kept per topic so both the broker-wide and per-topic lines can be drawn. */
export class RealtimeStats {
  private cells = new Map<string, Map<RealtimeItem, RealtimeCell>>()
  private resetAtMs: number

  constructor(private readonly now: () => number = Date.now) {
    this.resetAtMs = now()
  }

  record(topic: string, item: RealtimeItem, value = 1): void {
    if (this.now() - this.resetAtMs > REALTIME_RESET_INTERVAL_MS) this.reset()
    let topicCells = this.cells.get(topic)
    if (topicCells === undefined) {
      topicCells = new Map()
      this.cells.set(topic, topicCells)
    }
    let cell = topicCells.get(item)
    if (cell === undefined) {
      cell = new RealtimeCell()
      topicCells.set(item, cell)
    }
    cell.add(value)
  }

  reset(): void {
    this.cells = new Map()
    this.resetAtMs = this.now()
  }

  /** One realtime item since the last reset, for one topic or (topic undefined) all topics; null if none. */
  value(item: RealtimeItem, topic?: string): RealtimeValue | null {
    let count = 0
    let value = 0
    for (const [name, topicCells] of this.cells) {
      if (topic !== undefined && name !== topic) continue
      const cell = topicCells.get(item)
      if (cell === undefined) continue
      count += cell.count
      value += cell.value
    }
    return realtimeValue(count, value, Math.max(0, (this.now() - this.resetAtMs) / 1000))
  }
}

export const STATS_HELP_LINES: ReadonlyArray<[string, string]> = [
  ['*EMPTY*', 'Returns broker info.'],
  ['help', 'Returns help.'],
  ['topics', 'Returns the topics this broker serves.'],
  ['offsets', 'Returns the min and max offsets of every partition.'],
  ['realtime', 'Returns realtime statistics.'],
  ['damage', 'Returns quarantined partitions and damaged ranges (meta).'],
  ['config', "Returns broker's config file content."],
  ['reset', 'Resets realtime statistics.'],
  ['meta-principals', "Returns each user's connections, groups, partitions, bytes and limits (meta; an admin sees all users, others themselves)."],
  ['meta-connections', 'Returns each connection: requests in flight, bytes pending, whether it is read, idle time (meta).'],
  ['<topic>', 'Returns statistics of one topic.'],
]

/** Upper bounds (seconds) of {@link LatencyHistogram}'s buckets: 50 µs to 10 s. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
]

/**
 * Durations in fixed buckets (Prometheus' cumulative form is made when read): recording is a
 * short loop and an increment, cheap enough for every put. `counts[i]` counts durations in
 * (bound[i-1], bound[i]]; the last cell counts those above the largest bound.
 */
export class LatencyHistogram {
  readonly counts = new Float64Array(LATENCY_BUCKETS_SECONDS.length + 1)
  sumSeconds = 0
  count = 0
  private seq = 0
  private readonly mask: number

  /** `sampleEvery` (a power of two): {@link sample} says yes to the first event and every sampleEvery-th after it. */
  constructor(readonly sampleEvery = 1) {
    if (sampleEvery < 1 || (sampleEvery & (sampleEvery - 1)) !== 0) throw new RangeError(`sampleEvery must be a power of two, got ${sampleEvery}`)
    this.mask = sampleEvery - 1
  }

  /** Whether to time this event: one in `sampleEvery`, so a hot path reads no clock for the others. */
  sample(): boolean {
    return (this.seq++ & this.mask) === 0
  }

  /** Record one duration in milliseconds (performance.now() differences). */
  observeMs(ms: number): void {
    const seconds = ms / 1000
    let i = 0
    while (i < LATENCY_BUCKETS_SECONDS.length && seconds > LATENCY_BUCKETS_SECONDS[i]) i++
    this.counts[i] += 1
    this.sumSeconds += seconds
    this.count += 1
  }
}

/** One put (or put-batch) request in this many is timed: the put path reads no clock for the others. */
export const PUT_LATENCY_SAMPLE_EVERY = 8

/** Latencies the broker records for /metrics: put (request to acknowledgement, sampled) and fdatasync (every one). */
export interface BrokerLatencies {
  put: LatencyHistogram
  fsync: LatencyHistogram
}
