/**
 * Reading the JSON bodies of meta's extension commands: parse, then check every field a
 * reader relies on, so a body is either the documented shape or a DECODE_ERROR naming the
 * body, the field (a path such as `members[2].topics`) and what was expected. Each body has
 * one decoder, next to its type in commands/*.ts, used by whichever side reads it (the broker
 * for requests, the client for replies). Fields a decoder does not know are dropped.
 */
import {MetaError} from './errors.js'

/** The largest JSON body a decoder parses, in bytes (bodies are bounded by the frame limit too). */
export const MAX_JSON_BODY_BYTES = 64 * 1024 * 1024

/** A JSON value being read, with the body's name and the path to it (for messages). */
export interface JsonField {
  readonly value: unknown
  readonly body: string
  readonly path: string
}

/** Parse a JSON body named `body` (e.g. "group-claim"); DECODE_ERROR when it is not JSON. */
export function parseJsonBody(body: Buffer | string, name: string): JsonField {
  const bytes = typeof body === 'string' ? Buffer.byteLength(body) : body.length
  if (bytes > MAX_JSON_BODY_BYTES) {
    throw new MetaError('DECODE_ERROR', `invalid ${name} body: ${bytes} bytes: expected at most ${MAX_JSON_BODY_BYTES}`)
  }
  try {
    return {value: JSON.parse(typeof body === 'string' ? body : body.toString('utf8')) as unknown, body: name, path: ''}
  } catch (error) {
    throw new MetaError('DECODE_ERROR', `invalid ${name} body: not JSON: ${(error as Error).message}`, {cause: error})
  }
}

/** DECODE_ERROR: the field is not what was expected. */
export function invalidField(field: JsonField, expected: string): MetaError {
  const shown = JSON.stringify(field.value)
  const value = shown === undefined ? 'missing' : shown.length > 60 ? `${shown.slice(0, 60)}…` : shown
  return new MetaError('DECODE_ERROR', `invalid ${field.body} body: ${field.path === '' ? 'the body' : `"${field.path}"`} is ${value}: expected ${expected}`)
}

/** The member `key` of an object field (throws when `field` is not an object). */
export function member(field: JsonField, key: string): JsonField {
  const value = objectOf(field)[key]
  return {value, body: field.body, path: field.path === '' ? key : `${field.path}.${key}`}
}

function objectOf(field: JsonField): Record<string, unknown> {
  const value = field.value
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidField(field, 'an object')
  return value as Record<string, unknown>
}

/** Each element of an array field, read by `item`. */
export function arrayOf<T>(field: JsonField, item: (element: JsonField) => T): T[] {
  if (!Array.isArray(field.value)) throw invalidField(field, 'an array')
  return field.value.map((value, i) => item({value, body: field.body, path: `${field.path}[${i}]`}))
}

export function stringOf(field: JsonField): string {
  if (typeof field.value !== 'string') throw invalidField(field, 'a string')
  return field.value
}

export function booleanOf(field: JsonField): boolean {
  if (typeof field.value !== 'boolean') throw invalidField(field, 'true or false')
  return field.value
}

/** A safe integer in min..max (default any). */
export function integerOf(field: JsonField, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): number {
  const value = field.value
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalidField(
      field,
      min === Number.MIN_SAFE_INTEGER ? 'an integer' : max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer in ${min}..${max}`,
    )
  }
  return value
}

/** A string or null. */
export function nullableStringOf(field: JsonField): string | null {
  return field.value === null ? null : stringOf(field)
}

/** One of `options`. */
export function oneOf<T extends string>(field: JsonField, options: readonly T[]): T {
  if (typeof field.value !== 'string' || !options.includes(field.value as T)) throw invalidField(field, `one of ${options.join(', ')}`)
  return field.value as T
}

/** `read(field)`, or undefined when the member is absent. */
export function optional<T>(field: JsonField, read: (field: JsonField) => T): T | undefined {
  return field.value === undefined ? undefined : read(field)
}

/** An object whose values are all read by `item` (a map keyed by name). */
export function recordOf<T>(field: JsonField, item: (element: JsonField) => T): Record<string, T> {
  const out: Record<string, T> = {}
  for (const key of Object.keys(objectOf(field))) out[key] = item(member(field, key))
  return out
}
