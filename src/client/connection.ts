/**
 * One connection to one broker, shared by everything that talks to that broker: plain TCP,
 * TLS, or an in-process pair to a broker in the same process (transport.ts, in-process.ts).
 *
 * - Pipelining: requests are encoded into one output buffer and written once per tick
 *   (process.nextTick), or as soon as EARLY_FLUSH_BYTES are waiting; responses are matched
 *   by opaque in a preallocated ring (pending.ts). No promise or timer is created per request
 *   on the callback API.
 * - Timeouts: every request has a deadline; one interval timer expires overdue requests with
 *   TIMEOUT (MetaQ's synthetic 504).
 * - Loss: when the socket closes, every request in flight fails with CONNECTION_CLOSED
 *   (retriable); the connection reconnects with exponential backoff (unless closed by the
 *   user). A request made while disconnected triggers a connection attempt at once (instead
 *   of waiting out the back-off) and fails with that attempt's error if it fails.
 * - Heartbeat: after `heartbeatIntervalMs` without traffic it sends `version`, as MetaQ's
 *   client does; three failed heartbeats in a row drop the socket and reconnect.
 * - Capabilities: after connecting it asks `stats meta-capabilities`; a meta broker lists its
 *   protocol extensions (long poll, groups), a MetaQ broker answers with unknown-topic stats,
 *   so extensions are used only where they are understood.
 * - Wrong endpoints fail fast with one line naming the address: nothing listening
 *   (`connection refused`), no TCP connection within the connect timeout, a listener that
 *   accepts but never answers the first request within the connect timeout, and a server that
 *   answers something other than this protocol (an HTTP server) are all CONNECTION_FAILED.
 * - Callbacks: a response callback that throws does not touch the connection (only bytes that
 *   do not decode drop it); the exception goes to 'error' listeners, else it is uncaught.
 */
import {EventEmitter} from 'node:events'
import {OutputBuffer} from '../protocol/output-buffer.js'
import {BufferPool} from '../protocol/buffer-pool.js'
import {createResponseDecoder, type ResponseFrame} from '../protocol/frames.js'
import type {FrameDecoder} from '../protocol/decoder.js'
import {MetaError} from '../protocol/errors.js'
import {encodeStats} from '../protocol/commands/stats.js'
import {CAPABILITIES_ITEM, NO_CAPABILITIES, parseCapabilities, type BrokerCapabilities} from '../protocol/meta-stats-body.js'
import {encodeVersion} from '../protocol/commands/version.js'
import {silentLogger, type Logger} from '../log.js'
import {formatBrokerAddress, type BrokerAddress} from './address.js'
import {reportCallbackError} from './callbacks.js'
import {PendingTable, type ResponseCallback} from './pending.js'
import {scramLogin, type Credentials} from './authenticate.js'
import {connectionSettings, credentialsOf, LOGIN_REFUSED_LOG_MS, type ConnectionOptions, type ConnectionSettings} from './connection-options.js'
import {effectiveTls, SPEAKS_TLS, speaksTls, type ClientTlsOptions} from './tls.js'
import {netTransport, tlsTransport, type Dial, type Transport} from './transport.js'
import {connectionError, resultText} from './connection-errors.js'

export type {BrokerCapabilities} from '../protocol/meta-stats-body.js'

const HEARTBEAT_FAILURES_MAX = 3
const TIMEOUT_SCAN_MS = 100
/**
 * Requests waiting for the end of the tick are written at once when they reach this size (one
 * socket read's worth at the broker), so a producer refilling its window from a chunk of
 * acknowledgements lets the broker start on the first puts while it encodes the rest: with
 * plain puts, 1,000 in flight, at low load, +5–60 % msg/s per run (docs/benchmarks.md).
 */
const EARLY_FLUSH_BYTES = 64 * 1024

type State = 'connecting' | 'open' | 'waiting' | 'closed'

/**
 * Plain TCP connections read through `onread` rather than 'data' events: the rest of a large
 * body (a get's message set, up to a MiB) is read by the kernel straight into the buffer the
 * decoder assembles it in, and everything else into this buffer, shared by every connection
 * of the process (a read is handled before the next one starts), from which it is copied out
 * at its length. Node's own reads allocate a 64 KiB buffer each; at 600 MB/s of 1 KiB
 * messages those allocations (external memory) make V8 start a full GC every ~30 ms and, with the
 * copy into the body, take about 40 % of a consumer's CPU.
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024)

/**
 * Memory for the large bodies of every connection of the process (a get's message set, up to a
 * MiB), given back by released batches (FetchedBatch#release: meta tail and `bench --verify`
 * release each once its records are written or checked). A fresh MiB per get cost more of a
 * consumer's CPU in page faults and full GCs than reading its records did.
 */
const bodies = new BufferPool()

export class BrokerConnection extends EventEmitter {
  readonly address: BrokerAddress
  capabilities: BrokerCapabilities = NO_CAPABILITIES
  /** False from connecting until the broker's answer to `stats meta-capabilities` (or its failure). */
  private capabilitiesKnown = false
  private readonly options: ConnectionSettings
  private readonly retryRefusedLogin: boolean
  /** When a refused login was last logged (retryRefusedLogin), 0: never. */
  private loginRefusedLoggedMs = 0
  private readonly credentials: Credentials | undefined
  /** Set: connections are TLS with these options. */
  private readonly tls: ClientTlsOptions | undefined
  /** Opens the transport of each connection attempt. */
  private readonly dial: Dial
  /** Plain TCP dialled here (no TLS, no transport of the caller's): a silent close may mean a TLS port. */
  private readonly plainTcp: boolean
  private readonly log: Logger
  private readonly pending: PendingTable
  private out = new OutputBuffer()
  private transport: Transport | undefined
  private decoder: FrameDecoder<ResponseFrame>
  /** The body view the socket reads into next, when it is one (see READ_BUFFER). */
  private room: Buffer | undefined
  private state: State = 'connecting'
  private flushScheduled = false
  private lastTrafficMs = Date.now()
  private heartbeatFailures = 0
  private heartbeatInFlight = false
  private reconnectDelayMs: number
  private reconnectTimer: NodeJS.Timeout | undefined
  private readonly ticker: NodeJS.Timeout
  private connectWaiters: Array<(err: MetaError | null) => void> = []
  private lastError: MetaError | undefined

  constructor(options: ConnectionOptions) {
    super()
    this.tls = options.transport === undefined ? effectiveTls(options.tls) : undefined
    this.address = {host: options.host, port: options.port, ...(this.tls === undefined ? {} : {tls: true})}
    this.dial = options.transport ?? (this.tls === undefined ? netTransport(options.host, options.port) : tlsTransport(options.host, options.port, this.tls))
    this.plainTcp = options.transport === undefined && this.tls === undefined
    this.options = connectionSettings(options)
    this.log = (options.logger ?? silentLogger).child('connection', {broker: formatBrokerAddress(this.address)})
    this.retryRefusedLogin = options.retryRefusedLogin === true
    this.credentials = credentialsOf(options)
    this.pending = new PendingTable(this.options.maxInFlight)
    this.decoder = this.newDecoder()
    this.reconnectDelayMs = this.options.reconnectInitialDelayMs
    this.ticker = setInterval(() => this.tick(), TIMEOUT_SCAN_MS)
    this.ticker.unref()
    this.open()
  }

  /** Open a connection and wait until it is usable (rejects with CONNECTION_FAILED). */
  static async connect(options: ConnectionOptions): Promise<BrokerConnection> {
    const conn = new BrokerConnection({...options, reconnect: options.reconnect ?? true})
    try {
      await conn.ready()
    } catch (error) {
      conn.close()
      throw error
    }
    return conn
  }

  get name(): string {
    return formatBrokerAddress(this.address)
  }

  get isOpen(): boolean {
    return this.state === 'open'
  }

  get isClosed(): boolean {
    return this.state === 'closed'
  }

  /** Bytes of requests encoded but not yet handed to the socket (written at the end of the tick). */
  get unsentBytes(): number {
    return this.out.byteLength
  }

  /** Requests awaiting a response. */
  get inFlight(): number {
    return this.pending.size
  }

  /** True when no more requests can be issued until responses arrive. */
  get saturated(): boolean {
    return this.pending.full
  }

  /** Resolve once connected (and capabilities are known); reject if the first attempt fails. */
  ready(): Promise<void> {
    if (this.state === 'open' && this.capabilitiesKnown) return Promise.resolve()
    if (this.state === 'closed') return Promise.reject(new MetaError('CONNECTION_CLOSED', `connection to ${this.name} is closed`))
    return new Promise((resolve, reject) => {
      this.connectWaiters.push((err) => (err === null ? resolve() : reject(err)))
    })
  }

  /**
   * Send one request. `write` encodes it with the given opaque; `callback` receives the
   * response frame or a MetaError (TIMEOUT, CONNECTION_CLOSED, …). Never throws.
   */
  request(write: (out: OutputBuffer, opaque: number) => void, callback: ResponseCallback, timeoutMs?: number): void {
    if (this.state === 'closed') {
      callback(new MetaError('CONNECTION_CLOSED', `connection to ${this.name} is closed`), undefined)
      return
    }
    if (this.pending.full) {
      callback(new MetaError('SERVICE_UNAVAILABLE', `too many requests in flight to ${this.name}`), undefined)
      return
    }
    const opaque = this.pending.add(callback, Date.now() + (timeoutMs ?? this.options.requestTimeoutMs))
    write(this.out, opaque)
    if (this.state === 'open') {
      if (this.out.byteLength >= EARLY_FLUSH_BYTES) this.flush()
      else this.scheduleFlush()
    } else if (this.state === 'waiting') this.reconnectNow()
  }

  /** Promise form of request() for non-hot paths. */
  requestAsync(write: (out: OutputBuffer, opaque: number) => void, timeoutMs?: number): Promise<ResponseFrame> {
    return new Promise((resolve, reject) => {
      this.request(write, (err, frame) => (err === null ? resolve(frame!) : reject(err)), timeoutMs)
    })
  }

  /** `stats <item>` → the body text (throws the broker's error for a non-200). */
  async stats(item = '', timeoutMs?: number): Promise<string> {
    const frame = await this.requestAsync((out, opaque) => encodeStats(out, {item, opaque}), timeoutMs)
    return resultText(frame)
  }

  /** `version` → the broker's version string. */
  async version(timeoutMs?: number): Promise<string> {
    const frame = await this.requestAsync((out, opaque) => encodeVersion(out, {opaque}), timeoutMs)
    return resultText(frame)
  }

  /** Close for good: fail what is in flight, stop reconnecting. */
  close(): void {
    if (this.state === 'closed') return
    this.state = 'closed'
    clearInterval(this.ticker)
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    this.flush()
    this.transport?.end()
    this.transport?.destroy()
    this.failAll(new MetaError('CONNECTION_CLOSED', `connection to ${this.name} was closed`))
    this.settleConnectWaiters(new MetaError('CONNECTION_CLOSED', `connection to ${this.name} was closed`))
    this.emit('close')
  }

  /** Finish writing what is queued, then close (used after a last request). */
  async drainAndClose(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (this.pending.size > 0 && Date.now() < deadline && this.state !== 'closed') {
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    this.close()
  }

  /** A request is waiting: try now instead of at the end of the back-off. */
  private reconnectNow(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    this.reconnectTimer = undefined
    this.open()
  }

  private open(): void {
    this.state = 'connecting'
    this.decoder = this.newDecoder()
    this.room = undefined
    // Events of a replaced transport (a reconnect meanwhile) are ignored.
    let connectTimer: NodeJS.Timeout | undefined
    let answered = false
    const transport: Transport = this.dial({
      connect: () => {
        clearTimeout(connectTimer)
        if (this.transport !== transport) return
        if (this.credentials === undefined) this.onConnected()
        else this.authenticate(transport, this.credentials)
      },
      data: (chunk) => {
        answered = true
        if (this.transport === transport) this.onData(chunk)
      },
      readBuffer: () => this.nextReadBuffer(),
      read: (bytes, buf) => {
        answered = true
        if (this.transport === transport) this.onRead(bytes, buf)
      },
      error: (err: NodeJS.ErrnoException) => {
        // The user reads the error in words; OpenSSL's own text is for the debug log.
        if (!(err instanceof MetaError)) this.log.debug('socket error', {code: err.code, error: err.message})
        if (this.transport === transport) this.lastError = err instanceof MetaError ? err : connectionError(this.name, err)
      },
      close: () => {
        clearTimeout(connectTimer)
        if (this.transport !== transport) return
        // Plain TCP closed before any answer: a TLS port hangs up on plain traffic; ask it.
        if (this.plainTcp && !this.capabilitiesKnown && this.state !== 'closed' && this.lastError === undefined && !answered) {
          void speaksTls(this.address.host, this.address.port, this.options.connectTimeoutMs).then((tls) => {
            if (tls) this.lastError = new MetaError('CONNECTION_FAILED', `cannot reach broker ${this.name}: ${SPEAKS_TLS}`)
            if (this.transport === transport) this.onSocketClosed()
          })
          return
        }
        this.onSocketClosed()
      },
    })
    this.transport = transport
    connectTimer = setTimeout(() => {
      transport.destroy(
        new MetaError(
          'CONNECTION_FAILED',
          `cannot reach broker ${this.name}: no connection within ${formatMs(this.options.connectTimeoutMs)} (a host that drops packets, or a wrong address?)`,
        ),
      )
    }, this.options.connectTimeoutMs)
    connectTimer.unref()
  }

  /**
   * Log in before anything else leaves: requests made meanwhile wait in `out` (the state stays
   * `connecting`), the login's frames go to the socket directly. A refused login fails ready()
   * with UNAUTHORIZED and closes the connection for good (retrying would only lock it out),
   * unless retryRefusedLogin (a replication link) asks to retry it with the back-off.
   */
  private authenticate(transport: Transport, credentials: Credentials): void {
    const send = (write: (out: OutputBuffer, opaque: number) => void) =>
      new Promise<ResponseFrame>((resolve, reject) => {
        const out = new OutputBuffer()
        write(
          out,
          this.pending.add((err, frame) => (err === null ? resolve(frame!) : reject(err)), Date.now() + this.options.connectTimeoutMs),
        )
        transport.write(out.take())
      })
    scramLogin(credentials, this.name, send).then(
      () => {
        if (this.transport === transport) this.onConnected()
      },
      (error: unknown) => {
        if (this.transport !== transport) return
        const err = error instanceof MetaError ? error : connectionError(this.name, error as Error)
        if (err.code !== 'UNAUTHORIZED') return void transport.destroy(err)
        if (this.retryRefusedLogin) {
          const now = Date.now()
          if (now - this.loginRefusedLoggedMs >= LOGIN_REFUSED_LOG_MS) {
            this.loginRefusedLoggedMs = now
            this.log.error('login refused; retrying with back-off', {user: credentials.user, error: err.message, loggedAtMostEveryMs: LOGIN_REFUSED_LOG_MS})
          }
          return void transport.destroy(err)
        }
        // The caller hears UNAUTHORIZED (the CLI prints it as its one error line).
        this.log.debug('login refused', {user: credentials.user, error: err.message})
        this.settleConnectWaiters(err)
        this.failAll(err)
        this.close()
      },
    )
  }

  private onConnected(): void {
    this.state = 'open'
    this.capabilitiesKnown = false
    this.reconnectDelayMs = this.options.reconnectInitialDelayMs
    this.heartbeatFailures = 0
    this.lastTrafficMs = Date.now()
    this.log.debug('connected')
    // Learn what the broker supports before anyone waiting on ready() sends extensions. Every
    // broker answers this (a MetaQ broker as stats of an unknown topic), so no answer within
    // the connect timeout means whatever listens there is not a broker.
    const transport = this.transport
    this.request(
      (out, opaque) => encodeStats(out, {item: CAPABILITIES_ITEM, opaque}),
      (err, frame) => {
        // Lost before the answer: onSocketClosed reports the failure to ready() waiters.
        if (err !== null && this.state !== 'open') return
        if (err !== null) {
          transport?.destroy(
            new MetaError(
              'CONNECTION_FAILED',
              `cannot reach broker ${this.name}: it accepted the connection but did not answer within ${formatMs(this.options.connectTimeoutMs)} (is a meta or MetaQ broker listening there?)`,
            ),
          )
          return
        }
        this.capabilities = frame?.type === 'result' && frame.code === 200 ? parseCapabilities(frame.body.toString('utf8')) : NO_CAPABILITIES
        this.capabilitiesKnown = true
        this.settleConnectWaiters(null)
        this.emit('connect')
      },
      this.options.connectTimeoutMs,
    )
    this.flush()
  }

  private onSocketClosed(): void {
    const wasOpen = this.state === 'open'
    // One that failed its handshake was never usable: a failed connect, not a lost connection.
    const established = wasOpen && this.capabilitiesKnown
    this.capabilitiesKnown = false
    this.transport = undefined
    if (this.state === 'closed') return
    const err = this.lastError ?? new MetaError('CONNECTION_CLOSED', `broker ${this.name} closed the connection`)
    this.lastError = undefined
    this.out = new OutputBuffer()
    this.failAll(wasOpen ? new MetaError('CONNECTION_CLOSED', `connection to ${this.name} lost: ${err.message}`) : err)
    this.settleConnectWaiters(err)
    if (established) {
      this.log.warn('connection lost', {error: err.message})
      this.emit('disconnect', err)
    }
    if (!this.options.reconnect) {
      this.state = 'closed'
      clearInterval(this.ticker)
      this.emit('close')
      return
    }
    this.state = 'waiting'
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined
      if (this.state === 'waiting') this.open()
    }, this.reconnectDelayMs)
    this.reconnectDelayMs = Math.min(this.reconnectDelayMs * 2, this.options.reconnectMaxDelayMs)
  }

  /**
   * A response body (one a connection's decoder assembled) is no longer read by anyone: its
   * memory takes a later body (see `bodies`). Anything else is ignored.
   */
  recycle(body: Uint8Array): void {
    bodies.give(body)
  }

  private newDecoder(): FrameDecoder<ResponseFrame> {
    const decoder = createResponseDecoder({maxBodyBytes: this.options.maxResponseBytes})
    decoder.allocateBody = (bytes) => bodies.take(bytes)
    return decoder
  }

  /** Where the socket reads next (plain TCP): the rest of a pending body, else the shared buffer. */
  private nextReadBuffer(): Buffer {
    this.room = this.decoder.bodyRoom()
    return this.room ?? READ_BUFFER
  }

  /** `bytes` were read into `buf` (see READ_BUFFER). */
  private onRead(bytes: number, buf: Buffer): void {
    if (buf === this.room) {
      this.lastTrafficMs = Date.now()
      this.decoder.bodyFilled(bytes)
      this.takeFrames(buf)
      return
    }
    // Copied out at its length: frames keep views of it (the pool serves small reads).
    const chunk = Buffer.allocUnsafe(bytes)
    chunk.set(buf.subarray(0, bytes))
    this.onData(chunk)
  }

  private onData(chunk: Buffer): void {
    this.lastTrafficMs = Date.now()
    this.decoder.push(chunk)
    this.takeFrames(chunk)
  }

  /** Answer every whole frame the decoder has; `chunk` (the last bytes read) names a non-broker. */
  private takeFrames(chunk: Uint8Array): void {
    for (;;) {
      let frame: ResponseFrame | undefined
      try {
        frame = this.decoder.next()
      } catch (error) {
        if (!this.capabilitiesKnown) {
          // The first answer is not this protocol: an HTTP server, a database, a typo'd port.
          const head = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length)
            .toString('latin1')
            .split(/\r?\n/, 1)[0]
            .replace(/[^\x20-\x7e]/g, '?')
            .slice(0, 40)
          this.log.debug('not a broker', {error: (error as Error).message})
          this.transport?.destroy(
            new MetaError(
              'CONNECTION_FAILED',
              `cannot reach broker ${this.name}: what answers there does not speak the MetaQ protocol (it said "${head}"; an HTTP server or another service?)`,
            ),
          )
          return
        }
        this.log.error('malformed response; dropping the connection', {error: (error as Error).message})
        this.transport?.destroy()
        return
      }
      if (frame === undefined) return
      const callback = this.pending.take(frame.opaque)
      if (callback === undefined) {
        this.log.debug('response for an unknown or expired request', {opaque: frame.opaque})
        continue
      }
      this.invoke(callback, null, frame)
    }
  }

  /** Run a response callback; what it throws is reported, and never reaches the connection. */
  private invoke(callback: ResponseCallback, err: MetaError | null, frame: ResponseFrame | undefined): void {
    try {
      callback(err, frame)
    } catch (error) {
      reportCallbackError(this, error)
    }
  }

  private tick(): void {
    const now = Date.now()
    this.pending.expire(now, (callback, opaque) => {
      this.invoke(callback, new MetaError('TIMEOUT', `request ${opaque} to ${this.name} timed out`), undefined)
    })
    const idle = this.options.heartbeatIntervalMs
    if (idle > 0 && this.state === 'open' && !this.heartbeatInFlight && now - this.lastTrafficMs >= idle) {
      this.heartbeat()
    }
  }

  private heartbeat(): void {
    this.heartbeatInFlight = true
    this.lastTrafficMs = Date.now()
    this.request(
      (out, opaque) => encodeVersion(out, {opaque}),
      (err) => {
        this.heartbeatInFlight = false
        if (err === null) {
          this.heartbeatFailures = 0
          return
        }
        this.heartbeatFailures += 1
        if (this.heartbeatFailures >= HEARTBEAT_FAILURES_MAX) {
          this.log.warn('heartbeats failed; reconnecting', {failures: this.heartbeatFailures})
          this.transport?.destroy()
        }
      },
      5_000,
    )
  }

  private failAll(err: MetaError): void {
    this.pending.drain((callback) => this.invoke(callback, err, undefined))
  }

  private settleConnectWaiters(err: MetaError | null): void {
    const waiters = this.connectWaiters
    this.connectWaiters = []
    for (const waiter of waiters) waiter(err)
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(() => this.flush())
  }

  private flush(): void {
    this.flushScheduled = false
    if (this.out.byteLength === 0 || this.transport === undefined || this.state !== 'open') return
    this.lastTrafficMs = Date.now()
    this.transport.write(this.out.take())
  }
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}
