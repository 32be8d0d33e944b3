/**
 * Failover of an asynchronous slave registered in ZooKeeper (`failover=true`, `meta serve
 * --failover`): the grace period. The slave registration reports the master's
 * `ids/<brokerId>/master` node through its watch; once a master has been seen, its node
 * disappearing starts a timer of `failoverGraceMs`, and a master node appearing again (a quick
 * planned restart) cancels it. When the timer fires, `promote` is called: it tries to create
 * the master node itself, and ZooKeeper lets exactly one creator win (promotion.ts).
 */
import type {Logger} from '../../log.js'

export class FailoverWatch {
  private timer: NodeJS.Timeout | undefined
  private seenMaster = false
  private stopped = false

  constructor(
    private readonly graceMs: number,
    private readonly promote: () => Promise<void>,
    private readonly log: Logger,
  ) {}

  /** The master node as the watch reads it (undefined: no node). */
  master(master: {host: string; port: number} | undefined): void {
    if (this.stopped) return
    if (master !== undefined) {
      this.seenMaster = true
      if (this.timer !== undefined) {
        this.log.info('the master is registered again: no failover', {master: `${master.host}:${master.port}`})
        clearTimeout(this.timer)
        this.timer = undefined
      }
      return
    }
    // A slave started before any master was registered does not take over an id it never followed.
    if (!this.seenMaster || this.timer !== undefined) return
    this.log.warn('the master left ZooKeeper: promoting this slave if it stays gone for the grace period', {graceMs: this.graceMs})
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (this.stopped) return
      this.promote().catch((error: Error) => this.log.error('failover: promotion failed', {error: error.message}))
    }, this.graceMs)
    this.timer.unref()
  }

  stop(): void {
    this.stopped = true
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }
}
