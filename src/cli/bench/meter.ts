/**
 * Counting for `meta bench`: totals, a windowed progress line on stderr every interval
 * (`  5.0s  412,345 msg/s  41.2 MB/s  p99 3.1 ms`), and latency histograms (the window's is
 * folded into the total at each line, so a latency is recorded once), and the CPU time the
 * load generator (and, when known, the broker) spent between start() and stop().
 */
import {formatCount} from '../format.js'
import {LatencyHistogram} from './histogram.js'

/** Payload megabytes as benchmarks count them: 10^6 bytes. */
export const MB = 1_000_000

export class Meter {
  messages = 0
  bytes = 0
  readonly window = new LatencyHistogram()
  readonly total = new LatencyHistogram()
  startedAt = 0
  private lastAt = 0
  private lastMessages = 0
  private lastBytes = 0
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private clientCpuAtStart: NodeJS.CpuUsage | undefined
  private brokerCpuAtStart: number | undefined
  /** CPU ms spent between start() and stop() by this process, and by the broker when known. */
  clientCpuMs = 0
  brokerCpuMs: number | null = null

  /**
   * @param intervalMs progress line interval (0 = no progress lines)
   * @param print where progress lines go (stderr)
   * @param withLatency whether lines show the window's p99
   */
  constructor(
    private readonly intervalMs: number,
    private readonly print: (line: string) => void,
    private readonly withLatency: boolean,
    private readonly brokerCpu?: () => number | undefined,
  ) {}

  start(now = performance.now()): void {
    this.startedAt = now
    this.lastAt = now
    this.clientCpuAtStart = process.cpuUsage()
    this.brokerCpuAtStart = this.brokerCpu?.()
    if (this.intervalMs > 0) this.timer = setInterval(() => this.report(), this.intervalMs)
  }

  /** Count `n` messages of `bytes` payload bytes in all. */
  add(n: number, bytes: number): void {
    this.messages += n
    this.bytes += bytes
  }

  latency(ms: number): void {
    this.window.record(ms)
  }

  /** Stop the progress lines and fold the last window into the total. */
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    this.fold()
    if (this.clientCpuAtStart !== undefined) {
      const used = process.cpuUsage(this.clientCpuAtStart)
      this.clientCpuMs = (used.user + used.system) / 1000
    }
    const brokerNow = this.brokerCpu?.()
    if (this.brokerCpuAtStart !== undefined && brokerNow !== undefined) this.brokerCpuMs = brokerNow - this.brokerCpuAtStart
  }

  private report(): void {
    const now = performance.now()
    const seconds = (now - this.lastAt) / 1000
    const rate = (this.messages - this.lastMessages) / seconds
    const mbps = (this.bytes - this.lastBytes) / MB / seconds
    let line = `${((now - this.startedAt) / 1000).toFixed(1).padStart(6)}s  ${formatCount(rate).padStart(10)} msg/s  ${mbps.toFixed(1).padStart(7)} MB/s`
    if (this.withLatency) line += `  p99 ${this.window.count === 0 ? '-' : `${this.window.percentile(99).toFixed(1)} ms`}`
    this.print(line)
    this.lastAt = now
    this.lastMessages = this.messages
    this.lastBytes = this.bytes
    this.fold()
  }

  private fold(): void {
    if (this.window.count === 0) return
    this.total.add(this.window)
    this.window.reset()
  }
}
