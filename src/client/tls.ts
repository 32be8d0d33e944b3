/**
 * TLS on the client side: what a connection needs to dial a broker's TLS port
 * (`tls.connect`), and the process-wide default the CLI sets from `--tls`, `--ca`, `--cert`
 * and `--key` (so every client a command builds dials TLS without each call site passing it).
 *
 * A connection uses TLS when its options say so (`tls`), when its address came from a
 * `meta+tls://` URL, or when the process default is enabled. Without a CA the system store
 * verifies the broker's certificate; the certificate must name the host dialled (a SAN IP for
 * an address). `cert` and `key` present a client certificate (a broker started with
 * `--tls-ca` requires one).
 */
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {isIP} from 'node:net'
import type * as Tls from 'node:tls'
import type {ConnectionOptions as TlsConnectOptions} from 'node:tls'
import {MetaError} from '../protocol/errors.js'

export interface ClientTlsOptions {
  /** PEM of the CA(s) that signed the broker's certificate (default: the system store). */
  ca?: string | Buffer
  /** PEM of a client certificate, and its key (mutual TLS). */
  cert?: string | Buffer
  key?: string | Buffer
}

/** Files of the CLI's TLS flags. */
interface ClientTlsFiles {
  ca?: string
  cert?: string
  key?: string
}

let processDefault: {enabled: boolean; options: ClientTlsOptions} = {enabled: false, options: {}}

/**
 * Set the process-wide client TLS default: `enabled` dials TLS everywhere; the options (CA,
 * client certificate) also serve `meta+tls://` addresses when `enabled` is false.
 */
export function setDefaultClientTls(enabled: boolean, options: ClientTlsOptions = {}): void {
  processDefault = {enabled, options}
}

/** True when the process default asks every connection for TLS (the CLI's --tls). */
export function defaultTlsEnabled(): boolean {
  return processDefault.enabled
}

/**
 * The TLS options a connection uses: its own `tls` (true, as a `meta+tls://` address spreads
 * it, = the process default's CA and certificate), else the process default when enabled;
 * undefined for plain TCP.
 */
export function effectiveTls(own: ClientTlsOptions | boolean | undefined): ClientTlsOptions | undefined {
  if (own === false) return undefined
  if (typeof own === 'object') return own
  if (own === true || processDefault.enabled) return processDefault.options
  return undefined
}

/** Read the PEM files the CLI's flags name; a missing file is INVALID_ARGUMENT naming the flag and path. */
export function loadClientTlsFiles(files: ClientTlsFiles): ClientTlsOptions {
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw MetaError.invalidArgument('--cert and --key go together: give the client certificate and its private key')
  }
  const read = (flag: string, path: string | undefined) => {
    if (path === undefined) return undefined
    try {
      return readFileSync(path)
    } catch (error) {
      throw MetaError.invalidArgument(`cannot read ${flag} ${path}: ${(error as Error).message}`)
    }
  }
  return {ca: read('--ca', files.ca), cert: read('--cert', files.cert), key: read('--key', files.key)}
}

/** node:tls connect options for host:port. */
export function tlsConnectOptions(host: string, port: number, tls: ClientTlsOptions): TlsConnectOptions {
  return {
    host,
    port,
    // SNI takes a host name only; an IP is checked against the certificate's SAN IPs.
    ...(isIP(host) === 0 ? {servername: host} : {}),
    ...(tls.ca === undefined ? {} : {ca: tls.ca}),
    ...(tls.cert === undefined ? {} : {cert: tls.cert}),
    ...(tls.key === undefined ? {} : {key: tls.key}),
  }
}

/**
 * A TLS failure in words, with what to type (docs/security.md#clients); undefined for an error
 * that is not TLS's. OpenSSL's own text never reaches the user: the connection logs it at debug.
 */
export function tlsFailureReason(err: NodeJS.ErrnoException): string | undefined {
  const code = err.code ?? ''
  const known = TLS_REASONS[code]
  if (known !== undefined) return known
  if (/ALERT_(CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE)$/.test(code)) return TLS_REASONS.ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED
  if (/ALERT_(UNKNOWN_CA|BAD_CERTIFICATE|CERTIFICATE_UNKNOWN|DECRYPT_ERROR|UNSUPPORTED_CERTIFICATE)$/.test(code)) {
    return 'the broker refused the client certificate (--cert): it is not signed by the CA the broker trusts (its --tls-ca), or --key is not its key'
  }
  if (/ALERT_CERTIFICATE_(EXPIRED|REVOKED)$/.test(code))
    return 'the broker refused the client certificate (--cert): it has expired or was revoked; use a current one'
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_')) return `the TLS handshake failed (${code}; --log-level debug shows the details)`
  return undefined
}

const NOT_TLS = "this port does not speak TLS: drop --tls (or dial the broker's TLS port, its --tls-port)"
const TLS_REASONS: Record<string, string> = {
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'the broker requires a client certificate: pass --cert FILE --key FILE (one signed by the CA of its --tls-ca)',
  ERR_SSL_WRONG_VERSION_NUMBER: NOT_TLS,
  ERR_SSL_PACKET_LENGTH_TOO_LONG: NOT_TLS,
  ERR_TLS_CERT_ALTNAME_INVALID:
    "the broker's certificate does not name the host dialled: dial a name or address it lists (its subjectAltName), or have it reissued for this one",
  CERT_HAS_EXPIRED: "the broker's certificate has expired: the broker needs a renewed one (meta reload picks it up)",
  CERT_NOT_YET_VALID: "the broker's certificate is not valid yet: check this machine's clock, or the certificate's dates",
  DEPTH_ZERO_SELF_SIGNED_CERT: "the broker's certificate is self-signed and not trusted here: pass it (or the CA that signed it) with --ca FILE",
  SELF_SIGNED_CERT_IN_CHAIN: "the broker's certificate is signed by a CA not trusted here: pass that CA with --ca FILE",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "the broker's certificate is signed by a CA not trusted here: pass that CA with --ca FILE",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "the broker's certificate is signed by a CA not trusted here: pass that CA with --ca FILE",
  CERT_SIGNATURE_FAILURE: "the broker's certificate does not verify against --ca: pass the CA that signed it",
}

/** What a plain connection closed before any answer hears when the port speaks TLS. */
export const SPEAKS_TLS = 'this port speaks TLS: add --tls (and --ca FILE unless the system store trusts its certificate)'

/**
 * Does host:port speak TLS? A handshake is tried without verifying anything; true when the
 * other end answered in TLS (a finished handshake or a TLS alert), false for anything else or
 * no answer within timeoutMs. Asked once a plain connection closed before any answer.
 */
export function speaksTls(host: string, port: number, timeoutMs: number): Promise<boolean> {
  const tls = createRequire(import.meta.url)('node:tls') as typeof Tls
  return new Promise((resolve) => {
    const socket = tls.connect({host, port, rejectUnauthorized: false, ...(isIP(host) === 0 ? {servername: host} : {})})
    const done = (answer: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(answer)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    timer.unref()
    socket.once('secureConnect', () => done(true))
    socket.once('error', (err: NodeJS.ErrnoException) => done(/^ERR_SSL_.*ALERT/.test(err.code ?? '')))
    socket.once('close', () => done(false))
  })
}
