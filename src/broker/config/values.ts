/**
 * Parsers for the value kinds of server.ini. Each returns the typed value or throws a
 * {@link ValueError} saying what was expected; the caller adds file, line, section and key.
 */
import {isIP} from 'node:net'
import {evaluateIntegerExpression, ExpressionError} from './expression.js'
import type {DeletePolicy} from './types.js'

/** A value that does not fit its key; `message` starts with "expected …". */
export class ValueError extends Error {}

/** Java's int range: every numeric MetaQ key is an int. */
export const INT_MAX = 2 ** 31 - 1
export const INT_MIN = -(2 ** 31)

export function parseInteger(text: string, min: number, max: number): number {
  let value: number
  try {
    value = evaluateIntegerExpression(text)
  } catch (error) {
    if (error instanceof ExpressionError) throw new ValueError(`expected an integer expression (${error.message})`)
    throw error
  }
  checkIntegerRange(value, min, max, text.trim() !== String(value))
  return value
}

export function checkIntegerRange(value: number, min: number, max: number, showValue = false): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    // "at least N" reads better than a range whose top is Java's INT_MAX, unless that top was hit.
    const range = max === INT_MAX && value < min ? `>= ${min}` : `from ${min} to ${max}`
    throw new ValueError(`expected an integer ${range}${showValue ? `, got ${value}` : ''}`)
  }
}

/** `true` or `false`, any case. */
export function parseBoolean(text: string): boolean {
  const lower = text.trim().toLowerCase()
  if (lower === 'true') return true
  if (lower === 'false') return false
  throw new ValueError('expected true or false')
}

const DELETE_POLICY_EXPECTED = 'expected "delete,<N>" or "archive,<N>[,true]" where N is a positive integer with an optional unit s, m or h (default hours)'
const UNIT_MS: Record<string, number> = {s: 1000, m: 60_000, h: 3_600_000, '': 3_600_000}

/** `delete,168` | `archive,<N>` | `archive,<N>,true` (docs/configuration.md#retention). */
export function parseDeletePolicy(text: string): DeletePolicy {
  const parts = text.split(',').map((part) => part.trim())
  const [name, age, zip] = parts
  const match = /^(\d+)([smh]?)$/.exec(age ?? '')
  const valid = match !== null && ((name === 'delete' && parts.length === 2) || (name === 'archive' && (parts.length === 2 || parts.length === 3)))
  if (!valid || match === null) throw new ValueError(DELETE_POLICY_EXPECTED)
  const maxReservedMs = Number(match[1]) * UNIT_MS[match[2]]
  if (!Number.isSafeInteger(maxReservedMs) || maxReservedMs <= 0) throw new ValueError(DELETE_POLICY_EXPECTED)
  if (name === 'delete') return {action: 'delete', maxReservedMs}
  if (zip === undefined) return {action: 'archive', maxReservedMs}
  const compress = zip.toLowerCase()
  if (compress !== 'true' && compress !== 'false') {
    throw new ValueError('expected "archive,<N>,true" or "archive,<N>,false" (whether to zip the archived segment)')
  }
  return {action: compress === 'true' ? 'archive-zip' : 'archive', maxReservedMs}
}

/** The shortest server.ini text for a policy (`delete,168`, `archive,90m,true`). */
export function formatDeletePolicy(policy: DeletePolicy): string {
  const ms = policy.maxReservedMs
  const age = ms % 3_600_000 === 0 ? `${ms / 3_600_000}` : ms % 60_000 === 0 ? `${ms / 60_000}m` : `${ms / 1000}s`
  if (policy.action === 'delete') return `delete,${age}`
  return policy.action === 'archive-zip' ? `archive,${age},true` : `archive,${age}`
}

/** For a policy set programmatically: it must be expressible in server.ini. */
export function checkDeletePolicy(policy: DeletePolicy): void {
  const actions = ['delete', 'archive', 'archive-zip']
  const ms = policy?.maxReservedMs
  if (!actions.includes(policy?.action) || !Number.isSafeInteger(ms) || ms <= 0 || ms % 1000 !== 0) {
    throw new ValueError('expected {action: "delete" | "archive" | "archive-zip", maxReservedMs: a positive whole number of seconds in ms}')
  }
}

const HOST_LABEL = /^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$/

/** A host name or IP address; IPv6 may be written in brackets and is returned without them. */
export function parseHost(text: string): string {
  const host = text.trim()
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (isIP(bare) !== 0) return bare
  const labels = (bare.endsWith('.') ? bare.slice(0, -1) : bare).split('.')
  if (bare.length > 0 && bare.length <= 253 && labels.every((label) => label.length <= 63 && HOST_LABEL.test(label))) {
    return bare
  }
  throw new ValueError('expected a host name or an ip address')
}

/** `host:port` (IPv6 hosts in brackets), e.g. a sync slave's address. */
export function parseAddress(text: string): string {
  const value = text.trim()
  const match = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(value)
  const port = match === null ? Number.NaN : Number(match[2])
  if (match === null || !(port >= 1 && port <= 65535)) throw new ValueError('expected "host:port" with a port from 1 to 65535')
  parseHost(match[1])
  return value
}

/** `host[:port][,host[:port]…][/chroot]`, the form ZooKeeper clients take. */
export function parseZkConnect(text: string): string {
  const value = text.trim()
  const slash = value.indexOf('/')
  const hosts = slash < 0 ? value : value.slice(0, slash)
  const expected = 'expected "host:port[,host:port…][/chroot]"'
  if (/\s/.test(value)) throw new ValueError(expected)
  if (slash >= 0) normalizeZkPath(value.slice(slash), expected)
  for (const server of hosts.split(',')) {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(server)
    if (match === null) throw new ValueError(expected)
    try {
      parseHost(match[1])
    } catch {
      // The host's own message would hide which part of the connect string was wrong.
      throw new ValueError(`${expected}, got host "${match[1]}"`)
    }
    if (match[2] !== undefined && (Number(match[2]) < 1 || Number(match[2]) > 65535)) {
      throw new ValueError(`${expected}, got port ${match[2]}`)
    }
  }
  return value
}

/** MetaQ's ZkUtils normalisation: a leading `/`, no trailing `/`; `/` alone is refused. */
export function normalizeZkPath(text: string, expected = 'expected a znode path such as "/meta"'): string {
  let path = text.trim()
  if (!path.startsWith('/')) path = `/${path}`
  while (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1)
  const segments = path.split('/').slice(1)
  const bad = segments.some((segment) => segment === '' || segment === '.' || segment === '..' || /[\s\u0000-\u001f\u007f]/.test(segment))
  if (path === '/' || bad) throw new ValueError(expected)
  return path
}
