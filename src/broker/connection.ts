/**
 * One client connection: socket bytes → decoder → handler, and responses → one socket write
 * per event-loop turn.
 *
 * Writes: handlers encode responses into `out` (small frames: put acks, results) or, for big
 * `value` bodies, queue the body as its own chunk after its header. A flush scheduled with
 * process.nextTick hands everything queued during the current callback to the socket inside
 * one cork/uncork, so many acks leave in one writev and a header never leaves without its
 * body (some MetaQ clients read a response as one chunk, spec A.2.4).
 *
 * Memory (docs/invariants.md#connections): what a connection holds is counted in bytes:
 * answers not yet taken by the kernel, plus what each request in flight will need (a read its
 * maxSize, a put its body, anything else {@link REQUEST_OVERHEAD_BYTES}). Before each frame is
 * handled the total is compared with `maxPendingBytes`; at or over it, decoding stops (frames
 * already received wait in the decoder) and the socket is paused, until answers drain or
 * requests finish. So one connection holds at most maxPendingBytes + one request's bytes + the
 * decoder's buffer (one socket read, or one body up to the message limit), however it
 * pipelines. Work a handler must do later for a connection (a woken long poll) waits the same
 * way ({@link Connection.whenUnsaturated}).
 *
 * Ending: bad input, `quit`, a timeout and broker shutdown stop decoding, answer every request
 * decoded before (puts still waiting for the disk included; parked waits are answered at once
 * by the handler's `draining`), then flush and close the socket. A client that half-closes its
 * side (the server allows half-open sockets) has every whole request it sent answered first,
 * then is closed the same way. A socket that never drains is destroyed after
 * {@link CLOSE_DEADLINE_MS}.
 */
import {OutputBuffer} from '../protocol/output-buffer.js'
import {encodeErrorResult, encodeResult} from '../protocol/commands/result.js'
import {encodePutResult, encodePutResultOfHalves} from '../protocol/commands/put.js'
import {valueHeader} from '../protocol/commands/value.js'
import {createRequestDecoder, type RequestFrame} from '../protocol/frames.js'
import type {FrameDecoder} from '../protocol/decoder.js'
import {isMetaError, type ErrorCode} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import {addressKey} from './auth/throttle.js'
import type {PrincipalQuota} from './auth/quota.js'

/** What a request in flight costs besides its data (frame, closure, timer): an estimate. */
const REQUEST_OVERHEAD_BYTES = 256
/** The first byte of a TLS record carrying a handshake (a ClientHello): MetaQ's text commands never start with it. */
const TLS_HANDSHAKE_RECORD = 0x16
const NOT_TLS_ANSWER = Buffer.from('error this port does not speak TLS\r\n')
/** How long a closing connection may take to answer what it decoded and hand over its last bytes. */
export const CLOSE_DEADLINE_MS = 5000
/**
 * A connection's answer buffer starts this small (from Node's shared buffer pool, not a malloc of
 * its own) and grows with its traffic: a connection that asks one thing and leaves, by the
 * thousand, leaves no 16 KiB block each to fragment the allocator's heap
 * (docs/security.md#memory-after-floods).
 */
const OUT_INITIAL_BYTES = 1024
/** Bodies at least this big are queued as their own chunk instead of being copied. */
const LARGE_BODY_BYTES = 64 * 1024

/**
 * What a connection uses of its socket: a `net.Socket` (a TLS one on the TLS port), or the
 * broker's end of an in-process pair (src/client/in-process.ts, bound by listener.ts).
 */
export interface ConnectionSocket {
  readonly remoteAddress?: string | undefined
  readonly remotePort?: number | undefined
  readonly bytesRead: number
  readonly bytesWritten: number
  readonly writableLength: number
  readonly destroyed: boolean
  setNoDelay(noDelay?: boolean): unknown
  on(event: 'data', listener: (chunk: Buffer) => void): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
  on(event: 'drain' | 'end' | 'close', listener: () => void): unknown
  once(event: 'close', listener: () => void): unknown
  write(chunk: Buffer, done?: () => void): boolean
  cork(): void
  uncork(): void
  end(): unknown
  pause(): unknown
  resume(): unknown
  destroy(): unknown
}

/**
 * Who an in-process connection acts as, for good (listener.ts acceptInProcess): a user of the
 * users file, anonymous, or the HTTP server's operator token (every right, and no user: no
 * name a login or a certificate could give).
 */
export type BoundPrincipal = {user: string} | {anonymous: true} | {operatorToken: true}

interface ConnectionLimits {
  /** Largest body of a request (the maximum message size). */
  maxBodyBytes: number
  /** Bodies up to this size are skipped and answered with an error; larger ones close the connection. */
  maxSkippedBodyBytes?: number
  maxHeaderBytes?: number
  /** Bytes queued and in flight at which the connection stops taking requests. */
  maxPendingBytes: number
  /** How the connection is named in logs and stats (default: the socket's address:port). */
  remote?: string
}

export interface ConnectionHandler {
  /** Handle one request; may answer now or later (track with beginRequest/endRequest). */
  handle(conn: Connection, frame: RequestFrame): void
  /** Whether a request whose body is still arriving will be refused (its body is then skipped, never held). */
  refusesBody?(conn: Connection, frame: RequestFrame): boolean
  /** The connection takes no more requests: answer what it has waiting (long polls) now. */
  draining(conn: Connection): void
  closed(conn: Connection): void
}

let nextConnectionId = 1

export class Connection {
  readonly id = nextConnectionId++
  readonly remote: string
  /**
   * Over TLS with client certificates required (tlsCa): the common name (CN) of the
   * certificate the client presented, verified against tlsCa. The seam for authorization: the
   * user this connection is, without a password. Undefined on a plain connection.
   */
  certUser: string | undefined
  /**
   * Set on an in-process connection (the HTTP server's): the principal it acts as, which no
   * login replaces. It is no network peer: no per-address cap or login timeout applies to it.
   */
  bound: BoundPrincipal | undefined = undefined
  /** Set once the socket is closing; late answers are dropped. */
  closing = false
  /** When the last whole request arrived (ms since the epoch); the connection's start at first. */
  lastRequestAtMs = Date.now()
  /** When the partial frame now being received began (0 = none, or the broker is not reading). */
  frameStartedAtMs = 0
  /** When the connection was accepted (ms since the epoch). */
  readonly openedAtMs = Date.now()
  /** The key its client address is counted under (auth/throttle.ts addressKey: an IPv6 address's /64). */
  readonly address: string
  /** Called when the connection logs in (true) or is anonymous again (false): the listener's counts per address. */
  onLoginChange: ((loggedIn: boolean) => void) | undefined = undefined
  private userName: string | undefined = undefined
  /** The quota of the user it logged in as (auth/quota.ts); undefined: anonymous, nothing counted. */
  quota: PrincipalQuota | undefined = undefined
  /** Set while a byte rate holds the connection (auth/quota.ts): answers wait and nothing is read. */
  private throttledUntilMs = 0
  private throttleTimer: NodeJS.Timeout | undefined = undefined
  /** A SCRAM exchange between auth-start and auth-finish (broker/auth/handlers.ts). */
  authExchange: {user: string; clientFirstBare: string; serverFirst: string; nonce: string} | undefined = undefined
  /** A login is being checked or its answer is waiting (auth/throttle.ts): one at a time per connection. */
  loggingIn = false
  private readonly decoder: FrameDecoder<RequestFrame>
  private readonly out = new OutputBuffer(OUT_INITIAL_BYTES)
  private chunks: Buffer[] = []
  private chunkBytes = 0
  /** Called once the socket has written the chunks queued so far (sendValue's `written`). */
  private whenWritten: Array<() => void> = []
  private flushScheduled = false
  private pumpScheduled = false
  private pumping = false
  private inFlight = 0
  /** Bytes reserved by requests in flight. */
  private heldBytes = 0
  /** Work waiting for the connection to drop below its limit. */
  private deferred: Array<() => void> = []
  private readPaused = false
  /** No byte has arrived yet (the first ones tell a TLS client on the plain port). */
  private firstData = true
  /** No more requests are decoded (draining or closing). */
  private stopped = false
  /** Close as soon as no request is in flight. */
  private closeWhenIdle = false
  /** The client half-closed: end once the requests it sent are decoded. */
  private peerEnded = false
  private idleWaiters: Array<() => void> = []
  private readonly maxPendingBytes: number

  constructor(
    readonly socket: ConnectionSocket,
    private readonly handler: ConnectionHandler,
    private readonly log: Logger,
    limits: ConnectionLimits,
  ) {
    this.remote = limits.remote ?? `${socket.remoteAddress}:${socket.remotePort}`
    this.address = addressKey(socket.remoteAddress ?? '')
    this.maxPendingBytes = limits.maxPendingBytes
    this.decoder = createRequestDecoder(limits)
    if (handler.refusesBody !== undefined) this.decoder.refuseBody = (frame) => handler.refusesBody!(this, frame)
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('drain', this.afterWrite)
    socket.on('end', () => {
      this.peerEnded = true
      this.pump()
    })
    socket.on('error', (err) => this.log.debug('connection error', {remote: this.remote, error: err.message}))
    socket.on('close', () => {
      this.closing = true
      if (this.decoder.inFrame && !this.stopped) this.log.debug('client left mid-frame; partial frame dropped', {remote: this.remote})
      this.handler.closed(this)
      this.settleIdle()
    })
  }

  /** The user this connection authenticated as (auth-finish, or its client certificate); undefined: anonymous. */
  get user(): string | undefined {
    return this.userName
  }

  set user(user: string | undefined) {
    const was = this.userName !== undefined
    this.userName = user
    if (was !== (user !== undefined)) this.onLoginChange?.(user !== undefined)
  }

  /**
   * Hold this connection for `ms` (a byte rate passed): its answers are not sent and its
   * requests not read until then. A longer hold extends a shorter one.
   */
  throttle(ms: number): void {
    const until = Date.now() + ms
    if (this.closing || until <= this.throttledUntilMs) return
    this.throttledUntilMs = until
    this.pauseReading()
    clearTimeout(this.throttleTimer)
    this.throttleTimer = setTimeout(() => {
      this.throttledUntilMs = 0
      this.throttleTimer = undefined
      this.scheduleFlush()
      this.schedulePump()
    }, ms).unref()
  }

  /** Requests awaiting an answer. */
  get requestsInFlight(): number {
    return this.inFlight
  }

  /** Bytes this connection holds: answers not yet taken by the kernel, and requests in flight. */
  get pendingBytes(): number {
    return this.heldBytes + this.out.byteLength + this.chunkBytes + this.socket.writableLength
  }

  /** True while the connection is at its limit: no new request is taken. */
  get saturated(): boolean {
    return this.pendingBytes >= this.maxPendingBytes
  }

  /** True while the broker reads this connection's requests. */
  get reading(): boolean {
    return !this.readPaused && !this.stopped
  }

  /**
   * Mark a request as answered later (puts waiting for the disk, long polls, reads), holding
   * `bytes` of its data against the connection's limit until {@link endRequest}.
   */
  beginRequest(bytes = 0): void {
    this.inFlight += 1
    this.heldBytes += bytes + REQUEST_OVERHEAD_BYTES
  }

  /** The request begun with `bytes` is answered (send its answer first). */
  endRequest(bytes = 0): void {
    this.inFlight -= 1
    this.heldBytes -= bytes + REQUEST_OVERHEAD_BYTES
    if (this.inFlight === 0 && this.deferred.length === 0) this.settleIdle()
    if (this.readPaused || this.deferred.length > 0) this.schedulePump()
  }

  /** Run `work` now if the connection is below its limit, else once it drops below (in order). */
  whenUnsaturated(work: () => void): void {
    if (this.deferred.length === 0 && !this.saturated) {
      work()
      return
    }
    this.deferred.push(work)
    this.pauseReading()
  }

  sendResult(code: number, opaque: number, body: string | Uint8Array = ''): void {
    if (this.closing) return
    encodeResult(this.out, code, opaque, body)
    this.scheduleFlush()
  }

  /**
   * An error result carrying its stable code (protocol/errors.ts): every error a handler
   * reports goes through here, so meta's clients read the code instead of the text.
   */
  sendError(code: ErrorCode, opaque: number, text: string, status?: number): void {
    if (this.closing) return
    encodeErrorResult(this.out, code, opaque, text, status)
    this.scheduleFlush()
  }

  /** A successful put's `result 200` (body "<msgId> <partition> <offset>"), encoded without a body string. */
  sendPutResult(opaque: number, id: bigint, partition: number, offset: number): void {
    if (this.closing) return
    encodePutResult(this.out, opaque, id, partition, offset)
    this.scheduleFlush()
  }

  /** sendPutResult for the id with these int64 halves (MessageIdGenerator#nextHalves): no bigint, no string. */
  sendPutResultOfHalves(opaque: number, idHigh: number, idLow: number, partition: number, offset: number): void {
    if (this.closing) return
    encodePutResultOfHalves(this.out, opaque, idHigh, idLow, partition, offset)
    this.scheduleFlush()
  }

  /**
   * A `value` response: header and raw log bytes, leaving in the same socket write.
   * `written`, if given, runs once `data` is no longer needed: at once when it was copied (a
   * small body, or a closing connection), else after the socket has written it. It does not
   * run when the socket is destroyed before the write.
   */
  sendValue(opaque: number, data: Buffer, written?: () => void): void {
    if (this.closing) {
      written?.()
      return
    }
    if (this.quota !== undefined) {
      const waitMs = this.quota.chargeFetch(data.length)
      if (waitMs > 0) this.throttle(waitMs)
    }
    this.out.writeAscii(valueHeader(data.length, opaque))
    if (data.length < LARGE_BODY_BYTES) {
      this.out.writeBytes(data)
      written?.()
    } else {
      this.chunks.push(this.out.take(), data)
      this.chunkBytes += data.length
      if (written !== undefined) this.whenWritten.push(written)
    }
    this.scheduleFlush()
  }

  /**
   * Take no more requests; answer every one already decoded (the handler answers parked
   * waits at once), then close (quit, bad input, timeouts).
   */
  end(): void {
    if (this.closing) return
    this.stopReading()
    this.closeWhenIdle = true
    this.handler.draining(this)
    if (this.inFlight === 0 && this.deferred.length === 0) this.close()
    else setTimeout(() => this.close(), CLOSE_DEADLINE_MS).unref()
  }

  /** Flush what is answered and close the socket now (answers that come later are dropped). */
  close(): void {
    if (this.closing) return
    this.closing = true
    clearTimeout(this.throttleTimer)
    this.throttledUntilMs = 0
    this.stopped = true
    this.flush()
    this.socket.end()
    // Keep reading (and discarding: onData ignores a stopped connection) so the peer's FIN is
    // seen and the socket closes; a paused socket would wait for the deadline below.
    this.socket.resume()
    // A peer that never reads would keep the socket half-open; do not wait for it forever.
    setTimeout(() => this.socket.destroy(), CLOSE_DEADLINE_MS).unref()
  }

  /** Stop decoding requests (shutdown, ending); what arrives from now on is discarded. */
  stopReading(): void {
    this.stopped = true
    this.frameStartedAtMs = 0
    // Reading on (and discarding) lets a client's FIN or reset be seen meanwhile.
    this.readPaused = false
    this.socket.resume()
  }

  /** Resolves once no request is in flight (at once if none is), or the socket closed. */
  idle(): Promise<void> {
    if ((this.inFlight === 0 && this.deferred.length === 0) || this.socket.destroyed) return Promise.resolve()
    return new Promise((resolve) => this.idleWaiters.push(resolve))
  }

  /**
   * Close this connection if a frame has been arriving for longer than `frameTimeoutMs`, no
   * request came for `idleTimeoutMs` while none was in flight, or it has not logged in
   * `authTimeoutMs` after it opened and no login is being checked (0 = no limit). Called
   * periodically by the broker; returns why it closed, if it did.
   */
  checkTimeouts(nowMs: number, frameTimeoutMs: number, idleTimeoutMs: number, authTimeoutMs = 0): string | undefined {
    if (this.stopped) return undefined
    if (authTimeoutMs > 0 && this.userName === undefined && !this.loggingIn && nowMs - this.openedAtMs > authTimeoutMs) {
      this.end()
      return `not logged in ${authTimeoutMs} ms after connecting (connectionAuthTimeoutMs; this broker gives anonymous connections no right)`
    }
    if (frameTimeoutMs > 0 && this.frameStartedAtMs > 0 && nowMs - this.frameStartedAtMs > frameTimeoutMs) {
      this.end()
      return `a frame incomplete after ${frameTimeoutMs} ms`
    }
    if (idleTimeoutMs > 0 && this.inFlight === 0 && nowMs - this.lastRequestAtMs > idleTimeoutMs) {
      this.end()
      return `no request for ${idleTimeoutMs} ms`
    }
    return undefined
  }

  private onData(chunk: Buffer): void {
    if (this.stopped) return
    if (this.firstData) {
      this.firstData = false
      // A TLS ClientHello (record type 22) on this plain port: answer in plain text and hang up
      // at once, so the client's TLS layer fails on a non-TLS record (it says "drop --tls")
      // instead of waiting for a handshake that never comes.
      if (chunk[0] === TLS_HANDSHAKE_RECORD) {
        this.log.debug('TLS handshake on a plain port; closing', {remote: this.remote})
        this.socket.write(NOT_TLS_ANSWER)
        this.close()
        return
      }
    }
    this.decoder.push(chunk)
    this.pump()
  }

  /**
   * Run deferred work and decode buffered requests while below the limit; then read on, or
   * pause the socket until answers drain or requests finish.
   */
  private pump(): void {
    if (this.pumping || this.closing) return
    this.pumping = true
    let decoded = 0
    let drained = false
    try {
      while (this.deferred.length > 0 && !this.saturated) this.deferred.shift()!()
      while (!this.stopped && !this.saturated && this.throttledUntilMs === 0) {
        const frame = this.decoder.next()
        if (frame === undefined) {
          drained = true
          break
        }
        decoded += 1
        this.handler.handle(this, frame)
      }
    } catch (error) {
      this.rejectInput(error)
    } finally {
      this.pumping = false
    }
    // The client sent all it will: once its whole requests are decoded, finish like quit.
    if (this.peerEnded && drained && !this.stopped) this.end()
    if (this.stopped) {
      // Deferred work may have been answered at once: an ending connection may be done.
      if (this.inFlight === 0 && this.deferred.length === 0) this.settleIdle()
      return
    }
    const now = decoded > 0 || this.frameStartedAtMs === 0 ? Date.now() : 0
    if (decoded > 0) this.lastRequestAtMs = now
    if (this.saturated || this.deferred.length > 0 || this.throttledUntilMs !== 0) {
      this.pauseReading()
    } else {
      if (this.readPaused) {
        this.readPaused = false
        this.socket.resume()
      }
      // A partial frame (or skipped body) is the client's to finish from now on.
      if (!this.decoder.inFrame) this.frameStartedAtMs = 0
      else if (decoded > 0 || this.frameStartedAtMs === 0) this.frameStartedAtMs = now
    }
  }

  private pauseReading(): void {
    // The broker is not reading: a partial frame is not the client's fault meanwhile.
    this.frameStartedAtMs = 0
    if (this.readPaused || this.stopped) return
    this.readPaused = true
    this.socket.pause()
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return
    this.pumpScheduled = true
    // Not synchronously: endRequest runs inside storage callbacks, which must not re-enter.
    process.nextTick(() => {
      this.pumpScheduled = false
      this.pump()
    })
  }

  /** A socket write finished (or the socket drained): maybe take requests again. */
  private readonly afterWrite = (): void => {
    if (this.readPaused || this.deferred.length > 0) this.pump()
  }

  private settleIdle(): void {
    if (this.closeWhenIdle && this.inFlight === 0 && this.deferred.length === 0) {
      // Answers were queued before endRequest; they leave with the close, on the next tick
      // (unless a request began meanwhile).
      process.nextTick(() => {
        if (this.inFlight === 0 && this.deferred.length === 0) this.close()
      })
    }
    if (this.idleWaiters.length === 0) return
    if (!this.socket.destroyed && (this.inFlight > 0 || this.deferred.length > 0)) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const resolve of waiters) resolve()
  }

  private rejectInput(error: unknown): void {
    if (isMetaError(error, 'DECODE_ERROR') || isMetaError(error, 'FRAME_TOO_LARGE')) {
      this.log
        .limited('bad-request')
        .warn('bad request; closing connection after answering the requests before it', {remote: this.remote, error: error.message})
    } else {
      this.log.limited('handler-failed').error('request handler failed; closing connection', {remote: this.remote, error: String(error)})
    }
    this.end()
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(() => this.flush())
  }

  private flush(): void {
    this.flushScheduled = false
    // Held by a byte rate: the answers leave when the hold ends (throttle's timer flushes).
    if (this.throttledUntilMs !== 0 && !this.closing) return
    const written = this.whenWritten
    this.whenWritten = []
    if (this.socket.destroyed) return
    if (this.out.byteLength > 0) this.chunks.push(this.out.take())
    const chunks = this.chunks
    if (chunks.length === 0) return
    this.chunks = []
    this.chunkBytes = 0
    // The last write's callback runs when the socket has taken every chunk before it too.
    const done =
      written.length === 0
        ? this.afterWrite
        : () => {
            this.afterWrite()
            for (const f of written) f()
          }
    if (chunks.length === 1) {
      this.socket.write(chunks[0], done)
    } else {
      this.socket.cork()
      for (let i = 0; i < chunks.length - 1; i++) this.socket.write(chunks[i])
      this.socket.write(chunks[chunks.length - 1], done)
      this.socket.uncork()
    }
  }
}
