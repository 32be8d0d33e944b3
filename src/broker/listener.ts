/**
 * The broker's TCP listener: accepts connections (one `Connection` each), sweeps them for
 * frame and idle timeouts, keeps the connection cap under the descriptor limit, counts their
 * traffic, and drains and closes them at shutdown.
 *
 * Where the descriptor limit is known (Linux), connections beyond what it leaves (fd-limit.ts)
 * are refused with a rate-limited warning instead of libuv's silent accept-and-close at EMFILE.
 *
 * With tlsPort, a TLS server (tls.ts) listens beside the plain one (or alone: tlsOnly) and
 * hands its handshaken sockets to the same accept, sweep, limits and shutdown.
 *
 * In-process connections (the HTTP server's, src/client/in-process.ts) join the same set,
 * sweep and shutdown, bound to a principal for good: they are no network peer, so no
 * per-address cap and no login timeout applies to them (docs/http.md#how-the-http-server-reaches-its-broker).
 */
import {createServer, type Server, type Socket} from 'node:net'
import {networkInterfaces} from 'node:os'
import {MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import {quoteName, type Logger} from '../log.js'
import {DEFAULT_MAX_OPEN_FILES} from '../storage/index.js'
import type {BrokerConfig} from './config/index.js'
import {certificateUser, checkTlsSettings, TlsPort} from './tls.js'
import {CLOSE_DEADLINE_MS, Connection, type BoundPrincipal, type ConnectionHandler, type ConnectionSocket} from './connection.js'
import {connectionCap, openFileCount, openFileLimit, storeFileBudget} from './fd-limit.js'
import {MemoryReturn} from './memory-return.js'
import {isUserName} from './auth/users-file.js'

/** A put body up to this many times the message limit is skipped and answered; a larger one closes the connection. */
const OVERSIZE_SKIP_FACTOR = 4
/** Longest period of the connection sweep (timeouts, descriptor cap). */
const SWEEP_INTERVAL_MAX_MS = 1000
/** Shortest period of the connection sweep. */
const SWEEP_INTERVAL_MIN_MS = 10
/** At most one warning per this long about refused connections (the rest are counted in it). */
const REFUSAL_WARNING_INTERVAL_MS = 60_000
/** How an in-process connection is named where a client's address:port would be. */
export const IN_PROCESS_REMOTE = 'in-process:http'

interface ListenerOptions {
  /** The configuration in force (a reload replaces it). */
  config(): BrokerConfig
  /** The broker is stopping: new sockets are destroyed at once. */
  closing(): boolean
  /** Files the store holds open now (its descriptor budget is counted apart from connections). */
  storeOpenFiles(): number
  /** Connections can log in (access control is on): maxUnauthenticatedConnectionsPerAddress applies. */
  checksLogins(): boolean
  /** Anonymous connections have no right: connectionAuthTimeoutMs applies. */
  anonymousHasNoRights(): boolean
  /** A client certificate named no possible user: its connection was refused (the audit trail). */
  certificateRefused(name: string, address: string): void
  log: Logger
}

/** Connections of one client address: all of them, and those not logged in. */
interface AddressCount {
  all: number
  anonymous: number
}

export class Listener {
  readonly connections = new Set<Connection>()
  private readonly server: Server
  private boundPort = 0
  /** The TLS port's server, when tlsPort is set. */
  private tls: TlsPort | undefined
  private boundTlsPort: number | undefined
  /** Listening on the TLS port alone (tlsOnly). */
  private tlsOnly = false
  private sweeper: NodeJS.Timeout | undefined
  /** RLIMIT_NOFILE, when known. */
  private fdLimit: number | undefined
  /** Connections refused since the last warning, and when that warning was logged. */
  private refused = {count: 0, loggedAtMs: 0, lastReason: ''}
  /** Bytes read from and written to connections closed so far (open ones are summed when asked). */
  private closedTraffic = {received: 0, sent: 0}
  private serverClosed: Promise<void> | undefined
  /** Open connections per client address (Connection.address). */
  private readonly perAddress = new Map<string, AddressCount>()
  /** Connections refused for their address's caps since the start (`stats connections_refused`). */
  refusedByAddress = 0
  /** Collects dead connection buffers once a burst of connections is over (memory-return.ts). */
  private readonly memory: MemoryReturn
  /** Connections accepted since the last sweep. */
  private acceptedSinceSweep = 0

  constructor(
    private readonly handler: ConnectionHandler,
    private readonly options: ListenerOptions,
  ) {
    this.memory = new MemoryReturn(options.log.child('memory'))
    // Half-open: a client that ends its side after its requests still gets their answers.
    this.server = createServer({noDelay: true, allowHalfOpen: true}, (socket) => this.accept(socket))
  }

  /** The plain port (the TLS port under tlsOnly, where there is no plain one). */
  get port(): number {
    return this.tlsOnly ? (this.boundTlsPort ?? 0) : this.boundPort
  }

  /** The TLS port, when one is configured. */
  get tlsPort(): number | undefined {
    return this.boundTlsPort
  }

  /** Listening on the TLS port only. */
  get tlsOnlyMode(): boolean {
    return this.tlsOnly
  }

  /** Handshakes the TLS port refused since the start (0 without one). */
  get failedTlsHandshakes(): number {
    return this.tls?.failedHandshakes ?? 0
  }

  /** Bind listenHost:serverPort and the TLS port (port 0: any free port); a failure names the address and what to do. */
  async listen(): Promise<number> {
    const system = this.options.config().system
    const {listenHost, serverPort} = system
    checkTlsSettings(system)
    this.tlsOnly = system.tlsOnly
    if (!this.tlsOnly) this.boundPort = await this.bind(this.server, listenHost, serverPort, '--port or serverPort')
    if (system.tlsPort !== undefined) {
      this.tls = new TlsPort(system, (socket) => this.accept(socket, certificateUser(socket)), this.options.log.child('tls'))
      try {
        this.boundTlsPort = await this.bind(this.tls.server, listenHost, system.tlsPort, '--tls-port or tlsPort')
      } catch (error) {
        if (!this.tlsOnly) this.server.close()
        throw error
      }
    }
    this.fdLimit = openFileLimit()
    this.updateConnectionCap()
    const {connectionFrameTimeoutMs, connectionIdleTimeoutMs, connectionAuthTimeoutMs} = this.options.config().system
    const shortest = Math.min(...[connectionFrameTimeoutMs, connectionIdleTimeoutMs, connectionAuthTimeoutMs].filter((ms) => ms > 0), SWEEP_INTERVAL_MAX_MS * 4)
    this.sweeper = setInterval(() => this.sweep(), Math.max(SWEEP_INTERVAL_MIN_MS, Math.floor(shortest / 4)))
    this.sweeper.unref()
    return this.port
  }

  /** Re-read the TLS certificate files (a reload). */
  reloadTls(): void {
    this.tls?.reload(this.options.config().system)
  }

  private async bind(server: Server, host: string, port: number, what: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, host, port, what)))
      server.listen(port, host, () => {
        server.off('error', reject)
        resolve()
      })
    })
    server.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EMFILE' || err.code === 'ENFILE') this.refuse(`accept failed: ${err.code}`)
      else this.options.log.error('listener error', {error: err.message})
    })
    server.on('drop', () => this.refuse('at the connection cap'))
    const address = server.address()
    return typeof address === 'object' && address !== null ? address.port : port
  }

  /** A connection closed: count its traffic and forget it. */
  closed(conn: Connection): void {
    if (!this.connections.delete(conn)) return
    this.memory.connectionClosed()
    const count = conn.bound === undefined ? this.perAddress.get(conn.address) : undefined
    if (count !== undefined) {
      count.all -= 1
      if (conn.user === undefined) count.anonymous -= 1
      if (count.all <= 0) this.perAddress.delete(conn.address)
    }
    conn.onLoginChange = undefined
    this.closedTraffic.received += conn.socket.bytesRead
    this.closedTraffic.sent += conn.socket.bytesWritten
  }

  /** Bytes received from and sent to clients since the start (all connections, open and closed). */
  traffic(): {received: number; sent: number} {
    let {received, sent} = this.closedTraffic
    for (const conn of this.connections) {
      received += conn.socket.bytesRead
      sent += conn.socket.bytesWritten
    }
    return {received, sent}
  }

  /** Stop the sweep, accepting and decoding requests (shutdown, step 1). */
  stopAccepting(): void {
    clearInterval(this.sweeper)
    this.serverClosed ??= Promise.all(
      [this.tlsOnly ? undefined : this.server, this.tls?.server].map((server) =>
        server?.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : undefined,
      ),
    ).then(() => undefined)
    for (const conn of this.connections) conn.stopReading()
  }

  /** Wait (up to the close deadline) until every request decoded so far is answered. */
  async idle(): Promise<void> {
    await withDeadline(Promise.all([...this.connections].map((conn) => conn.idle())), CLOSE_DEADLINE_MS)
  }

  /** Flush every connection's answers and close the sockets (forcibly after the deadline), then the server. */
  async close(): Promise<void> {
    this.stopAccepting()
    const sockets = [...this.connections].map(
      (conn) =>
        new Promise<void>((resolve) => {
          if (conn.socket.destroyed) return resolve()
          conn.socket.once('close', () => resolve())
          conn.close()
        }),
    )
    await withDeadline(Promise.all(sockets), CLOSE_DEADLINE_MS)
    for (const conn of this.connections) conn.socket.destroy()
    this.tls?.destroySockets()
  }

  /** The server has closed (after {@link close}). */
  async closedServer(): Promise<void> {
    this.stopAccepting()
    await this.serverClosed
  }

  /**
   * Take the broker's end of an in-process pair as a connection acting as `principal` for good
   * (the caller admitted it: quotas). Counted among the connections (stats, quotas, shutdown),
   * not per address; throws when the broker is stopping.
   */
  acceptInProcess(socket: ConnectionSocket, principal: BoundPrincipal): Connection {
    if (this.options.closing()) throw new MetaError('CONNECTION_CLOSED', 'the broker is shutting down')
    const conn = this.newConnection(socket, IN_PROCESS_REMOTE)
    conn.bound = principal
    conn.user = 'user' in principal ? principal.user : undefined
    this.connections.add(conn)
    return conn
  }

  private newConnection(socket: ConnectionSocket, remote?: string): Connection {
    const system = this.options.config().system
    // A sync slave takes whole records (header included) of messages up to the limit.
    const maxBodyBytes = Math.max(0, system.maxTransferBytes - (system.syncSlave ? 0 : RECORD_HEADER_BYTES))
    return new Connection(socket, this.handler, this.options.log.child('conn'), {
      maxBodyBytes,
      maxSkippedBodyBytes: maxBodyBytes * OVERSIZE_SKIP_FACTOR,
      maxPendingBytes: system.connectionMaxPendingBytes,
      ...(remote === undefined ? {} : {remote}),
    })
  }

  private accept(socket: Socket, certUser?: string): void {
    if (this.options.closing()) {
      socket.destroy()
      return
    }
    const conn = this.newConnection(socket)
    // A certificate maps to a user only through a name a users file may hold (never a reserved
    // name such as meta:http, never a name with control or bidirectional characters).
    if (certUser !== undefined && !isUserName(certUser)) {
      this.options.log
        .limited('certificate-name')
        .warn('refusing a connection: its client certificate names no possible user (1..64 of letters, digits, _ . @ -)', {
          remote: conn.remote,
          name: quoteName(certUser),
        })
      this.options.certificateRefused(certUser, socket.remoteAddress ?? conn.remote)
      socket.destroy()
      return
    }
    conn.certUser = certUser
    // A verified client certificate logs the connection in as the user its CN names (its rights
    // come from the users file when access control is on); a SCRAM login may still replace it.
    conn.user = certUser
    const refusal = this.addressRefusal(conn.address, certUser === undefined)
    if (refusal !== undefined) {
      this.refusedByAddress += 1
      this.options.log.limited('address-cap').warn('refusing a connection: its address holds as many as it may', {remote: conn.remote, ...refusal})
      socket.destroy()
      return
    }
    let count = this.perAddress.get(conn.address)
    if (count === undefined) {
      count = {all: 0, anonymous: 0}
      this.perAddress.set(conn.address, count)
    }
    count.all += 1
    if (certUser === undefined) count.anonymous += 1
    const counted = count
    conn.onLoginChange = (loggedIn) => {
      counted.anonymous += loggedIn ? -1 : 1
    }
    this.connections.add(conn)
    this.acceptedSinceSweep += 1
    this.options.log.debug('client connected', {remote: conn.remote, ...(certUser === undefined ? {} : {certUser})})
  }

  /** Why a new connection from `address` is refused (the cap it would pass), or undefined. */
  private addressRefusal(address: string, anonymous: boolean): {address: string; connections: number; cap: string} | undefined {
    const {maxConnectionsPerAddress, maxUnauthenticatedConnectionsPerAddress} = this.options.config().system
    const count = this.perAddress.get(address)
    if (count === undefined) return undefined
    if (count.all >= maxConnectionsPerAddress) return {address, connections: count.all, cap: `maxConnectionsPerAddress ${maxConnectionsPerAddress}`}
    if (anonymous && this.options.checksLogins() && count.anonymous >= maxUnauthenticatedConnectionsPerAddress) {
      return {address, connections: count.anonymous, cap: `maxUnauthenticatedConnectionsPerAddress ${maxUnauthenticatedConnectionsPerAddress}`}
    }
    return undefined
  }

  /** Close connections past their frame, idle or login time; keep the descriptor cap current. */
  private sweep(): void {
    const now = Date.now()
    const {connectionFrameTimeoutMs, connectionIdleTimeoutMs, connectionAuthTimeoutMs} = this.options.config().system
    const authTimeoutMs = this.options.anonymousHasNoRights() ? connectionAuthTimeoutMs : 0
    for (const conn of this.connections) {
      const why = conn.checkTimeouts(now, connectionFrameTimeoutMs, connectionIdleTimeoutMs, conn.bound === undefined ? authTimeoutMs : 0)
      if (why !== undefined) this.options.log.info('closing connection', {remote: conn.remote, reason: why})
    }
    this.updateConnectionCap()
    this.memory.check(this.acceptedSinceSweep === 0, now)
    this.acceptedSinceSweep = 0
    if (this.refused.count > 0 && now - this.refused.loggedAtMs >= REFUSAL_WARNING_INTERVAL_MS) this.refuse(undefined)
  }

  /**
   * Cap connections so that accepting one never meets EMFILE (which libuv handles by silently
   * closing the pending connections). Re-counted when connections come near the cap.
   */
  private updateConnectionCap(): void {
    const limit = this.fdLimit
    if (limit === undefined) return
    const cap = this.server.maxConnections
    if (cap > 0 && cap !== Number.POSITIVE_INFINITY && this.connections.size < cap / 2) return
    const open = openFileCount()
    if (open === undefined) return
    this.server.maxConnections = connectionCap(
      limit,
      open - this.connections.size,
      storeFileBudget(limit, DEFAULT_MAX_OPEN_FILES),
      this.options.storeOpenFiles(),
    )
    // One cap for both ports: the TLS server's own count is of its connections only, so it is
    // given what the plain one leaves.
    if (this.tls !== undefined) this.tls.server.maxConnections = this.server.maxConnections
  }

  /** A connection was refused (or, with no reason, report the ones counted): warn, at most once a minute. */
  private refuse(reason: string | undefined): void {
    if (reason !== undefined) {
      this.refused.count += 1
      this.refused.lastReason = reason
    }
    const now = Date.now()
    if (now - this.refused.loggedAtMs < REFUSAL_WARNING_INTERVAL_MS && reason !== undefined) return
    this.options.log.warn(
      'refusing new connections: file descriptors nearly exhausted; existing connections are served. Raise the limit (ulimit -n, LimitNOFILE)',
      {
        limit: this.fdLimit,
        connections: this.connections.size,
        maxConnections: this.server.maxConnections,
        refused: this.refused.count,
        reason: this.refused.lastReason,
      },
    )
    this.refused.count = 0
    this.refused.loggedAtMs = now
  }
}

/** Wait for `promise`, but no longer than `ms`. */
async function withDeadline(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([promise, deadline])
  clearTimeout(timer)
}

/** A listen failure as one clear line naming the address and what to do. */
function listenError(error: NodeJS.ErrnoException, host: string, port: number, what = '--port or serverPort'): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`
  switch (error.code) {
    case 'EADDRINUSE':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: the port is already in use (another broker?); choose another with ${what}`, {
        cause: error,
      })
    case 'EACCES':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: permission denied (ports below 1024 need privileges)`, {cause: error})
    case 'EADDRNOTAVAIL':
      return new MetaError('CONFIG_INVALID', `cannot listen on ${where}: no such local address; check --host or listenHost`, {cause: error})
    default:
      return error
  }
}

/** hostName if set; else the listen address, or the first non-loopback IPv4 for a wildcard bind. */
export function publishedHost(config: BrokerConfig): string {
  const {hostName, listenHost} = config.system
  if (hostName !== undefined && hostName !== '') return hostName
  if (listenHost !== '0.0.0.0' && listenHost !== '::') return listenHost
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address
  }
  return '127.0.0.1'
}

/** `meta://host:port` of an address. */
export function brokerUrl(address: {host: string; port: number}): string {
  return `meta://${formatHost(address.host)}:${address.port}`
}

/** A host as it goes in a URL (an IPv6 address in brackets). */
export function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}
