/**
 * The dashboard's short memory of the broker's counters: one sample a second, the last 15
 * minutes, kept by the HTTP server from its start (GET /api/history). A page loaded now draws
 * its rate charts from these at once instead of starting empty and filling one point a second.
 * A sample is five numbers read from counters the broker keeps anyway, so the cost is a timer
 * and at most HISTORY_SAMPLES small objects.
 *
 * Rates come from a sliding window (RATE_WINDOW_MS), never from two neighbouring samples:
 * producers that send in bursts (once a second is common: a rate limiter, a batching
 * client) against a one-second sampler alias, so the difference of neighbours swings between
 * 0 and twice the rate at a steady average. Over five seconds the same traffic reads within a
 * fifth of its rate (docs/http.md#dashboard-api).
 */

/** Time between samples, in ms. */
export const HISTORY_INTERVAL_MS = 1000
/** Samples kept: 15 minutes at one a second. */
const HISTORY_SAMPLES = 900
/** The span each rate is measured over. */
export const RATE_WINDOW_MS = 5000

export interface CounterSample {
  timeMs: number
  cmdPut: number
  cmdGet: number
  receivedBytes: number
  sentBytes: number
}

/** Per second over the window that ends at a sample (undefined: no earlier sample to measure from). */
interface SampleRates {
  putRate?: number
  getRate?: number
  inRate?: number
  outRate?: number
}

/** Messages stored per topic at one moment (a sum over its partitions). */
type TopicCounts = Map<string, number>

export interface CounterHistory {
  /** The samples kept, oldest first, each with its rates. */
  samples(): Array<CounterSample & SampleRates>
  /** The rates of counters read now, against the kept samples. */
  ratesAt(now: CounterSample): SampleRates
  /** Messages stored per second, per topic, over the window; null for a topic seen once. */
  topicRate(topic: string): number | null
  stop(): void
}

/** The oldest sample no more than `windowMs` before `timeMs` (the window's start), else the newest before it. */
function windowStart<T extends {timeMs: number}>(samples: readonly T[], end: number, timeMs: number, windowMs: number): T | undefined {
  let start: T | undefined
  for (let i = end - 1; i >= 0; i--) {
    const s = samples[i]
    if (s.timeMs >= timeMs) continue
    if (start !== undefined && timeMs - s.timeMs > windowMs) break
    start = s
  }
  return start
}

function ratesBetween(from: CounterSample | undefined, to: CounterSample): SampleRates {
  if (from === undefined) return {}
  const seconds = (to.timeMs - from.timeMs) / 1000
  const per = (a: number, b: number) => Math.max(0, (b - a) / seconds)
  return {
    putRate: per(from.cmdPut, to.cmdPut),
    getRate: per(from.cmdGet, to.cmdGet),
    inRate: per(from.receivedBytes, to.receivedBytes),
    outRate: per(from.sentBytes, to.sentBytes),
  }
}

/** Each sample with the rates of the window that ends at it. */
export function windowRates(samples: readonly CounterSample[], windowMs = RATE_WINDOW_MS): Array<CounterSample & SampleRates> {
  return samples.map((s, i) => ({...s, ...ratesBetween(windowStart(samples, i, s.timeMs, windowMs), s)}))
}

export function startCounterHistory(read: () => CounterSample, readTopics?: () => TopicCounts): CounterHistory {
  const kept: CounterSample[] = [read()]
  // Per-topic counts only for the window: the topics page's rates, not a history.
  const topics: Array<{timeMs: number; counts: TopicCounts}> = readTopics === undefined ? [] : [{timeMs: kept[0].timeMs, counts: readTopics()}]
  const timer = setInterval(() => {
    const sample = read()
    kept.push(sample)
    if (kept.length > HISTORY_SAMPLES) kept.shift()
    if (readTopics !== undefined) {
      topics.push({timeMs: sample.timeMs, counts: readTopics()})
      while (topics.length > 2 && sample.timeMs - topics[1].timeMs >= RATE_WINDOW_MS) topics.shift()
    }
  }, HISTORY_INTERVAL_MS)
  // The history never keeps a process alive: the server's close stops it.
  timer.unref()
  return {
    samples: () => windowRates(kept),
    ratesAt: (now) => ratesBetween(windowStart(kept, kept.length, now.timeMs, RATE_WINDOW_MS), now),
    topicRate: (topic) => {
      const first = topics[0]
      const last = topics[topics.length - 1]
      if (first === undefined || first === last) return null
      const before = first.counts.get(topic) ?? 0
      const after = last.counts.get(topic)
      if (after === undefined) return null
      return Math.max(0, (after - before) / ((last.timeMs - first.timeMs) / 1000))
    },
    stop: () => clearInterval(timer),
  }
}
