/**
 * Strict number parsing for header tokens. MetaQ parses with Integer.parseInt /
 * Long.parseLong: optional sign, decimal digits, nothing else. A bad token is a codec error
 * (the broker closes the connection), so these return NaN instead of guessing.
 */
import {MetaError} from './errors.js'

export const INT32_MIN = -2147483648
export const INT32_MAX = 2147483647
/** Opaque used when a command carries none (MetaQ uses Integer.MAX_VALUE). */
export const NO_OPAQUE = INT32_MAX
/** Long.MAX_VALUE as clients send it to mean "the tail of the log". */
export const LONG_MAX_TEXT = '9223372036854775807'

/** Parse a decimal integer token of at most 15 digits (always exact); NaN if malformed. */
export function parseIntToken(token: string): number {
  const n = token.length
  if (n === 0 || n > 16) return Number.NaN
  let i = 0
  let negative = false
  const first = token.charCodeAt(0)
  if (first === 45 /* - */ || first === 43 /* + */) {
    if (n === 1) return Number.NaN
    negative = first === 45
    i = 1
  }
  let value = 0
  for (; i < n; i++) {
    const c = token.charCodeAt(i) - 48
    if (c < 0 || c > 9) return Number.NaN
    value = value * 10 + c
  }
  return negative ? -value : value
}

/**
 * Parse a Java long token as a number. Values beyond 2^53 (Long.MAX_VALUE in particular)
 * clamp to ±Number.MAX_SAFE_INTEGER: offsets that large do not exist, and the broker treats
 * them as "past the end". NaN if malformed or outside the int64 range.
 */
export function parseLongToken(token: string): number {
  if (token.length <= 15) return parseIntToken(token)
  if (!/^[+-]?\d+$/.test(token)) return Number.NaN
  const big = BigInt(token)
  if (big > 9223372036854775807n || big < -9223372036854775808n) return Number.NaN
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) return Number.MAX_SAFE_INTEGER
  if (big < BigInt(Number.MIN_SAFE_INTEGER)) return Number.MIN_SAFE_INTEGER
  return Number(big)
}

/** Parse a Java long token exactly as a bigint (message ids); undefined if malformed. */
export function parseBigIntToken(token: string): bigint | undefined {
  if (!/^[+-]?\d{1,19}$/.test(token)) return undefined
  const big = BigInt(token)
  return big > 9223372036854775807n || big < -9223372036854775808n ? undefined : big
}

/** A codec error naming the command, the field and the offending token. */
export function badToken(command: string, field: string, token: string | undefined, expected: string): MetaError {
  return new MetaError('DECODE_ERROR', `invalid ${field} ${JSON.stringify(token ?? '')} in "${command}" command: expected ${expected}`)
}

/** Parse an int32 field or throw a codec error naming it. */
export function intField(command: string, field: string, token: string | undefined): number {
  const value = token === undefined ? Number.NaN : parseIntToken(token)
  if (Number.isNaN(value) || value < INT32_MIN || value > INT32_MAX) {
    throw badToken(command, field, token, 'a 32-bit integer')
  }
  return value
}

/**
 * Parse an opaque. MetaQ opaques are signed int32 (Java starts at -2147483648); the C++
 * client prints an unsigned counter, so values up to 2^32-1 are accepted and echoed as sent.
 */
export function opaqueField(command: string, token: string | undefined): number {
  const value = token === undefined ? Number.NaN : parseIntToken(token)
  if (Number.isNaN(value) || value < INT32_MIN || value > 4294967295) {
    throw badToken(command, 'opaque', token, 'a 32-bit integer')
  }
  return value
}

/**
 * Parse an int32 field that must be written canonically: an optional '-', then digits without
 * a leading zero ("0" itself is fine). Partitions are read this way: Java's Integer.parseInt
 * would take "+0" or "00" as partition 0, meta refuses them (docs/protocol.md).
 */
export function canonicalIntField(command: string, field: string, token: string | undefined): number {
  const value = intField(command, field, token)
  if (!CANONICAL_INT.test(token!)) throw badToken(command, field, token, 'a decimal integer without "+" or leading zeros')
  return value
}

const CANONICAL_INT = /^(?:0|-?[1-9]\d*)$/

/** Parse a long field (offsets) or throw a codec error naming it. */
export function longField(command: string, field: string, token: string | undefined): number {
  const value = token === undefined ? Number.NaN : parseLongToken(token)
  if (Number.isNaN(value)) throw badToken(command, field, token, 'a 64-bit integer')
  return value
}

/** Parse a non-negative length field (body lengths). */
export function lengthField(command: string, field: string, token: string | undefined): number {
  const value = token === undefined ? Number.NaN : parseIntToken(token)
  if (Number.isNaN(value) || value < 0 || value > INT32_MAX) {
    throw badToken(command, field, token, 'a non-negative 32-bit integer')
  }
  return value
}

/** A non-empty name token (topic, group). */
export function nameField(command: string, field: string, token: string | undefined): string {
  if (token === undefined || token.length === 0) throw badToken(command, field, token, 'a non-empty name')
  return token
}

export function tokenCount(command: string, tokens: string[], allowed: readonly number[]): void {
  if (!allowed.includes(tokens.length)) {
    throw new MetaError('DECODE_ERROR', `"${command}" command has ${tokens.length} tokens: expected ${allowed.join(' or ')}`)
  }
}
