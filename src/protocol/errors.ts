/**
 * The one error catalogue shared by broker, client and CLI.
 *
 * Wire status codes (MetaQ 1.4, spec §1.4) travel in `result <code> <len> <opaque>` frames.
 * Each catalogue row maps a stable string `code` to the wire status the broker answers with
 * (when it crosses the wire at all), whether a client may retry it, and a default message.
 * The client maps a wire status back with {@link MetaError.fromWire}.
 */

/** MetaQ's HTTP-like status codes, as sent in `result` frames. */
export const Status = {
  OK: 200,
  MOVED: 301,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  INTERNAL_SERVER_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
} as const
export type Status = (typeof Status)[keyof typeof Status]

interface CatalogueRow {
  /** Status written on the wire when the broker reports this error; undefined = never sent. */
  readonly wireCode?: Status
  readonly retriable: boolean
  readonly message: string
}

/** Every error `meta` raises on purpose. Keys are the stable `code` strings. */
export const ERRORS = {
  INVALID_ARGUMENT: {retriable: false, message: 'invalid argument'},
  BAD_REQUEST: {wireCode: Status.BAD_REQUEST, retriable: false, message: 'bad request'},
  OFFSET_MOVED: {wireCode: Status.MOVED, retriable: true, message: 'offset moved'},
  PARTITION_CLOSED: {wireCode: Status.FORBIDDEN, retriable: true, message: 'partition is closed'},
  NOT_FOUND: {wireCode: Status.NOT_FOUND, retriable: true, message: 'not found'},
  INTERNAL: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: false, message: 'internal error'},
  TOPIC_NOT_ACCEPTED: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: false, message: 'topic not accepted'},
  INVALID_PARTITION: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: false, message: 'invalid partition'},
  CHECKSUM_MISMATCH: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: false, message: 'checksum mismatch'},
  DISK_FULL: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: true, message: 'no space left on device'},
  STORAGE_ERROR: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: true, message: 'storage error'},
  SERVICE_UNAVAILABLE: {wireCode: Status.SERVICE_UNAVAILABLE, retriable: true, message: 'service unavailable'},
  TIMEOUT: {wireCode: Status.GATEWAY_TIMEOUT, retriable: true, message: 'request timed out'},
  UNAUTHORIZED: {wireCode: Status.UNAUTHORIZED, retriable: false, message: 'unauthorized'},
  UNKNOWN_ERROR_CODE: {retriable: false, message: 'unknown status code'},
  STORAGE_CORRUPT: {retriable: false, message: 'storage is corrupt'},
  PARTITION_QUARANTINED: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: true, message: 'partition is quarantined'},
  INVALID_MESSAGE: {retriable: false, message: 'invalid message'},
  FRAME_TOO_LARGE: {retriable: false, message: 'frame too large'},
  DECODE_ERROR: {retriable: false, message: 'malformed frame'},
  CONNECTION_CLOSED: {retriable: true, message: 'connection closed'},
  CONNECTION_FAILED: {retriable: true, message: 'cannot connect'},
  CONFIG_INVALID: {retriable: false, message: 'invalid configuration'},
  GROUP_ERROR: {wireCode: Status.INTERNAL_SERVER_ERROR, retriable: true, message: 'group error'},
  REBALANCE_IN_PROGRESS: {wireCode: Status.MOVED, retriable: true, message: 'group is rebalancing'},
  UNKNOWN_MEMBER: {wireCode: Status.NOT_FOUND, retriable: true, message: 'unknown group member'},
  CLUSTER_ERROR: {retriable: true, message: 'cluster error'},
  ABORTED: {retriable: false, message: 'aborted'},
  DATA_DIR_LOCKED: {retriable: false, message: 'data directory is in use by another process'},
} as const satisfies Record<string, CatalogueRow>

export type ErrorCode = keyof typeof ERRORS

export interface MetaErrorOptions {
  cause?: unknown
  /** Structured context (topic, partition, offset, …) for logs and JSON output. */
  details?: Record<string, unknown>
  /** The wire status, when it differs from the catalogue default (e.g. an unknown code). */
  status?: number
}

/**
 * The base class of every error `meta` raises on purpose. `code` is stable and machine
 * readable; `message` is lowercase, names the value and says what was expected.
 */
export class MetaError extends Error {
  readonly code: ErrorCode
  readonly retriable: boolean
  readonly status?: number
  readonly details?: Record<string, unknown>

  constructor(code: ErrorCode, message?: string, options: MetaErrorOptions = {}) {
    const row: CatalogueRow = ERRORS[code]
    super(message ?? row.message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'MetaError'
    this.code = code
    this.retriable = row.retriable
    this.status = options.status ?? row.wireCode
    this.details = options.details
  }

  /** The status the broker writes for this error (500 when the code has no wire form). */
  get wireStatus(): number {
    return this.status ?? Status.INTERNAL_SERVER_ERROR
  }

  /**
   * Map a non-200 `result` frame back to an error. The body is the broker's text; an
   * unknown status becomes UNKNOWN_ERROR_CODE carrying the number instead of crashing.
   */
  static fromWire(status: number, body: string): MetaError {
    const code = WIRE_TO_CODE.get(status)
    if (code === undefined) {
      return new MetaError('UNKNOWN_ERROR_CODE', `unknown status ${status}: ${body}`, {status})
    }
    return new MetaError(code, body === '' ? ERRORS[code].message : body, {status})
  }

  static invalidArgument(message: string, details?: Record<string, unknown>): MetaError {
    return new MetaError('INVALID_ARGUMENT', message, {details})
  }
}

/** The code a client reports for each wire status (the first catalogue row that uses it). */
const WIRE_TO_CODE = new Map<number, ErrorCode>([
  [Status.MOVED, 'OFFSET_MOVED'],
  [Status.BAD_REQUEST, 'BAD_REQUEST'],
  [Status.UNAUTHORIZED, 'UNAUTHORIZED'],
  [Status.FORBIDDEN, 'PARTITION_CLOSED'],
  [Status.NOT_FOUND, 'NOT_FOUND'],
  [Status.INTERNAL_SERVER_ERROR, 'INTERNAL'],
  [Status.SERVICE_UNAVAILABLE, 'SERVICE_UNAVAILABLE'],
  [Status.GATEWAY_TIMEOUT, 'TIMEOUT'],
])

export function isMetaError(err: unknown, code?: ErrorCode): err is MetaError {
  return err instanceof MetaError && (code === undefined || err.code === code)
}
