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
import {isIP} from 'node:net'
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
