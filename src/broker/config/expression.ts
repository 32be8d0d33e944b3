/**
 * Integer expressions in server.ini values. MetaQ evaluates numeric values with Aviator, so
 * files say `maxSegmentSize=1024*1024*1024`. meta accepts the subset people write:
 *
 *   expr   = term   { ("+" | "-") term }
 *   term   = unary  { ("*" | "/" | "%") unary }
 *   unary  = ("-" | "+") unary | primary
 *   primary = digits | "(" expr ")"
 *
 * Integers only: `1e3`, `1.5` and `0x10` are refused (Aviator would make a double or read hex,
 * and a config value that is silently rounded is worse than an error). `/` truncates toward
 * zero and `%` keeps the dividend's sign, as Java's long arithmetic does. Every intermediate
 * result must be a safe integer.
 *
 * Hand-written because no small, maintained library evaluates just this without `eval` or a
 * general expression language; this is ~60 lines and has no way to run code.
 */

/** Why a value is not an integer expression (the caller adds file, section and key). */
export class ExpressionError extends Error {}

const MAX_DEPTH = 64

export function evaluateIntegerExpression(text: string): number {
  let position = 0
  let depth = 0

  const skipSpaces = (): void => {
    while (position < text.length && (text[position] === ' ' || text[position] === '\t')) position++
  }
  const peek = (): string | undefined => {
    skipSpaces()
    return text[position]
  }
  const checked = (value: number): number => {
    if (!Number.isSafeInteger(value)) throw new ExpressionError('result is not a safe integer')
    return value === 0 ? 0 : value // no -0
  }

  const primary = (): number => {
    const c = peek()
    if (c === '(') {
      if (++depth > MAX_DEPTH) throw new ExpressionError('too deeply nested')
      position++
      const value = expr()
      if (peek() !== ')') throw new ExpressionError(`expected ")" at column ${position + 1}`)
      position++
      depth--
      return value
    }
    const start = position
    while (position < text.length && text[position] >= '0' && text[position] <= '9') position++
    if (position === start) {
      throw new ExpressionError(c === undefined ? 'unexpected end' : `unexpected "${c}" at column ${position + 1}`)
    }
    return checked(Number(text.slice(start, position)))
  }
  const unary = (): number => {
    const c = peek()
    if (c === '-' || c === '+') {
      if (++depth > MAX_DEPTH) throw new ExpressionError('too deeply nested')
      position++
      const value = unary()
      depth--
      return c === '-' ? checked(-value) : value
    }
    return primary()
  }
  const term = (): number => {
    let value = unary()
    for (let c = peek(); c === '*' || c === '/' || c === '%'; c = peek()) {
      position++
      const right = unary()
      if (c !== '*' && right === 0) throw new ExpressionError('division by zero')
      value = checked(c === '*' ? value * right : c === '/' ? Math.trunc(value / right) : value % right)
    }
    return value
  }
  const expr = (): number => {
    let value = term()
    for (let c = peek(); c === '+' || c === '-'; c = peek()) {
      position++
      const right = term()
      value = checked(c === '+' ? value + right : value - right)
    }
    return value
  }

  const value = expr()
  const rest = peek()
  if (rest !== undefined) throw new ExpressionError(`unexpected "${rest}" at column ${position + 1}`)
  return value
}
