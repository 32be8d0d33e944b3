/**
 * Filter expressions: what a consumer group receives from a filtered get
 * (docs/protocol.md#filtered-get, docs/configuration.md#topic-sections `group.<name>=expr:`).
 * Parsed here, where the client validates before sending and the broker's config reader
 * validates server.ini; evaluated by the broker only (src/broker/filter/).
 *
 *   expr       := or
 *   or         := and (('OR' | '||') and)*
 *   and        := not (('AND' | '&&') not)*
 *   not        := ('NOT' | '!') not | primary
 *   primary    := '(' expr ')' | 'EXISTS' path | path op literal
 *               | path ['NOT'] 'IN' '(' literal (',' literal)* ')' | tag
 *   op         := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
 *   literal    := 'single' | "double" (backslash escapes \\ \' \") | number | TRUE | FALSE | NULL
 *   path       := word ('.' word)*            a JSON field of the payload: level, http.status
 *   tag        := word | 'quoted'              a tag of the attribute: TagA, 'tag with spaces'
 *   word       := [A-Za-z0-9_$-]+ (not starting with '-')
 *
 * Keywords are case-insensitive. A word followed by an operator (or IN) is a path, otherwise
 * a tag. Limits: MAX_FILTER_EXPRESSION_BYTES, MAX_FILTER_DEPTH (nesting of parentheses and
 * NOT), MAX_FILTER_NODES (tests and connectives), MAX_FILTER_IN_ITEMS.
 */
import {MetaError} from './errors.js'

/** Longest expression, in UTF-8 bytes (its percent-encoded form still fits a get header). */
export const MAX_FILTER_EXPRESSION_BYTES = 1024
/** Deepest nesting of parentheses and NOT. */
export const MAX_FILTER_DEPTH = 32
/** Most tests and connectives in one expression. */
const MAX_FILTER_NODES = 256
/** Most literals in one IN list. */
export const MAX_FILTER_IN_ITEMS = 64
/** Most segments in one dotted path. */
const MAX_FILTER_PATH_SEGMENTS = 16

export type FilterLiteral = string | number | boolean | null
type FilterOp = '=' | '!=' | '<' | '<=' | '>' | '>='

export type FilterNode =
  | {kind: 'or' | 'and'; items: FilterNode[]}
  | {kind: 'not'; item: FilterNode}
  | {kind: 'tag'; tag: string}
  | {kind: 'exists'; path: string[]}
  | {kind: 'compare'; path: string[]; op: FilterOp; value: FilterLiteral}
  | {kind: 'in'; path: string[]; values: FilterLiteral[]}

type Token =
  | {type: 'word'; text: string; pos: number}
  | {type: 'string'; text: string; pos: number}
  | {type: 'number'; value: number; pos: number}
  | {type: 'punct'; text: string; pos: number}
  | {type: 'end'; pos: number}

const KEYWORDS = new Set(['AND', 'OR', 'NOT', 'IN', 'EXISTS', 'TRUE', 'FALSE', 'NULL'])
const OPERATORS: Record<string, FilterOp> = {'=': '=', '==': '=', '!=': '!=', '<>': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>='}
const PUNCT = ['||', '&&', '==', '!=', '<>', '<=', '>=', '(', ')', ',', '.', '=', '<', '>', '!']

function filterError(source: string, pos: number, message: string): MetaError {
  return new MetaError('INVALID_ARGUMENT', `invalid filter ${JSON.stringify(source)} at position ${pos + 1}: ${message}`, {details: {position: pos + 1}})
}

function describe(token: Token): string {
  switch (token.type) {
    case 'end':
      return 'end of the expression'
    case 'string':
      return `string ${JSON.stringify(token.text)}`
    case 'number':
      return `number ${token.value}`
    default:
      return JSON.stringify(token.text)
  }
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < source.length) {
    const c = source[i]
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') {
      i++
    } else if (c === "'" || c === '"') {
      const start = i
      let text = ''
      i++
      for (;;) {
        if (i >= source.length) throw filterError(source, start, `unterminated string: expected a closing ${c}`)
        const d = source[i]
        if (d === c) break
        if (d === '\\') {
          const e = source[i + 1]
          if (e !== '\\' && e !== "'" && e !== '"') throw filterError(source, i, `invalid escape "\\${e ?? ''}": expected \\\\, \\' or \\"`)
          text += e
          i += 2
        } else {
          text += d
          i++
        }
      }
      i++
      tokens.push({type: 'string', text, pos: start})
    } else if (/[0-9]/.test(c) || (c === '-' && /[0-9.]/.test(source[i + 1] ?? ''))) {
      const m = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z0-9_$-])/.exec(source.slice(i))
      if (m === null) {
        const word = /^[A-Za-z0-9_$-]+/.exec(source.slice(i))
        if (word === null || c === '-') throw filterError(source, i, `invalid number: expected digits`)
        tokens.push({type: 'word', text: word[0], pos: i})
        i += word[0].length
      } else {
        tokens.push({type: 'number', value: Number(m[0]), pos: i})
        i += m[0].length
      }
    } else if (/[A-Za-z_$]/.test(c)) {
      const word = /^[A-Za-z0-9_$-]+/.exec(source.slice(i))![0]
      tokens.push({type: 'word', text: word, pos: i})
      i += word.length
    } else {
      const punct = PUNCT.find((p) => source.startsWith(p, i))
      if (punct === undefined) throw filterError(source, i, `unexpected character ${JSON.stringify(c)}: expected a tag, a field, an operator or a parenthesis`)
      tokens.push({type: 'punct', text: punct, pos: i})
      i += punct.length
    }
  }
  tokens.push({type: 'end', pos: source.length})
  return tokens
}

class Parser {
  private i = 0
  private depth = 0
  private nodes = 0

  constructor(
    private readonly source: string,
    private readonly tokens: Token[],
  ) {}

  parse(): FilterNode {
    if (this.peek().type === 'end') throw this.error(this.peek(), 'empty expression: expected a tag or a comparison')
    const node = this.or()
    const next = this.peek()
    if (next.type !== 'end') throw this.error(next, `unexpected ${describe(next)}: expected AND, OR or the end of the expression`)
    return node
  }

  private peek(ahead = 0): Token {
    return this.tokens[Math.min(this.i + ahead, this.tokens.length - 1)]
  }

  private error(token: Token, message: string): MetaError {
    return filterError(this.source, token.pos, message)
  }

  private isKeyword(token: Token, keyword: string): boolean {
    return token.type === 'word' && token.text.toUpperCase() === keyword
  }

  private isPunct(token: Token, ...texts: string[]): boolean {
    return token.type === 'punct' && texts.includes(token.text)
  }

  private count(token: Token): void {
    if (++this.nodes > MAX_FILTER_NODES) throw this.error(token, `more than ${MAX_FILTER_NODES} tests and connectives`)
  }

  private or(): FilterNode {
    const items = [this.and()]
    while (this.isKeyword(this.peek(), 'OR') || this.isPunct(this.peek(), '||')) {
      this.count(this.tokens[this.i++])
      items.push(this.and())
    }
    return items.length === 1 ? items[0] : {kind: 'or', items}
  }

  private and(): FilterNode {
    const items = [this.not()]
    while (this.isKeyword(this.peek(), 'AND') || this.isPunct(this.peek(), '&&')) {
      this.count(this.tokens[this.i++])
      items.push(this.not())
    }
    return items.length === 1 ? items[0] : {kind: 'and', items}
  }

  private nested<T>(token: Token, inner: () => T): T {
    if (++this.depth > MAX_FILTER_DEPTH) throw this.error(token, `nested more than ${MAX_FILTER_DEPTH} deep`)
    const result = inner()
    this.depth--
    return result
  }

  private not(): FilterNode {
    const token = this.peek()
    if (this.isKeyword(token, 'NOT') || this.isPunct(token, '!')) {
      this.i++
      this.count(token)
      return this.nested(token, () => ({kind: 'not', item: this.not()}))
    }
    return this.primary()
  }

  private primary(): FilterNode {
    const token = this.peek()
    this.count(token)
    if (this.isPunct(token, '(')) {
      this.i++
      const node = this.nested(token, () => this.or())
      const close = this.peek()
      if (!this.isPunct(close, ')')) throw this.error(close, `unexpected ${describe(close)}: expected ")" closing the "(" at position ${token.pos + 1}`)
      this.i++
      return node
    }
    if (this.isKeyword(token, 'EXISTS')) {
      this.i++
      return {kind: 'exists', path: this.path()}
    }
    if (token.type === 'string') {
      this.i++
      return {kind: 'tag', tag: token.text}
    }
    if (token.type === 'word' && !KEYWORDS.has(token.text.toUpperCase())) return this.wordTest()
    if (token.type === 'number') {
      this.i++
      return {kind: 'tag', tag: numberText(this.source, token)}
    }
    throw this.error(token, `unexpected ${describe(token)}: expected a tag, a comparison such as level = 'error', EXISTS or "("`)
  }

  /** A word: a tag on its own, or the path of a comparison when an operator or IN follows. */
  private wordTest(): FilterNode {
    const start = this.i
    const path = this.path()
    const next = this.peek()
    if (next.type === 'punct' && next.text in OPERATORS) {
      this.i++
      return {kind: 'compare', path, op: OPERATORS[next.text], value: this.literal()}
    }
    if (this.isKeyword(next, 'IN')) {
      this.i++
      return {kind: 'in', path, values: this.list()}
    }
    if (this.isKeyword(next, 'NOT') && this.isKeyword(this.peek(1), 'IN')) {
      this.i += 2
      return {kind: 'not', item: {kind: 'in', path, values: this.list()}}
    }
    // A tag: one word, so a dotted word is a tag spelled with dots.
    const first = this.tokens[start]
    const last = this.tokens[this.i - 1]
    return {kind: 'tag', tag: this.source.slice(first.pos, last.pos + (last.type === 'word' ? last.text.length : 1))}
  }

  private path(): string[] {
    const segments: string[] = []
    for (;;) {
      const token = this.peek()
      if (token.type === 'word' || token.type === 'number') {
        if (token.type === 'word' && KEYWORDS.has(token.text.toUpperCase()) && segments.length === 0) {
          throw this.error(token, `unexpected keyword ${describe(token)}: expected a field name`)
        }
        segments.push(token.type === 'word' ? token.text : numberText(this.source, token))
        this.i++
      } else {
        throw this.error(token, `unexpected ${describe(token)}: expected a field name`)
      }
      if (segments.length > MAX_FILTER_PATH_SEGMENTS) throw this.error(token, `a field path of more than ${MAX_FILTER_PATH_SEGMENTS} segments`)
      if (!this.isPunct(this.peek(), '.')) return segments
      this.i++
    }
  }

  private literal(): FilterLiteral {
    const token = this.peek()
    this.i++
    if (token.type === 'string') return token.text
    if (token.type === 'number') return token.value
    if (this.isKeyword(token, 'TRUE')) return true
    if (this.isKeyword(token, 'FALSE')) return false
    if (this.isKeyword(token, 'NULL')) return null
    throw this.error(token, `unexpected ${describe(token)}: expected a value (a 'string', a number, true, false or null)`)
  }

  private list(): FilterLiteral[] {
    const open = this.peek()
    if (!this.isPunct(open, '(')) throw this.error(open, `unexpected ${describe(open)}: expected "(" starting the IN list`)
    this.i++
    const values = [this.literal()]
    while (this.isPunct(this.peek(), ',')) {
      this.i++
      if (values.length >= MAX_FILTER_IN_ITEMS) throw this.error(this.peek(), `an IN list of more than ${MAX_FILTER_IN_ITEMS} values`)
      values.push(this.literal())
    }
    const close = this.peek()
    if (!this.isPunct(close, ')')) throw this.error(close, `unexpected ${describe(close)}: expected "," or ")" in the IN list`)
    this.i++
    return values
  }
}

/** A number token as written (a path segment or tag such as `2024` or `items.0`). */
function numberText(source: string, token: Token): string {
  const m = /^-?[0-9.eE+-]+/.exec(source.slice(token.pos))
  return m === null ? String((token as {value: number}).value) : m[0].replace(/\.$/, '')
}

/**
 * Parse a filter expression. Throws INVALID_ARGUMENT naming the position (1-based, in
 * characters) and what was expected there.
 */
export function parseFilter(source: string): FilterNode {
  const bytes = Buffer.byteLength(source, 'utf8')
  if (bytes > MAX_FILTER_EXPRESSION_BYTES) {
    throw new MetaError('INVALID_ARGUMENT', `invalid filter: ${bytes} bytes is longer than the limit of ${MAX_FILTER_EXPRESSION_BYTES} bytes`)
  }
  return new Parser(source, tokenize(source)).parse()
}

/** The filter as a get token (percent-encoded: no spaces, CR or LF). */
export function encodeFilterToken(source: string): string {
  return encodeURIComponent(source)
}

/** The expression in a get's filter token; undefined when the token is not valid percent-encoding. */
export function decodeFilterToken(token: string): string | undefined {
  try {
    return decodeURIComponent(token)
  } catch {
    return undefined // a malformed escape: the caller reports the token
  }
}
