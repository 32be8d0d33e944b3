/**
 * Gives memory back once a burst of connections is over (docs/security.md, "Memory after
 * floods").
 *
 * Every connection allocates buffers outside the V8 heap (its answer buffer, the socket's read
 * buffers) that become garbage when it closes. V8 collects them when the heap or the external
 * memory grows enough, that is while allocation goes on: once a burst of connections stops,
 * nothing allocates, no collection comes, and hundreds of MB of dead buffers stay resident
 * (60,000 short connections left +290 MB). So the broker's sweep calls {@link MemoryReturn.check}
 * each period, and when at least {@link CLOSED_MIN} connections closed since the last
 * collection, none was accepted for two checks, and the external memory and the heap stand
 * {@link EXTERNAL_GROWTH_BYTES} above what the last collection left, it asks V8 for a full
 * collection (at most once per {@link MIN_INTERVAL_MS}). The JavaScript heap counts too (the
 * connections' objects die with them). A busy broker, which keeps allocating, is left to V8's
 * own collections.
 *
 * The collection is V8's `gc()`, exposed for this process with `--expose-gc` set at run time (a
 * flag V8 reads when a context is made: the `gc` of a new vm context). Where that fails, nothing
 * is collected early and the broker runs as before.
 */
import {setFlagsFromString} from 'node:v8'
import {runInNewContext} from 'node:vm'
import type {Logger} from '../log.js'

/** Growth of external memory and heap over the last collection that makes a quiet broker collect. */
const EXTERNAL_GROWTH_BYTES = 8 * 1024 * 1024
/** Connections closed since the last collection before memory is even looked at (a broker whose clients stay connected never pays for the check). */
const CLOSED_MIN = 64
/** Collections this far apart at least. */
const MIN_INTERVAL_MS = 5_000

type Collect = () => void

function exposeGc(): Collect | undefined {
  try {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as unknown
    return typeof gc === 'function' ? (gc as Collect) : undefined
  } catch {
    return undefined
  }
}

export class MemoryReturn {
  /** Full collections asked for since the start. */
  collections = 0
  private readonly collect: Collect | undefined
  /** External memory and heap after the last collection (read at the check after it: V8 frees dead buffers in the background). */
  private baseline: number | undefined
  private lastAtMs = 0
  /** Checks in a row that were quiet. */
  private quietChecks = 0
  /** Collect again at the next check (see check). */
  private second = false

  constructor(
    private readonly log: Logger,
    private readonly external: () => number = () => {
      const usage = process.memoryUsage()
      return usage.external + usage.heapUsed
    },
    collect?: Collect,
  ) {
    this.collect = collect ?? exposeGc()
    this.baseline = this.external()
  }

  /** Connections closed since the last collection. */
  private closed = 0

  /** A connection closed. */
  connectionClosed(): void {
    this.closed += 1
  }

  /** Called periodically: `quiet` when no connection was accepted since the last call; collects after two quiet calls in a row. */
  check(quiet: boolean, nowMs = Date.now()): void {
    this.quietChecks = quiet ? this.quietChecks + 1 : 0
    if (this.collect === undefined) return
    if (this.second) {
      // A closed socket's buffers go in two steps: the first collection runs the weak callbacks
      // of its native handles, which let go of them; the next one frees them.
      this.second = false
      this.collect()
      return
    }
    // What the last collection left, read at the first check after it (whatever goes on then).
    if (this.baseline === undefined) this.baseline = this.external()
    // Two quiet checks in a row: the burst is over, not just pausing between two accepts.
    if (this.closed < CLOSED_MIN || this.quietChecks < 2 || nowMs - this.lastAtMs < MIN_INTERVAL_MS) return
    const external = this.external()
    this.baseline = Math.min(this.baseline, external)
    if (external < this.baseline + EXTERNAL_GROWTH_BYTES) return
    this.lastAtMs = nowMs
    this.closed = 0
    this.collections += 1
    this.collect()
    this.second = true
    this.baseline = undefined
    this.log.debug('collected dead connection buffers after a burst', {externalAndHeapBytesBefore: external})
  }
}
