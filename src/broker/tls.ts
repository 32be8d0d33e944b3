/**
 * The broker's TLS port (tlsPort, tlsCert, tlsKey, tlsCa, tlsOnly): a node:tls server beside
 * the plain one, handing each handshaken socket to the same connection handling (listener.ts).
 *
 * - With tlsCa, clients must present a certificate signed by it; its subject's CN becomes
 *   `Connection.certUser` (the user the connection is, for authorization).
 * - A client that fails the handshake (plain MetaQ traffic sent to the TLS port, an unknown
 *   CA, no client certificate when one is required) is disconnected; failures are counted and
 *   logged at most once per TLS_FAILURE_LOG_INTERVAL_MS.
 * - The certificate, key and CA files are read at start and again at every reload
 *   (`meta reload`, SIGHUP with -c): a renewed certificate applies to new connections.
 */
import {readFileSync} from 'node:fs'
import type {Socket} from 'node:net'
import {createServer, type SecureContextOptions, type Server, type TLSSocket} from 'node:tls'
import type {Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import type {SystemConfig} from './config/types.js'

/** At most one warning per this long about failed TLS handshakes (the rest are counted in it). */
const TLS_FAILURE_LOG_INTERVAL_MS = 60_000
/** A client that has not finished its handshake within this long is disconnected. */
const TLS_HANDSHAKE_TIMEOUT_MS = 10_000

type TlsSettings = Pick<SystemConfig, 'tlsPort' | 'tlsCert' | 'tlsKey' | 'tlsCa' | 'tlsOnly'>

/** Check the TLS settings hang together: a port needs a certificate and key; tlsOnly needs a port. */
export function checkTlsSettings(system: TlsSettings): void {
  if (system.tlsOnly && system.tlsPort === undefined) {
    throw new MetaError('CONFIG_INVALID', 'tlsOnly (--tls-only) needs a TLS port: set tlsPort (--tls-port)')
  }
  if (system.tlsPort === undefined) return
  if (system.tlsCert === undefined || system.tlsKey === undefined) {
    throw new MetaError('CONFIG_INVALID', `tlsPort ${system.tlsPort} needs a certificate and its key: set tlsCert and tlsKey (--tls-cert, --tls-key)`)
  }
}

/** The secure context options from the configured files; CONFIG_INVALID names an unreadable file. */
function tlsContextOptions(system: TlsSettings): SecureContextOptions {
  const read = (key: string, path: string | undefined) => {
    if (path === undefined) return undefined
    try {
      return readFileSync(path)
    } catch (error) {
      throw new MetaError('CONFIG_INVALID', `cannot read ${key} ${path}: ${(error as Error).message}`, {cause: error})
    }
  }
  return {cert: read('tlsCert', system.tlsCert), key: read('tlsKey', system.tlsKey), ...(system.tlsCa === undefined ? {} : {ca: read('tlsCa', system.tlsCa)})}
}

/** The CN of the verified peer certificate, if the client presented one. */
export function certificateUser(socket: TLSSocket): string | undefined {
  if (!socket.authorized) return undefined
  const cn = socket.getPeerCertificate()?.subject?.CN
  return typeof cn === 'string' && cn !== '' ? cn : Array.isArray(cn) ? cn[0] : undefined
}

export class TlsPort {
  readonly server: Server
  /** Handshakes failed since the last warning, and when that warning was logged. */
  private failures = {count: 0, total: 0, loggedAtMs: 0, lastReason: ''}
  /** Every TCP socket of the port (handshaking or not), so a shutdown can end them all. */
  private readonly sockets = new Set<Socket>()

  constructor(
    system: TlsSettings,
    onSecure: (socket: TLSSocket) => void,
    private readonly log: Logger,
  ) {
    const requireClientCert = system.tlsCa !== undefined
    this.server = createServer(
      {
        ...tlsContextOptions(system),
        requestCert: requireClientCert,
        rejectUnauthorized: requireClientCert,
        handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
        allowHalfOpen: true,
        noDelay: true,
      },
      onSecure,
    )
    this.server.on('tlsClientError', (error: Error) => this.failed(error.message))
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket)
      socket.once('close', () => this.sockets.delete(socket))
    })
  }

  /** End the sockets still open (a handshake in progress): the server closes only once all have. */
  destroySockets(): void {
    for (const socket of this.sockets) socket.destroy()
  }

  /** Handshakes refused since the start. */
  get failedHandshakes(): number {
    return this.failures.total
  }

  /** Re-read the certificate files (a reload); a file that cannot be read keeps the old context and is logged. */
  reload(system: TlsSettings): void {
    try {
      this.server.setSecureContext(tlsContextOptions(system))
    } catch (error) {
      this.log.error('TLS certificate files not reloaded: the running ones stay', {error: (error as Error).message})
    }
  }

  private failed(reason: string): void {
    this.failures.count += 1
    this.failures.total += 1
    this.failures.lastReason = reason
    const now = Date.now()
    if (now - this.failures.loggedAtMs < TLS_FAILURE_LOG_INTERVAL_MS) return
    this.log.warn('TLS handshake failed: connection closed (plain traffic on the TLS port, an unknown CA, or no client certificate?)', {
      failures: this.failures.count,
      reason,
    })
    this.failures.count = 0
    this.failures.loggedAtMs = now
  }
}
