/**
 * Query parameters of the HTTP endpoints, checked with a clear message naming the value and
 * what was expected (answered as 400).
 */
import {validateGroupName, validateTopicName} from '../protocol/names.js'
import {isMetaError} from '../protocol/errors.js'

/** An answer other than 200 that a route decides on itself (400, 401, 403, 404, 413). */
export class HttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
    /** Stable code, as in the broker's ` [code=X]` (docs/invariants.md). */
    readonly code = statusCode === 400
      ? 'INVALID_ARGUMENT'
      : statusCode === 401
        ? 'UNAUTHORIZED'
        : statusCode === 403
          ? 'FORBIDDEN'
          : statusCode === 404
            ? 'NOT_FOUND'
            : 'FRAME_TOO_LARGE',
  ) {
    super(message)
  }
}

export type Query = Record<string, string | string[] | undefined>

const INT32_MIN = -2147483648
const INT32_MAX = 2147483647

/** The one value of `name` (a repeated parameter is refused), or undefined when absent. */
export function param(query: Query, name: string): string | undefined {
  const value = query[name]
  if (Array.isArray(value)) throw new HttpError(400, `parameter "${name}" is given ${value.length} times: expected it once`)
  return value
}

function requiredParam(query: Query, name: string): string {
  const value = param(query, name)
  if (value === undefined || value === '') throw new HttpError(400, `missing parameter "${name}"`)
  return value
}

/** An integer parameter in [min, max]; `fallback` when absent (required when no fallback). */
export function intParam(query: Query, name: string, range: {min?: number; max?: number; fallback?: number} = {}): number {
  const text = range.fallback === undefined ? requiredParam(query, name) : param(query, name)
  if (text === undefined || text === '') return range.fallback as number
  const min = range.min ?? INT32_MIN
  const max = range.max ?? INT32_MAX
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new HttpError(400, `invalid ${name} "${text}": expected an integer from ${min} to ${max}`)
  }
  return value
}

export function topicParam(value: string | undefined, name = 'topic'): string {
  return checkedName(value, name, validateTopicName)
}

export function groupParam(value: string | undefined, name = 'group'): string {
  return checkedName(value, name, validateGroupName)
}

/** A required name parameter that `validate` accepts (its MetaError becomes a 400). */
function checkedName(value: string | undefined, name: string, validate: (value: string) => void): string {
  if (value === undefined || value === '') throw new HttpError(400, `missing parameter "${name}"`)
  try {
    validate(value)
  } catch (error) {
    if (isMetaError(error)) throw new HttpError(400, error.message)
    throw error
  }
  return value
}
