/**
 * The master's lease on its broker id, for brokers whose id can fail over (`failover`, and
 * every broker promoted by a failover): puts are accepted only while ZooKeeper has answered
 * recently enough that this broker's session cannot have expired.
 *
 * Why: a failover slave promotes itself once the master's ephemeral `ids/<id>/master` node
 * has been gone for `failoverGraceMs`, and the node goes when ZooKeeper expires the master's
 * session: `sessionTimeout` after it last heard from the master. A master cut off from
 * ZooKeeper (a network partition, not a crash) may not notice for much longer (the client
 * library only notices a dead connection when TCP gives up), and would keep taking puts from
 * clients that reach it by address while the promoted slave takes them too.
 *
 * How: every quarter of the session timeout the lease asks ZooKeeper whether the master node
 * is still this session's. ZooKeeper heard this broker no earlier than the moment a request
 * was sent, so the session lives at least `sessionTimeout` past the send time of the last
 * answered request. The lease runs for half of that: it ends `sessionTimeout / 2` after that
 * send time, before ZooKeeper can expire the session and well before a slave may promote
 * (expiry + failoverGraceMs). When it ends, puts are refused (SERVICE_UNAVAILABLE, retriable)
 * until an answer shows the node is still this session's; a node held by another session is
 * reported through `onLost` as well (BrokerRegistry fences for good when the id is taken).
 */
import type {Logger} from '../log.js'
import type {ZkSession} from '../cluster/zk-session.js'

interface ZkLeaseOptions {
  session: ZkSession
  /** `ids/<id>/master`. */
  masterPath: string
  /** The session timeout asked for; the one ZooKeeper granted is used when known. */
  sessionTimeoutMs: number
  log: Logger
  /** The lease ended: refuse puts. */
  onLost: (reason: string) => void
  /** The lease holds again: accept puts. */
  onHeld: () => void
}

export class ZkLease {
  private renewTimer: NodeJS.Timeout | undefined
  private expiryTimer: NodeJS.Timeout | undefined
  private held = true
  private stopped = false
  private asking = false

  constructor(private readonly options: ZkLeaseOptions) {}

  /** Start renewing; the lease holds from now for half the session timeout. */
  start(): void {
    this.extend(Date.now())
    this.schedule()
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.renewTimer)
    clearTimeout(this.expiryTimer)
  }

  /** The session timeout ZooKeeper granted (it may clamp what was asked), else the one asked. */
  private get timeoutMs(): number {
    const granted = (this.options.session.raw as {getSessionTimeout?: () => number}).getSessionTimeout?.()
    return typeof granted === 'number' && granted > 0 ? granted : this.options.sessionTimeoutMs
  }

  private schedule(): void {
    if (this.stopped) return
    this.renewTimer = setTimeout(() => this.renew(), Math.max(50, Math.floor(this.timeoutMs / 4)))
    this.renewTimer.unref()
  }

  private renew(): void {
    if (this.stopped) return
    this.schedule()
    // One question at a time: while one is unanswered the lease simply runs down.
    if (this.asking) return
    this.asking = true
    const sentAt = Date.now()
    const {session, masterPath} = this.options
    session.exists(masterPath).then(
      (stat) => {
        this.asking = false
        if (this.stopped) return
        const owner = stat?.ephemeralOwner.toString('hex')
        if (owner !== undefined && owner === session.sessionId) this.extend(sentAt)
        else this.lose(owner === undefined ? `${masterPath} is gone` : `${masterPath} belongs to another session`)
      },
      () => {
        // No answer in time (or the session is being replaced): the lease runs down.
        this.asking = false
      },
    )
  }

  private extend(sentAt: number): void {
    const endsAt = sentAt + Math.floor(this.timeoutMs / 2)
    clearTimeout(this.expiryTimer)
    const left = endsAt - Date.now()
    if (left <= 0) {
      this.lose('ZooKeeper answered too late')
      return
    }
    this.expiryTimer = setTimeout(() => this.lose(`no answer from ZooKeeper for ${Date.now() - sentAt} ms (lease: half the ${this.timeoutMs} ms session timeout)`), left)
    this.expiryTimer.unref()
    if (!this.held) {
      this.held = true
      this.options.log.warn('lease on the broker id renewed: accepting puts again', {node: this.options.masterPath})
      this.options.onHeld()
    }
  }

  private lose(reason: string): void {
    if (this.stopped || !this.held) return
    this.held = false
    this.options.log.error('lease on the broker id lost: refusing puts until ZooKeeper confirms this broker still holds it', {node: this.options.masterPath, reason})
    this.options.onLost(reason)
  }
}
