/**
 * Evaluating a filter expression (protocol/filter-expression.ts) against one stored message:
 * its attribute (tags) and its body read as a JSON object (fields).
 *
 * Three-valued, as SQL: a comparison whose field is missing, whose body is not a JSON object,
 * or whose value has another type than the literal (no coercion: 500 is not '500') is
 * UNKNOWN; NOT UNKNOWN is UNKNOWN; AND/OR follow Kleene's tables; a message matches only when
 * the whole expression is TRUE. So a body that is not JSON never matches a field comparison,
 * negated or not. Tag tests and EXISTS are never UNKNOWN.
 *
 * Cost per message: tag tests read the attribute (already decoded by the record walk); the
 * body is parsed by JSON.parse at most once, and only when a field test is reached (tests run
 * left to right and stop early), and never when it does not start with `{`.
 */
import type {FilterLiteral, FilterNode} from '../../protocol/filter-expression.js'

/** TRUE, FALSE or UNKNOWN (undefined). */
type Truth = boolean | undefined

/** One message as the evaluator sees it. The body is read as JSON lazily. */
export interface FilterSubject {
  attribute: string | undefined
  body: Buffer
}

export type FilterPredicate = (subject: FilterSubject) => boolean

const NOT_JSON = Symbol('not json')
const OPEN_BRACE = 0x7b

/** Tags of an attribute: its comma-separated items, trimmed (a single tag is the whole attribute). */
function hasTag(attribute: string | undefined, tag: string): boolean {
  if (attribute === undefined) return false
  if (attribute === tag) return true
  if (!attribute.includes(',')) return attribute.trim() === tag
  return attribute.split(',').some((item) => item.trim() === tag)
}

function parseBody(body: Buffer): unknown {
  let i = 0
  while (i < body.length && (body[i] === 0x20 || body[i] === 0x09 || body[i] === 0x0a || body[i] === 0x0d)) i++
  if (body[i] !== OPEN_BRACE) return NOT_JSON
  try {
    return JSON.parse(body.toString('utf8')) as unknown
  } catch {
    return NOT_JSON // a body that is not JSON matches no field test (documented)
  }
}

function lookup(root: unknown, path: readonly string[]): unknown {
  let value = root
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined
    if (!Object.prototype.hasOwnProperty.call(value, segment)) return undefined
    value = (value as Record<string, unknown>)[segment]
  }
  return value
}

function sameType(a: unknown, b: FilterLiteral): boolean {
  return (a === null && b === null) || (a !== null && b !== null && typeof a === typeof b)
}

function compare(value: unknown, op: string, literal: FilterLiteral): Truth {
  if (value === undefined || (typeof value === 'object' && value !== null)) return undefined
  if (!sameType(value, literal)) return undefined
  switch (op) {
    case '=':
      return value === literal
    case '!=':
      return value !== literal
  }
  if (typeof value === 'boolean' || value === null) return undefined
  const a = value as number | string
  const b = literal as number | string
  switch (op) {
    case '<':
      return a < b
    case '<=':
      return a <= b
    case '>':
      return a > b
    default:
      return a >= b
  }
}

/** Compile an expression to a predicate (closures, no tree walk per message). */
export function compileFilter(root: FilterNode): FilterPredicate {
  type Eval = (subject: FilterSubject, json: {value?: unknown}) => Truth
  const field = (subject: FilterSubject, json: {value?: unknown}): unknown => {
    if (!('value' in json)) json.value = parseBody(subject.body)
    return json.value
  }
  const build = (node: FilterNode): Eval => {
    switch (node.kind) {
      case 'tag':
        return (s) => hasTag(s.attribute, node.tag)
      case 'exists':
        return (s, j) => {
          const root = field(s, j)
          return root !== NOT_JSON && lookup(root, node.path) !== undefined
        }
      case 'compare':
        return (s, j) => {
          const root = field(s, j)
          return root === NOT_JSON ? undefined : compare(lookup(root, node.path), node.op, node.value)
        }
      case 'in':
        return (s, j) => {
          const root = field(s, j)
          if (root === NOT_JSON) return undefined
          const value = lookup(root, node.path)
          let result: Truth = false
          for (const literal of node.values) {
            const t = compare(value, '=', literal)
            if (t === true) return true
            if (t === undefined) result = undefined
          }
          return result
        }
      case 'not': {
        const inner = build(node.item)
        return (s, j) => {
          const t = inner(s, j)
          return t === undefined ? undefined : !t
        }
      }
      case 'and': {
        const items = node.items.map(build)
        return (s, j) => {
          let result: Truth = true
          for (const item of items) {
            const t = item(s, j)
            if (t === false) return false
            if (t === undefined) result = undefined
          }
          return result
        }
      }
      case 'or': {
        const items = node.items.map(build)
        return (s, j) => {
          let result: Truth = false
          for (const item of items) {
            const t = item(s, j)
            if (t === true) return true
            if (t === undefined) result = undefined
          }
          return result
        }
      }
    }
  }
  const evaluate = build(root)
  return (subject) => evaluate(subject, {}) === true
}
