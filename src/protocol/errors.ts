/**
 * The one error catalogue shared by broker, client and CLI.
 *
 * Each row maps a stable string `code` to: the MetaQ status (docs/protocol.md#status-codes) the
 * broker answers with when it reports this error (`status`), the stable code it writes into the
 * error's result body (`wireCode`, see below), whether a client may retry, and a default message.
 *
 * Error result bodies (docs/protocol.md#error-codes): the broker keeps MetaQ's text and
 * appends ` [code=<WIRE_CODE>]`, e.g.
 *
 *   result 500 96 7\r\nPut message to [broker 'meta://h:8123'] [partition 't-0'] failed.Detail:The server do not accept topic t [code=TOPIC_NOT_ACCEPTED]
 *
 * MetaQ clients show the text as a MetaQ broker's (the marker is one more space-separated token, so
 * C++'s three-token parse of error bodies holds); meta's client reads the code back
 * ({@link MetaError.fromWire}) instead of matching text. Bodies with a fixed meaning never
 * carry a marker: 200 bodies, the 301 offset, and `XAException:code=…` transaction errors.
 * A body without a marker (a MetaQ broker) maps by its status alone.
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
  /** Status of the `result` frame when a broker reports this error; undefined = never sent. */
  readonly status?: Status
  /**
   * The code written into an error result body (` [code=…]`): part of the wire contract, so
   * it never changes even if the row's key does. Undefined: a client-side error only.
   */
  readonly wireCode?: string
  readonly retriable: boolean
  readonly message: string
}

/** Every error `meta` raises on purpose. Keys are the stable `code` strings. */
export const ERRORS = {
  INVALID_ARGUMENT: {status: Status.BAD_REQUEST, wireCode: 'INVALID_ARGUMENT', retriable: false, message: 'invalid argument'},
  BAD_REQUEST: {status: Status.BAD_REQUEST, wireCode: 'BAD_REQUEST', retriable: false, message: 'bad request'},
  OFFSET_MOVED: {status: Status.MOVED, retriable: true, message: 'offset moved'},
  PARTITION_CLOSED: {status: Status.FORBIDDEN, wireCode: 'PARTITION_CLOSED', retriable: true, message: 'partition is closed'},
  NOT_FOUND: {status: Status.NOT_FOUND, wireCode: 'NOT_FOUND', retriable: true, message: 'not found'},
  INTERNAL: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'INTERNAL', retriable: false, message: 'internal error'},
  UNSUPPORTED: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'UNSUPPORTED', retriable: false, message: 'not supported by this broker'},
  TOPIC_NOT_ACCEPTED: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'TOPIC_NOT_ACCEPTED', retriable: false, message: 'topic not accepted'},
  INVALID_PARTITION: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'INVALID_PARTITION', retriable: false, message: 'invalid partition'},
  CHECKSUM_MISMATCH: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'CHECKSUM_MISMATCH', retriable: false, message: 'checksum mismatch'},
  DISK_FULL: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'DISK_FULL', retriable: true, message: 'no space left on device'},
  STORAGE_ERROR: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'STORAGE_ERROR', retriable: true, message: 'storage error'},
  SERVICE_UNAVAILABLE: {status: Status.SERVICE_UNAVAILABLE, wireCode: 'SERVICE_UNAVAILABLE', retriable: true, message: 'service unavailable'},
  TIMEOUT: {status: Status.GATEWAY_TIMEOUT, wireCode: 'TIMEOUT', retriable: true, message: 'request timed out'},
  UNAUTHORIZED: {status: Status.UNAUTHORIZED, wireCode: 'UNAUTHORIZED', retriable: false, message: 'unauthorized'},
  ACCESS_DENIED: {status: Status.FORBIDDEN, wireCode: 'ACCESS_DENIED', retriable: false, message: 'access denied'},
  UNKNOWN_ERROR_CODE: {retriable: false, message: 'unknown error code'},
  STORAGE_CORRUPT: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'STORAGE_CORRUPT', retriable: false, message: 'storage is corrupt'},
  PARTITION_QUARANTINED: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'PARTITION_QUARANTINED', retriable: true, message: 'partition is quarantined'},
  INVALID_MESSAGE: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'INVALID_MESSAGE', retriable: false, message: 'invalid message'},
  FRAME_TOO_LARGE: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'FRAME_TOO_LARGE', retriable: false, message: 'frame too large'},
  TRANSACTION_ERROR: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'TRANSACTION_ERROR', retriable: false, message: 'transaction error'},
  DECODE_ERROR: {retriable: false, message: 'malformed frame'},
  CONNECTION_CLOSED: {retriable: true, message: 'connection closed'},
  CONNECTION_FAILED: {retriable: true, message: 'cannot connect'},
  CONFIG_INVALID: {status: Status.BAD_REQUEST, wireCode: 'CONFIG_INVALID', retriable: false, message: 'invalid configuration'},
  GROUP_ERROR: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'GROUP_ERROR', retriable: true, message: 'group error'},
  GROUP_LIMIT: {status: Status.SERVICE_UNAVAILABLE, wireCode: 'GROUP_LIMIT', retriable: true, message: 'too many consumer groups or members'},
  REBALANCE_IN_PROGRESS: {status: Status.MOVED, retriable: true, message: 'group is rebalancing'},
  UNKNOWN_MEMBER: {status: Status.NOT_FOUND, wireCode: 'UNKNOWN_MEMBER', retriable: true, message: 'unknown group member'},
  CLUSTER_ERROR: {retriable: true, message: 'cluster error'},
  ABORTED: {retriable: false, message: 'aborted'},
  SLAVE_READ_ONLY: {
    status: Status.INTERNAL_SERVER_ERROR,
    wireCode: 'SLAVE_READ_ONLY',
    retriable: false,
    message: 'this broker is a slave: it does not accept puts',
  },
  SLAVE_DISCONNECTED: {status: Status.INTERNAL_SERVER_ERROR, wireCode: 'SLAVE_DISCONNECTED', retriable: true, message: 'Slave is disconnected'},
  SYNC_OFFSET_MISMATCH: {
    status: Status.INTERNAL_SERVER_ERROR,
    wireCode: 'SYNC_OFFSET_MISMATCH',
    retriable: true,
    message: "the sync slave's log does not end where the master's batch starts",
  },
  NOT_A_SLAVE: {status: Status.NOT_FOUND, wireCode: 'NOT_A_SLAVE', retriable: false, message: 'this broker is not a slave'},
  QUOTA_EXCEEDED: {
    status: Status.FORBIDDEN,
    wireCode: 'QUOTA_EXCEEDED',
    retriable: false,
    message: "the request would pass one of its user's limits (meta user limit)",
  },
  PARTITION_LIMIT: {
    status: Status.INTERNAL_SERVER_ERROR,
    wireCode: 'PARTITION_LIMIT',
    retriable: false,
    message: 'the broker serves as many partitions as it may (maxPartitions)',
  },
  DATA_DIR_LOCKED: {retriable: false, message: 'data directory is in use by another process'},
} as const satisfies Record<string, CatalogueRow>

export type ErrorCode = keyof typeof ERRORS

export interface MetaErrorOptions {
  cause?: unknown
  /** Structured context (topic, partition, offset, …) for logs and JSON output. */
  details?: Record<string, unknown>
  /** The wire status, when it differs from the catalogue default (e.g. an unknown code). */
  status?: number
  /** Overrides the catalogue's retriable flag (an unknown wire code retries as its status does). */
  retriable?: boolean
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
    this.retriable = options.retriable ?? row.retriable
    this.status = options.status ?? row.status
    this.details = options.details
  }

  /** The status the broker writes for this error (500 when the code has no wire form). */
  get wireStatus(): number {
    return this.status ?? Status.INTERNAL_SERVER_ERROR
  }

  /**
   * Map a non-200 `result` frame back to an error. A body with a ` [code=…]` marker (a meta
   * broker) gives the catalogue's code, and the message is the text before the marker; an
   * unknown code becomes UNKNOWN_ERROR_CODE carrying it (`details.wireCode`). A body without a
   * marker (a MetaQ broker) maps by its status; an unknown status becomes UNKNOWN_ERROR_CODE
   * carrying the number. Never throws.
   */
  static fromWire(status: number, body: string): MetaError {
    const {text, wireCode} = parseErrorBody(body)
    const byStatus = STATUS_TO_CODE.get(status)
    if (wireCode !== undefined) {
      const code = WIRE_CODE_TO_CODE.get(wireCode)
      if (code !== undefined) return new MetaError(code, text === '' ? ERRORS[code].message : text, {status, details: {wireCode}})
      return new MetaError('UNKNOWN_ERROR_CODE', `unknown error code "${wireCode}" (status ${status}): ${text}`, {
        status,
        details: {wireCode},
        retriable: byStatus === undefined ? false : ERRORS[byStatus].retriable,
      })
    }
    if (byStatus === undefined) {
      return new MetaError('UNKNOWN_ERROR_CODE', `unknown status ${status}: ${text}`, {status})
    }
    return new MetaError(byStatus, text === '' ? ERRORS[byStatus].message : text, {status})
  }

  static invalidArgument(message: string, details?: Record<string, unknown>): MetaError {
    return new MetaError('INVALID_ARGUMENT', message, {details})
  }
}

/** The code a client reports for a body without a code marker, by its status (MetaQ brokers). */
const STATUS_TO_CODE = new Map<number, ErrorCode>([
  [Status.MOVED, 'OFFSET_MOVED'],
  [Status.BAD_REQUEST, 'BAD_REQUEST'],
  [Status.UNAUTHORIZED, 'UNAUTHORIZED'],
  [Status.FORBIDDEN, 'PARTITION_CLOSED'],
  [Status.NOT_FOUND, 'NOT_FOUND'],
  [Status.INTERNAL_SERVER_ERROR, 'INTERNAL'],
  [Status.SERVICE_UNAVAILABLE, 'SERVICE_UNAVAILABLE'],
  [Status.GATEWAY_TIMEOUT, 'TIMEOUT'],
])

/** wireCode → catalogue code, for every row that crosses the wire. */
const WIRE_CODE_TO_CODE = new Map<string, ErrorCode>(
  (Object.entries(ERRORS) as Array<[ErrorCode, CatalogueRow]>).flatMap(([code, row]) =>
    row.wireCode === undefined ? [] : [[row.wireCode, code] as [string, ErrorCode]],
  ),
)

const MARKER_OPEN = ' [code='
/** A wire code: upper-case letters, digits and underscores. */
const WIRE_CODE = /^[A-Z][A-Z0-9_]{0,63}$/

/**
 * The body of an error result: MetaQ's text (or the row's default message when empty), then
 * ` [code=<wireCode>]`. Rows without a wire code are sent as INTERNAL.
 */
export function formatErrorBody(code: ErrorCode, text: string): string {
  const row: CatalogueRow = ERRORS[code]
  return `${text === '' ? row.message : text}${MARKER_OPEN}${row.wireCode ?? ERRORS.INTERNAL.wireCode}]`
}

/** The status a broker answers with for `code` (500 for codes that never cross the wire). */
export function errorStatus(code: ErrorCode): number {
  const row: CatalogueRow = ERRORS[code]
  return row.status ?? Status.INTERNAL_SERVER_ERROR
}

/** Split an error body into its text and wire code (undefined when it carries no marker). */
export function parseErrorBody(body: string): {text: string; wireCode: string | undefined} {
  if (!body.endsWith(']')) return {text: body, wireCode: undefined}
  const open = body.lastIndexOf(MARKER_OPEN)
  if (open < 0) return {text: body, wireCode: undefined}
  const wireCode = body.slice(open + MARKER_OPEN.length, -1)
  if (!WIRE_CODE.test(wireCode)) return {text: body, wireCode: undefined}
  return {text: body.slice(0, open), wireCode}
}

export function isMetaError(err: unknown, code?: ErrorCode): err is MetaError {
  return err instanceof MetaError && (code === undefined || err.code === code)
}
