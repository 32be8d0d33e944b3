/**
 * What a broker connection (connection.ts) is given: its options, their defaults, and the
 * login every connection of the process makes unless its options name one.
 */
import type {Logger} from '../log.js'
import type {BrokerAddress} from './address.js'
import type {Credentials} from './authenticate.js'
import type {ClientTlsOptions} from './tls.js'
import type {Dial} from './transport.js'

export interface ConnectionOptions extends Omit<BrokerAddress, 'tls'> {
  /** Default deadline of a request, in ms (MetaQ: 3000 for put, 10000 for get). */
  requestTimeoutMs?: number
  /** Give up a connection attempt after this long. */
  connectTimeoutMs?: number
  /** Reconnect after a lost connection (default true). */
  reconnect?: boolean
  reconnectInitialDelayMs?: number
  reconnectMaxDelayMs?: number
  /** Send `version` after this long without traffic (default 10000; 0 = never). */
  heartbeatIntervalMs?: number
  /** Most requests in flight at once (a power of two; default 16384). */
  maxInFlight?: number
  /** Largest response body accepted (default 64 MiB). */
  maxResponseBytes?: number
  /**
   * Dial the broker's TLS port (src/client/tls.ts): options (CA, client certificate), true for
   * the process default's, false for plain TCP even under the CLI's --tls. Left out: TLS for a
   * `meta+tls://` address or when the process default is enabled.
   */
  tls?: ClientTlsOptions | boolean
  logger?: Logger
  /** Log in as this user (SCRAM-SHA-256) after every connect, before any other request. */
  user?: string
  /** The user's password (never sent: SCRAM proves it). */
  password?: string
  /**
   * A refused login is retried with the reconnect back-off instead of closing the connection
   * for good (a replication link: the operator may fix the users file and reload). Logged at
   * most once per {@link LOGIN_REFUSED_LOG_MS}.
   */
  retryRefusedLogin?: boolean
  /**
   * Reach the broker through this transport instead of dialling host:port (an in-process pair,
   * in-process.ts; `tls` is then ignored, host:port only names the broker in messages).
   */
  transport?: Dial
}

/** A connection that retries refused logins logs the refusal at most this often (ms). */
export const LOGIN_REFUSED_LOG_MS = 60_000

/** Default deadline of a connection attempt, and of the broker's answer to the first request. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000

/** The options a connection always has a value for (defaults filled in). */
export type ConnectionSettings = Required<Omit<ConnectionOptions, 'host' | 'port' | 'logger' | 'user' | 'password' | 'tls' | 'retryRefusedLogin' | 'transport'>>

export function connectionSettings(options: ConnectionOptions): ConnectionSettings {
  return {
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    reconnect: options.reconnect ?? true,
    reconnectInitialDelayMs: options.reconnectInitialDelayMs ?? 100,
    reconnectMaxDelayMs: options.reconnectMaxDelayMs ?? 5_000,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 10_000,
    maxInFlight: options.maxInFlight ?? 16384,
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024 * 1024,
  }
}

let processCredentials: Credentials | undefined

/**
 * The login every connection of this process makes unless its options name a user: the CLI
 * sets it once from --user / $META_USER and the password, so every client a command builds
 * (producer, consumer, admin, cluster lookups) logs in without threading it through each.
 */
export function setDefaultCredentials(credentials: Credentials | undefined): void {
  processCredentials = credentials
}

/** The login a connection makes: its options' user, else the process default (none: no login). */
export function credentialsOf(options: ConnectionOptions): Credentials | undefined {
  return options.user === undefined ? processCredentials : {user: options.user, password: options.password ?? ''}
}
