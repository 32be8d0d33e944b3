/**
 * The synchronous master's connection to its slave: one TCP connection, requests pipelined
 * and matched to `result` answers by opaque, every frame queued in one turn leaving in one
 * socket write. On connecting it asks `stats meta-capabilities`: a meta slave that lists
 * `sync_batch true` gets meta's `sync-batch` frames, any other (a MetaQ gregor slave) MetaQ's
 * one-message `sync`.
 *
 * An idle link sends `version` every {@link HEARTBEAT_MS} (as MetaQ's clients do), so the slave
 * never closes it as idle (connectionIdleTimeoutMs) between two quiet periods of puts.
 *
 * A request not answered within `timeoutMs` fails with SLAVE_DISCONNECTED and the connection is
 * dropped: after a timeout nobody knows what the slave holds, so the master starts over
 * (reconnect, and with a meta slave, compare ends and send what is missing). A dropped
 * connection fails every request in flight and is re-established every `retryMs`.
 */
import {connect, type Socket} from 'node:net'
import type {Logger} from '../../log.js'
import type {FrameDecoder} from '../../protocol/decoder.js'
import {MetaError, Status} from '../../protocol/errors.js'
import {createResponseDecoder, type ResponseFrame} from '../../protocol/frames.js'
import {OutputBuffer} from '../../protocol/output-buffer.js'
import {CAPABILITIES_ITEM, parseCapabilities} from '../../protocol/meta-stats-body.js'

/** An idle link sends a `version` heartbeat this often. */
const HEARTBEAT_MS = 10_000
/**
 * Most requests the link holds unanswered: one more fails at once with SLAVE_DISCONNECTED
 * (the slave is not keeping up), so a stalled slave cannot grow the master's memory.
 */
const SYNC_LINK_PENDING_MAX = 65_536

/** A slave's answer: 200 and its body, or the error (the slave's, or SLAVE_DISCONNECTED). */
type SlaveAnswer = (err: MetaError | null, body: string) => void

interface Pending {
  answer: SlaveAnswer
  sentAtMs: number
  /** Takes the answer frame as it is (a `replicate` value), instead of `answer`. */
  frame?: (frame: ResponseFrame) => void
}

/**
 * Logs a replication connection in (`meta serve` passes the client's SCRAM-SHA-256 login with
 * $META_REPLICATION_USER / $META_REPLICATION_PASSWORD): `send` carries one request and gives its
 * answer frame; rejects when the login is refused.
 */
export type ReplicationLogin = (send: (write: (out: OutputBuffer, opaque: number) => void) => Promise<ResponseFrame>) => Promise<void>

interface SyncLinkOptions {
  host: string
  port: number
  timeoutMs: number
  retryMs: number
  /** Idle time after which a `version` heartbeat is sent (default HEARTBEAT_MS). */
  heartbeatMs?: number
  /** Most unanswered requests (default SYNC_LINK_PENDING_MAX; tests make it small). */
  maxPending?: number
  log: Logger
  /** Log in after every connect, before anything else (none: the slave's anonymous rights). */
  login?: ReplicationLogin
  /** The connection is up and its form known; resolve when the link may carry puts. */
  onConnected(batchForm: boolean): Promise<void>
  /** The connection went down (every request in flight has failed). */
  onDisconnected(reason: string): void
}

export class SyncLink {
  /** Up, capabilities known, and onConnected done: puts may be forwarded. */
  ready = false
  /** The slave serves meta's sync-batch. */
  batchForm = false
  /** The slave obeys `sync-cut` and serves `replicate`: its master can heal a divergent tail. */
  canCut = false
  /** The slave takes its master's topic overlay (`sync-overlay`). */
  canOverlay = false
  private socket: Socket | undefined
  private decoder: FrameDecoder<ResponseFrame> | undefined
  private readonly pending = new Map<number, Pending>()
  private opaque = 0
  private lastSentMs = 0
  private readonly out = new OutputBuffer()
  private flushQueued = false
  private retryTimer: NodeJS.Timeout | undefined
  private readonly sweeper: NodeJS.Timeout
  private closed = false
  /** Why the last attempt failed (logged when it changes, not at every retry). */
  private lastFailure = ''

  constructor(private readonly options: SyncLinkOptions) {
    const heartbeatMs = options.heartbeatMs ?? HEARTBEAT_MS
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.min(100, Math.floor(options.timeoutMs / 4), Math.floor(heartbeatMs / 4))))
    this.sweeper.unref()
    this.connect()
  }

  get address(): string {
    return `${this.options.host}:${this.options.port}`
  }

  /**
   * Send one request: `encode` writes its frame with the given opaque. The answer comes once
   * (SLAVE_DISCONNECTED when the link is down, drops, or the slave does not answer in time).
   */
  request(encode: (out: OutputBuffer, opaque: number) => void, answer: SlaveAnswer, frame?: (frame: ResponseFrame) => void): void {
    const socket = this.socket
    if (socket === undefined || this.closed) {
      answer(disconnected(`no connection to the sync slave ${this.address}`), '')
      return
    }
    const maxPending = this.options.maxPending ?? SYNC_LINK_PENDING_MAX
    if (this.pending.size >= maxPending) {
      answer(disconnected(`the sync slave ${this.address} has ${this.pending.size} requests unanswered, the most the link holds (${maxPending})`), '')
      return
    }
    this.opaque = this.opaque === 0x7fffffff ? 1 : this.opaque + 1
    const opaque = this.opaque
    encode(this.out, opaque)
    this.lastSentMs = Date.now()
    this.pending.set(opaque, {answer, sentAtMs: this.lastSentMs, frame})
    if (!this.flushQueued) {
      this.flushQueued = true
      setImmediate(() => this.flush())
    }
  }

  /** `request` as a promise of the answer's body (rejects with the error). */
  call(encode: (out: OutputBuffer, opaque: number) => void): Promise<string> {
    return new Promise((resolve, reject) => this.request(encode, (err, body) => (err === null ? resolve(body) : reject(err))))
  }

  /**
   * A request whose answer frame is wanted as it is (`replicate`: a value frame, or a result
   * with its status); rejects with SLAVE_DISCONNECTED only.
   */
  requestAsync(encode: (out: OutputBuffer, opaque: number) => void): Promise<ResponseFrame> {
    return new Promise((resolve, reject) => this.request(encode, (err) => reject(err ?? disconnected('no answer')), resolve))
  }

  /** Drop the connection (it is re-established after retryMs). */
  reset(reason: string): void {
    this.socket?.destroy()
    this.down(reason)
  }

  close(): void {
    this.closed = true
    clearInterval(this.sweeper)
    clearTimeout(this.retryTimer)
    this.socket?.destroy()
    this.down('the master is stopping')
  }

  private connect(): void {
    if (this.closed) return
    const socket = connect({host: this.options.host, port: this.options.port, noDelay: true})
    this.socket = socket
    this.decoder = createResponseDecoder({maxBodyBytes: 16 * 1024 * 1024})
    socket.on('data', (chunk: Buffer) => this.received(socket, chunk))
    socket.on('error', (error: Error) => {
      if (this.socket === socket) this.failedAttempt(`${error.message}`)
    })
    socket.on('close', () => {
      if (this.socket === socket) this.down('the connection closed')
    })
    socket.once('connect', () => {
      const login = this.options.login
      if (login === undefined) return this.handshake(socket)
      login((encode) => this.requestAsync(encode)).then(
        () => {
          if (this.socket === socket) this.handshake(socket)
        },
        (error: Error) => {
          if (this.socket !== socket) return
          // failedAttempt logs a reason once, not at every retry; the password is never in it.
          this.failedAttempt(`login refused: ${error.message}`)
          this.reset(`login refused: ${error.message}`)
        },
      )
    })
  }

  /** Learn the slave's form (`stats meta-capabilities`), then let onConnected bring it up to date. */
  private handshake(socket: Socket): void {
    this.request(
      (out, opaque) => out.writeAscii(`stats ${CAPABILITIES_ITEM} ${opaque}\r\n`),
      (err, body) => {
        if (this.socket !== socket) return
        if (err !== null && err.code === 'SLAVE_DISCONNECTED') return
        const caps = err === null ? parseCapabilities(body) : undefined
        this.batchForm = caps?.syncBatch === true
        this.canCut = this.batchForm && caps?.syncCut === true && caps.replicate === true
        this.canOverlay = this.batchForm && caps?.syncOverlay === true
        this.options.onConnected(this.batchForm).then(
          () => {
            if (this.socket !== socket) return
            this.ready = true
            this.lastFailure = ''
            this.options.log.info('sync slave connected', {slave: this.address, form: this.batchForm ? 'sync-batch' : 'sync (MetaQ)'})
          },
          (error: Error) => {
            if (this.socket !== socket) return
            this.failedAttempt(`could not bring the slave up to date: ${error.message}`)
            this.reset(`could not bring the slave up to date: ${error.message}`)
          },
        )
      },
    )
  }

  private received(socket: Socket, chunk: Buffer): void {
    if (this.socket !== socket || this.decoder === undefined) return
    try {
      this.decoder.push(chunk)
      for (let frame = this.decoder.next(); frame !== undefined; frame = this.decoder.next()) {
        const pending = this.pending.get(frame.opaque)
        if (pending === undefined) continue
        this.pending.delete(frame.opaque)
        if (pending.frame !== undefined) {
          pending.frame(frame)
          continue
        }
        const body = frame.type === 'result' ? frame.body.toString('utf8') : ''
        if (frame.type === 'result' && frame.code === Status.OK) pending.answer(null, body)
        else
          pending.answer(
            frame.type === 'result' ? MetaError.fromWire(frame.code, body) : new MetaError('INTERNAL', 'the sync slave answered with a value frame'),
            body,
          )
      }
    } catch (error) {
      this.reset(`undecodable answer from the sync slave: ${(error as Error).message}`)
    }
  }

  /** Write what is queued now (it is otherwise written once per turn). */
  flush(): void {
    this.flushQueued = false
    if (this.out.byteLength === 0) return
    const bytes = this.out.take()
    if (this.socket !== undefined && !this.socket.destroyed) this.socket.write(bytes)
  }

  private sweep(): void {
    const now = Date.now()
    if (this.ready && now - this.lastSentMs >= (this.options.heartbeatMs ?? HEARTBEAT_MS)) {
      this.request(
        (out, opaque) => out.writeAscii(`version ${opaque}\r\n`),
        () => {},
      )
    }
    for (const [, pending] of this.pending) {
      if (now - pending.sentAtMs < this.options.timeoutMs) break // insertion order: the oldest first
      this.reset(`the sync slave did not answer within ${this.options.timeoutMs} ms (sendToSlaveTimeoutInMills)`)
      return
    }
  }

  private failedAttempt(reason: string): void {
    if (reason !== this.lastFailure) {
      this.options.log.warn('sync slave unreachable; puts fail until it is back', {slave: this.address, error: reason, retryMs: this.options.retryMs})
      this.lastFailure = reason
    }
  }

  /** The connection is gone: fail what is in flight and try again later. */
  private down(reason: string): void {
    const socket = this.socket
    if (socket === undefined) return
    this.socket = undefined
    this.decoder = undefined
    const wasReady = this.ready
    this.ready = false
    this.out.take()
    this.flushQueued = false
    const failed = [...this.pending.values()]
    this.pending.clear()
    const err = disconnected(`lost the sync slave ${this.address}: ${reason}`)
    for (const p of failed) p.answer(err, '')
    if (wasReady) this.options.log.warn('sync slave disconnected; puts fail until it is back', {slave: this.address, reason})
    this.options.onDisconnected(reason)
    if (!this.closed) {
      this.retryTimer = setTimeout(() => this.connect(), this.options.retryMs)
      this.retryTimer.unref()
    }
  }
}

/** MetaQ's words for a put the slave did not take. */
export function disconnected(detail: string): MetaError {
  return new MetaError('SLAVE_DISCONNECTED', `Slave is disconnected (${detail})`)
}
