/**
 * The background scrub: after the store opens, read every sealed segment that was taken at
 * its side index's word (recovery.ts step 3) and check every record's length and checksum
 * (verify.ts `verifySegment`), one segment at a time, at most `bytesPerSecond`. Damage it
 * finds becomes a hole readers step over, logged once and counted (stats `damage_found`).
 *
 * Opening the store never waits for it, so with 10,000 partitions a restart costs no more than
 * without the scrub (bench/restart.ts measures both). Until a segment is verified, reads of it
 * check the records they return (partition-log.ts), so no damaged record is served meanwhile.
 * Closing the store stops the scrub between two reads.
 */
import type {Logger} from '../log.js'
import type {PartitionLog} from './partition-log.js'

/** Thrown by the pacer once the scrub is stopped; ends the current segment's scan. */
class Stopped extends Error {}

export class Scrubber {
  /** Bytes read so far. */
  scrubbedBytes = 0
  private stopped = false
  private wake: (() => void) | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly run: Promise<void>
  private readonly startedMs = Date.now()

  constructor(
    private readonly logs: () => PartitionLog[],
    private readonly bytesPerSecond: number,
    private readonly log: Logger,
  ) {
    this.run = this.scrubAll()
  }

  /** Resolves when every sealed segment known at the start was checked (or the scrub stopped). */
  get done(): Promise<void> {
    return this.run
  }

  /** Stop between two reads and wait for the current one. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.wake?.()
    await this.run
  }

  private async scrubAll(): Promise<void> {
    // Let the store finish opening (and the broker start listening) first.
    await new Promise((resolve) => setImmediate(resolve))
    let segments = 0
    for (const partitionLog of this.logs()) {
      for (const segment of partitionLog.unverifiedSegments()) {
        if (this.stopped) return
        try {
          await partitionLog.verify(segment, (bytes) => this.pace(bytes))
          segments += 1
        } catch (error) {
          if (error instanceof Stopped || this.stopped) return
          // The segment left the log meanwhile (retention) or cannot be read; reads still check it.
          this.log.warn('scrub could not check a segment', {file: segment.file.path, error: String(error)})
        }
      }
    }
    if (segments > 0) {
      this.log.info('scrub checked every sealed segment', {
        segments,
        bytes: this.scrubbedBytes,
        seconds: Math.round((Date.now() - this.startedMs) / 100) / 10,
      })
    }
  }

  /** Count `bytes` and wait long enough to stay within the rate. */
  private async pace(bytes: number): Promise<void> {
    if (this.stopped) throw new Stopped('scrub stopped')
    this.scrubbedBytes += bytes
    if (!(this.bytesPerSecond > 0) || this.bytesPerSecond === Number.POSITIVE_INFINITY) return
    const aheadMs = (this.scrubbedBytes / this.bytesPerSecond) * 1000 - (Date.now() - this.startedMs)
    if (aheadMs < 1) return
    // Not unref'ed: `await store.scrubbed()` must not let the process exit mid-scrub; close()
    // clears it, and the scrub ends on its own anyway.
    await new Promise<void>((resolve) => {
      this.wake = resolve
      this.timer = setTimeout(resolve, aheadMs)
    })
    this.wake = undefined
    this.timer = undefined
    if (this.stopped) throw new Stopped('scrub stopped')
  }
}
