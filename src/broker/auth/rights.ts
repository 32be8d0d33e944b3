/**
 * Rights and the patterns they are granted on (docs/security.md):
 *
 *   put PATTERN        put, put-batch, transactional puts to topics matching PATTERN
 *   get PATTERN        get, offset, seek, count, partitions on matching topics
 *   group PATTERN      group-join/heartbeat/leave/claim, offset-commit/fetch, group-describe/delete
 *   admin *            stats reset, config-reload, partitions-close/open, tx-list/tx-decide,
 *                      group-list, topic-admin, and what tx gives
 *   replicate *        sync, sync-batch, sync-cut, replicate, slave-status
 *   tx *               finishing and recovering other principals' transactions
 *   describe PATTERN   see matching topics and groups in listings (stats, group-list, /metrics, the
 *                      dashboard); get, put and group imply it on their own resources (visibility.ts)
 *
 * check.ts's RIGHTS_TABLE says which command needs which right (docs/security.md's table is
 * checked against it). A pattern is a name where `*` matches any run of characters (`a-*`,
 * `*`, `*-audit`). `admin`, `replicate` and `tx` are granted on `*` (they name no resource).
 */
import {MetaError} from '../../protocol/errors.js'

export const RIGHTS = ['put', 'get', 'group', 'admin', 'replicate', 'tx', 'describe'] as const
export type Right = (typeof RIGHTS)[number]

export interface Grant {
  right: Right
  pattern: string
}

/** Longest pattern accepted, in characters. */
const PATTERN_LENGTH_MAX = 255
const PATTERN_CHARS = /^[A-Za-z0-9_.*-]+$/

export function parseRight(text: string): Right {
  if (!RIGHTS.includes(text as Right)) throw new MetaError('INVALID_ARGUMENT', `invalid right ${JSON.stringify(text)}: expected one of ${RIGHTS.join(', ')}`)
  return text as Right
}

export function checkPattern(pattern: string): string {
  if (pattern.length === 0 || pattern.length > PATTERN_LENGTH_MAX || !PATTERN_CHARS.test(pattern)) {
    throw new MetaError(
      'INVALID_ARGUMENT',
      `invalid pattern ${JSON.stringify(pattern)}: expected 1..${PATTERN_LENGTH_MAX} of letters, digits, '_', '.', '-' and '*'`,
    )
  }
  return pattern
}

/** `put a-*, get *` (server.ini's [security] anonymous): a comma-separated list of `RIGHT PATTERN`. */
export function parseGrantList(text: string): Grant[] {
  const grants: Grant[] = []
  for (const item of text.split(',')) {
    const words = item
      .trim()
      .split(/\s+/)
      .filter((w) => w.length > 0)
    if (words.length === 0) continue
    if (words.length !== 2) throw new MetaError('INVALID_ARGUMENT', `invalid grant ${JSON.stringify(item.trim())}: expected "RIGHT PATTERN" (put a-*)`)
    grants.push({right: parseRight(words[0]), pattern: checkPattern(words[1])})
  }
  return grants
}

function patternRegExp(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .split('*')
      .map((part) => part.replace(/[.]/g, '\\.'))
      .join('.*')}$`,
  )
}

/** Cached answers per resource, at most this many per right set (then the cache starts over). */
const CACHE_ENTRIES_MAX = 10_000

/** What one principal (a user, or anonymous) may do; answers are cached per resource. */
export class RightSet {
  private readonly byRight = new Map<Right, RegExp[]>()
  private readonly cache = new Map<string, boolean>()

  constructor(readonly grants: readonly Grant[]) {
    for (const grant of grants) {
      const list = this.byRight.get(grant.right) ?? []
      list.push(patternRegExp(grant.pattern))
      this.byRight.set(grant.right, list)
    }
  }

  allows(right: Right, resource: string): boolean {
    const key = `${right} ${resource}`
    const cached = this.cache.get(key)
    if (cached !== undefined) return cached
    const allowed = (this.byRight.get(right) ?? []).some((re) => re.test(resource))
    if (this.cache.size >= CACHE_ENTRIES_MAX) this.cache.clear()
    this.cache.set(key, allowed)
    return allowed
  }
}

export const NO_RIGHTS = new RightSet([])
/** Every right on everything (the operator's HTTP token and its in-process connection). */
export const ALL_RIGHTS = new RightSet(RIGHTS.map((right) => ({right, pattern: '*'})))
