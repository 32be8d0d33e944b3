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
 *   (`meta reload`, SIGHUP with -c): a renewed certificate applies to new connections. A key
 *   group or others may read, an expired or not yet valid certificate, or a key that is not
 *   the certificate's stops the start (CONFIG_INVALID) and is refused by a reload (the running
 *   files stay); a certificate expiring within 14 days is warned about.
 */
import {createPrivateKey, X509Certificate} from 'node:crypto'
import {readFileSync} from 'node:fs'
import type {Socket} from 'node:net'
import {createServer, type SecureContextOptions, type Server, type TLSSocket} from 'node:tls'
import type {Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import type {SystemConfig} from './config/types.js'
import {privateFileProblem} from './auth/users-file.js'

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

/**
 * The secure context options from the configured files. CONFIG_INVALID names an unreadable file,
 * a key group or others may read, a certificate that has expired or is not valid yet, and a key
 * that is not the certificate's; `warn` is told of a certificate that expires within
 * {@link EXPIRY_WARNING_DAYS} days.
 */
export function tlsContextOptions(
  system: TlsSettings,
  warn: (message: string, fields: Record<string, unknown>) => void,
  nowMs = Date.now(),
): SecureContextOptions {
  const read = (key: string, path: string | undefined) => {
    if (path === undefined) return undefined
    try {
      return readFileSync(path)
    } catch (error) {
      throw new MetaError('CONFIG_INVALID', `cannot read ${key} ${path}: ${(error as Error).message}`, {cause: error})
    }
  }
  if (system.tlsKey !== undefined) {
    const exposed = privateFileProblem(system.tlsKey, 'tlsKey')
    if (exposed !== undefined) throw new MetaError('CONFIG_INVALID', exposed)
  }
  const cert = read('tlsCert', system.tlsCert)
  const key = read('tlsKey', system.tlsKey)
  if (cert !== undefined && key !== undefined) checkCertificate(cert, key, system.tlsCert!, system.tlsKey!, warn, nowMs)
  return {cert, key, ...(system.tlsCa === undefined ? {} : {ca: read('tlsCa', system.tlsCa)})}
}

/** A certificate that expires within this many days is warned about at start and at each reload. */
const EXPIRY_WARNING_DAYS = 14
const DAY_MS = 86_400_000

/** The broker's certificate (the first of the chain) is valid now and `key` is its key; else CONFIG_INVALID saying which. */
function checkCertificate(
  certPem: Buffer,
  keyPem: Buffer,
  certPath: string,
  keyPath: string,
  warn: (message: string, fields: Record<string, unknown>) => void,
  nowMs: number,
): void {
  let cert: X509Certificate
  try {
    cert = new X509Certificate(certPem)
  } catch (error) {
    throw new MetaError('CONFIG_INVALID', `tlsCert ${certPath} is not a PEM certificate: ${(error as Error).message}`, {cause: error})
  }
  const from = Date.parse(cert.validFrom)
  const to = Date.parse(cert.validTo)
  if (nowMs < from)
    throw new MetaError(
      'CONFIG_INVALID',
      `tlsCert ${certPath} is not valid yet: valid from ${new Date(from).toISOString()} (check the clock, or the certificate)`,
    )
  if (nowMs > to) throw new MetaError('CONFIG_INVALID', `tlsCert ${certPath} expired on ${new Date(to).toISOString()}: renew it`)
  let matches: boolean
  try {
    matches = cert.checkPrivateKey(createPrivateKey(keyPem))
  } catch (error) {
    throw new MetaError('CONFIG_INVALID', `tlsKey ${keyPath} is not a PEM private key: ${(error as Error).message}`, {cause: error})
  }
  if (!matches) throw new MetaError('CONFIG_INVALID', `tlsKey ${keyPath} is not the key of tlsCert ${certPath}: give the key the certificate was made for`)
  const days = (to - nowMs) / DAY_MS
  if (days < EXPIRY_WARNING_DAYS)
    warn(`TLS certificate expires in ${Math.floor(days)} days: renew it (meta reload or SIGHUP picks the new files up)`, {
      tlsCert: certPath,
      validTo: new Date(to).toISOString(),
    })
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
        ...tlsContextOptions(system, (message, fields) => log.warn(message, fields)),
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
      this.server.setSecureContext(tlsContextOptions(system, (message, fields) => this.log.warn(message, fields)))
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
