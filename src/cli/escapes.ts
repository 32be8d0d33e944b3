/**
 * Backslash escapes in command-line text (delimiters of `meta send -D/-K`, the format of
 * `meta tail -f`): `\n` `\t` `\r` `\0` `\\` and `\xNN` (one byte, two hex digits). Any other
 * backslash sequence is an error, so a typo never silently becomes a literal.
 */
import {MetaError} from '../protocol/errors.js'

const SIMPLE: Record<string, number> = {n: 0x0a, t: 0x09, r: 0x0d, '0': 0x00, '\\': 0x5c}

/** Text with escapes → the bytes it stands for (the rest is UTF-8). */
export function unescapeBytes(text: string, what: string): Buffer {
  if (!text.includes('\\')) return Buffer.from(text, 'utf8')
  const parts: Buffer[] = []
  let literalStart = 0
  for (let i = 0; i < text.length; i++) {
    if (text[i] !== '\\') continue
    parts.push(Buffer.from(text.slice(literalStart, i), 'utf8'))
    const next = text[i + 1]
    if (next !== undefined && next in SIMPLE) {
      parts.push(Buffer.of(SIMPLE[next]))
      i += 1
    } else if (next === 'x' && /^[0-9a-fA-F]{2}$/.test(text.slice(i + 2, i + 4))) {
      parts.push(Buffer.of(Number.parseInt(text.slice(i + 2, i + 4), 16)))
      i += 3
    } else {
      const shown = next === undefined ? '\\' : `\\${next}`
      throw MetaError.invalidArgument(`invalid escape "${shown}" in ${what} "${text}": expected \\n, \\t, \\r, \\0, \\\\ or \\xNN`)
    }
    literalStart = i + 1
  }
  parts.push(Buffer.from(text.slice(literalStart), 'utf8'))
  return Buffer.concat(parts)
}

/** A delimiter flag's value as bytes; it must not be empty. */
export function parseDelimiter(text: string, flag: string): Buffer {
  const bytes = unescapeBytes(text, flag)
  if (bytes.length === 0) throw MetaError.invalidArgument(`empty delimiter for ${flag}: expected at least one byte, e.g. "\\n" or "\\0"`)
  return bytes
}
