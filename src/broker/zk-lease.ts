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
 * How: every half lease the lease asks ZooKeeper whether the master node is still this
 * session's. ZooKeeper heard this broker no earlier than the moment a request was sent, so the
 * session lives at least `sessionTimeout` past the send time of the last answered request. The
 * lease runs `failoverLeaseMs` (0: half the session timeout; never more) from that send time,
 * so it ends before ZooKeeper can expire the session and well before a slave may promote
 * (expiry + failoverGraceMs). When it ends, puts are refused (SERVICE_UNAVAILABLE, retriable;
 * waived while a sync slave is connected, context.ts putRefusal) until an answer shows the node
 * is still this session's; a node held by another session fences the broker for good.
 *
 * A sync slave may take the node over before the session expires (link-failover.ts): it
 * replaces the node, so no renewal answered after that succeeds, and it accepts puts only once
 * this lease, counted from the replacement, must have ended by its own clock. The lease is
 * counted on the monotonic clock (a wall clock set back does not stretch it); the length is
 * published to the sync slave in its announce node (sync-announce.ts).
 */
import {performance} from 'node:perf_hooks'
import type {Logger} from '../log.js'
import type {ZkSession} from '../cluster/zk-session.js'

interface ZkLeaseOptions {
  session: ZkSession
  /** `ids/<id>/master`. */
  masterPath: string
  /** The session timeout asked for; the one ZooKeeper granted is used when known. */
  sessionTimeoutMs: number
  /** The lease's length (failoverLeaseMs); 0: half the session timeout, and never more than that. */
  leaseMs: number
  log: Logger
  /** The lease ended (`takenBy`: another session holds the node, named by its data): refuse puts. */
  onLost: (reason: string, takenBy?: string) => void
  /** The lease holds again: accept puts. */
  onHeld: () => void
  /** The lease now runs until `endsAtMs` (performance.now()): puts check it themselves, not only its timer. */
  onExtended?: (endsAtMs: number) => void
}

export class ZkLease {
  private renewTimer: NodeJS.Timeout | undefined
  private expiryTimer: NodeJS.Timeout | undefined
  private held = true
  private stopped = false
  /** The question in flight (its number), answered or given up; 0: none. */
  private asking = 0
  private askedAt = 0
  private questions = 0

  constructor(private readonly options: ZkLeaseOptions) {}

  /** Start renewing; the lease holds from now for half the session timeout. */
  start(): void {
    this.extend(now())
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

  /** How long the lease runs after the send time of an answered renewal. */
  get lengthMs(): number {
    const half = Math.floor(this.timeoutMs / 2)
    return this.options.leaseMs > 0 ? Math.min(this.options.leaseMs, half) : half
  }

  private schedule(): void {
    if (this.stopped) return
    this.renewTimer = setTimeout(() => this.renew(), Math.max(25, Math.floor(this.lengthMs / 2)))
    this.renewTimer.unref()
  }

  private renew(): void {
    if (this.stopped) return
    this.schedule()
    // One question at a time: while one is unanswered the lease simply runs down. A question
    // unanswered for a whole session timeout is given up (a request the client library never
    // settles, e.g. across a session it replaced after ZooKeeper came back): a new one is asked.
    if (this.asking !== 0 && now() - this.askedAt < this.timeoutMs) return
    const question = ++this.questions
    this.asking = question
    const sentAt = now()
    this.askedAt = sentAt
    const {session, masterPath} = this.options
    session.exists(masterPath).then(
      async (stat) => {
        const owner = stat?.ephemeralOwner.toString('hex')
        const takenBy =
          owner !== undefined && owner !== session.sessionId
            ? ((await session.getString(masterPath).catch(() => undefined)) ?? `session 0x${owner}`)
            : undefined
        if (this.stopped || this.asking !== question) return
        this.asking = 0
        if (owner !== undefined && owner === session.sessionId) this.extend(sentAt)
        else this.lose(owner === undefined ? `${masterPath} is gone` : `${masterPath} belongs to another session`, takenBy)
      },
      () => {
        // No answer in time (or the session is being replaced): the lease runs down.
        if (this.asking === question) this.asking = 0
      },
    )
  }

  private extend(sentAt: number): void {
    const endsAt = sentAt + this.lengthMs
    clearTimeout(this.expiryTimer)
    const left = endsAt - now()
    if (left <= 0) {
      this.lose('ZooKeeper answered too late')
      return
    }
    this.expiryTimer = setTimeout(() => this.lose(`no answer from ZooKeeper for ${Math.round(now() - sentAt)} ms (lease: ${this.lengthMs} ms)`), left)
    this.expiryTimer.unref()
    this.options.onExtended?.(endsAt)
    if (!this.held) {
      this.held = true
      this.options.log.warn('lease on the broker id renewed: accepting puts again', {node: this.options.masterPath})
      this.options.onHeld()
    }
  }

  private lose(reason: string, takenBy?: string): void {
    if (this.stopped || (!this.held && takenBy === undefined)) return
    this.held = false
    this.options.log.error('lease on the broker id lost: refusing puts until ZooKeeper confirms this broker still holds it', {
      node: this.options.masterPath,
      reason,
    })
    this.options.onLost(reason, takenBy)
  }
}

/** Milliseconds on the monotonic clock. */
function now(): number {
  return performance.now()
}
