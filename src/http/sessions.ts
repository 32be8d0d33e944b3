/**
 * The HTTP server's connections to its broker (docs/http.md#how-the-http-server-reaches-its-broker):
 * in-process (src/client/in-process.ts: no socket, no TLS, no login), each bound by the broker
 * to one principal for good, so every request an HTTP request makes is checked, counted,
 * limited and audited by the broker as that principal's.
 *
 * One connection per principal (a user, anonymous, the operator token), opened on its first
 * HTTP request and shared by all of them (requests are pipelined); closed after
 * {@link IDLE_CLOSE_MS} without a request. At most {@link MAX_CONNECTIONS} are open: a new
 * principal then takes the place of the one idle the longest, or is answered 503 when every one
 * has a request in flight.
 */
import type {BoundPrincipal, BrokerReadView} from '../broker/read-view.js'
import {BrokerConnection} from '../client/connection.js'
import {inProcessDial} from '../client/in-process.js'
import type {Logger} from '../log.js'
import {HttpError} from './params.js'

/** A principal's connection is closed after this long without a request (ms). */
const IDLE_CLOSE_MS = 60_000
/** How often idle connections are looked for (ms). */
const IDLE_SWEEP_MS = 10_000
/** Most in-process connections open at once (principals served at the same time). */
const MAX_CONNECTIONS = 256
/** Deadline of a request the HTTP server sends (ms). */
const REQUEST_TIMEOUT_MS = 30_000

interface Session {
  conn: Promise<BrokerConnection>
  /** Set once connected. */
  ready: BrokerConnection | undefined
  lastUsedMs: number
}

export class BrokerSessions {
  private readonly sessions = new Map<string, Session>()
  private readonly sweeper: NodeJS.Timeout
  private closed = false

  constructor(
    private readonly broker: BrokerReadView,
    private readonly log: Logger,
  ) {
    this.sweeper = setInterval(() => this.closeIdle(Date.now() - IDLE_CLOSE_MS), IDLE_SWEEP_MS)
    this.sweeper.unref()
  }

  /** The connection acting as `principal` (opened when there is none); rejects with the broker's refusal (QUOTA_EXCEEDED) or 503. */
  connection(principal: BoundPrincipal): Promise<BrokerConnection> {
    if (this.closed) return Promise.reject(new HttpError(503, 'the HTTP server is closing', 'SERVICE_UNAVAILABLE'))
    const key = keyOf(principal)
    const now = Date.now()
    const existing = this.sessions.get(key)
    if (existing !== undefined) {
      existing.lastUsedMs = now
      return existing.conn
    }
    if (this.sessions.size >= MAX_CONNECTIONS && !this.evictOne()) {
      return Promise.reject(
        new HttpError(
          503,
          `the HTTP server serves ${MAX_CONNECTIONS} principals at once, each with a request in flight: try again shortly`,
          'SERVICE_UNAVAILABLE',
        ),
      )
    }
    const session: Session = {conn: this.open(key, principal), ready: undefined, lastUsedMs: now}
    this.sessions.set(key, session)
    session.conn.then(
      (conn) => {
        session.ready = conn
        conn.once('close', () => {
          if (this.sessions.get(key) === session) this.sessions.delete(key)
        })
      },
      () => {
        if (this.sessions.get(key) === session) this.sessions.delete(key)
      },
    )
    return session.conn
  }

  /** Close every connection (the HTTP server is closing). */
  close(): void {
    this.closed = true
    clearInterval(this.sweeper)
    for (const session of this.sessions.values())
      session.conn.then(
        (conn) => conn.close(),
        () => undefined,
      )
    this.sessions.clear()
  }

  private open(key: string, principal: BoundPrincipal): Promise<BrokerConnection> {
    return BrokerConnection.connect({
      transport: inProcessDial((socket) => this.broker.acceptInProcess(socket, principal)),
      host: this.broker.host,
      port: this.broker.port,
      reconnect: false,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      heartbeatIntervalMs: 0,
      logger: this.log.child('in-process', {principal: key}),
    })
  }

  /** Close the connection idle the longest (no request in flight); false when every one is busy. */
  private evictOne(): boolean {
    let oldest: [string, Session] | undefined
    for (const entry of this.sessions) {
      const conn = entry[1].ready
      if (conn === undefined || conn.inFlight > 0) continue
      if (oldest === undefined || entry[1].lastUsedMs < oldest[1].lastUsedMs) oldest = entry
    }
    if (oldest === undefined) return false
    this.sessions.delete(oldest[0])
    oldest[1].ready!.close()
    return true
  }

  /** Close connections with nothing in flight and no request since `beforeMs`. */
  private closeIdle(beforeMs: number): void {
    for (const [key, session] of this.sessions) {
      const conn = session.ready
      if (conn === undefined || conn.inFlight > 0 || session.lastUsedMs >= beforeMs) continue
      this.sessions.delete(key)
      conn.close()
    }
  }
}

/** The pool's key of a principal. */
function keyOf(principal: BoundPrincipal): string {
  if ('user' in principal) return `user ${principal.user}`
  return 'anonymous' in principal ? '(anonymous)' : '(operator token)'
}
