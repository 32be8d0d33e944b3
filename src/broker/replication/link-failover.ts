/**
 * Failover of a sync slave on a broken sync link (docs/invariants.md#puts, rule 5e):
 * without waiting for the master's ZooKeeper session to expire. A master that dies closes its
 * link at once (the kernel closes its sockets), while its session lives on in ZooKeeper for
 * up to `zk.zkSessionTimeoutMs`.
 *
 * The watch polls whether a master's link is open on this slave. Once one was, and no link
 * has been open for `failoverGraceMs`, `takeOver` runs (promotion.ts promoteOnLinkLoss): it
 * replaces the master node if it still names the master whose link broke, refuses `sync` at
 * once, and accepts puts only when the master's lease, counted from the replacement, must
 * have ended by this slave's clock (with a margin). A link that comes back within the grace
 * period cancels it; a takeover that did not happen (the master is not the one that brought
 * this slave up to date, the node changed) is tried again after another grace period while
 * the link stays down.
 */
import {performance} from 'node:perf_hooks'
import type {Logger} from '../../log.js'

/** How often the watch looks at the link (ms). */
const POLL_MS = 50
/** Shortest wait between two takeover attempts while the link stays down (ms). */
const RETRY_MIN_MS = 500

/**
 * How long a takeover waits, after the master node was replaced, before puts are accepted:
 * the master's lease plus a margin for the two clocks' rates (10%, far above any quartz
 * drift) and the scheduling of the master's own lease timer (100 ms).
 */
export function leaseWaitMs(leaseMs: number): number {
  return Math.ceil(leaseMs * 1.1) + 100
}

export class LinkFailoverWatch {
  private readonly timer: NodeJS.Timeout
  private seenLink = false
  /** When the link was last seen down and not yet acted on (monotonic ms). */
  private downSince: number | undefined
  private running = false
  private stopped = false

  constructor(
    private readonly graceMs: number,
    private readonly linked: () => boolean,
    private readonly takeOver: () => Promise<void>,
    private readonly log: Logger,
  ) {
    this.timer = setInterval(() => this.poll(), POLL_MS)
    this.timer.unref()
  }

  private poll(): void {
    if (this.stopped || this.running) return
    if (this.linked()) {
      if (this.downSince !== undefined && this.seenLink) this.log.info("the master's sync link is back: no failover")
      this.seenLink = true
      this.downSince = undefined
      return
    }
    // A slave whose master never linked to it has nothing it could take over with.
    if (!this.seenLink) return
    const now = performance.now()
    if (this.downSince === undefined) {
      this.downSince = now
      this.log.warn("the master's sync link broke: taking over its broker id if it stays down for the grace period", {graceMs: this.graceMs})
      return
    }
    if (now - this.downSince < this.graceMs) return
    this.running = true
    this.takeOver()
      .catch((error: Error) => this.log.error('failover on the broken sync link failed', {error: error.message}))
      .finally(() => {
        this.running = false
        // Tried and still a slave: try again after another grace period while the link stays down.
        this.downSince = performance.now() + Math.max(0, RETRY_MIN_MS - this.graceMs)
      })
  }

  stop(): void {
    this.stopped = true
    clearInterval(this.timer)
  }
}
