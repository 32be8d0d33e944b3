/**
 * The dashboard's short memory of the broker's counters: one sample a second, the last 15
 * minutes, kept by the HTTP server from its start (GET /api/history). A page loaded now draws
 * its rate charts from these at once instead of starting empty and filling one point a second.
 * A sample is five numbers read from counters the broker keeps anyway, so the cost is a timer
 * and at most HISTORY_SAMPLES small objects.
 */

/** Time between samples, in ms. */
export const HISTORY_INTERVAL_MS = 1000
/** Samples kept: 15 minutes at one a second. */
const HISTORY_SAMPLES = 900

interface CounterSample {
  timeMs: number
  cmdPut: number
  cmdGet: number
  receivedBytes: number
  sentBytes: number
}

interface CounterHistory {
  /** The samples kept, oldest first. */
  samples(): CounterSample[]
  stop(): void
}

export function startCounterHistory(read: () => CounterSample): CounterHistory {
  const kept: CounterSample[] = [read()]
  const timer = setInterval(() => {
    kept.push(read())
    if (kept.length > HISTORY_SAMPLES) kept.shift()
  }, HISTORY_INTERVAL_MS)
  // The history never keeps a process alive: the server's close stops it.
  timer.unref()
  return {
    samples: () => [...kept],
    stop: () => clearInterval(timer),
  }
}
