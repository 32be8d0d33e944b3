/**
 * Reads server.ini into sections of `key=value` entries, the way MetaQ's ini4j does:
 *
 *   file    = { line }
 *   line    = blank | comment | section | entry
 *   comment = ( ";" | "#" ) text            (whole lines only: "#" inside a value is data)
 *   section = "[" name "]"
 *   entry   = key ( "=" | ":" ) value       (the first "=" or ":" separates; both trimmed)
 *
 * A line ending in an odd number of `\` continues on the next line (ini4j's escaped newline).
 * A value in double quotes loses the quotes.
 *
 * Not the `ini` package: it splits section names on "." (so `[topic=app.logs]` would become a
 * nested object and could collide with another section's keys), merges duplicate sections
 * silently, cuts values at an inline `#` (Quartz's `6#3` means "third Friday") and loses line
 * numbers, which the error messages need.
 */

interface IniEntry {
  key: string
  value: string
  line: number
}

export interface IniSection {
  name: string
  line: number
  entries: IniEntry[]
}

/** A line that is not INI; `message` says what was expected. */
export class IniSyntaxError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message)
  }
}

export function readIni(text: string): {sections: IniSection[]} {
  const lines = text.replace(/^\uFEFF/, '').split(/\r\n|\n|\r/)
  const sections: IniSection[] = []
  let current: IniSection | undefined
  for (let index = 0; index < lines.length; index++) {
    const lineNumber = index + 1
    let line = lines[index].trim()
    if (line === '' || line.startsWith(';') || line.startsWith('#')) continue
    while (endsWithEscape(line) && index + 1 < lines.length) {
      line = line.slice(0, -1) + lines[++index].trim()
    }
    if (line.startsWith('[')) {
      if (!line.endsWith(']')) throw new IniSyntaxError(lineNumber, `expected "]" at the end of section header ${quote(line)}`)
      current = {name: line.slice(1, -1).trim(), line: lineNumber, entries: []}
      sections.push(current)
      continue
    }
    const separator = line.search(/[=:]/)
    if (separator <= 0) {
      throw new IniSyntaxError(lineNumber, `expected "key=value", "[section]" or a comment, got ${quote(line)}`)
    }
    const key = line.slice(0, separator).trim()
    if (current === undefined) {
      throw new IniSyntaxError(lineNumber, `key ${quote(key)} is outside any section: expected [system], [zookeeper] or [topic=<name>] first`)
    }
    current.entries.push({key, value: unquote(line.slice(separator + 1).trim()), line: lineNumber})
  }
  return {sections}
}

function endsWithEscape(line: string): boolean {
  let count = 0
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) count++
  return count % 2 === 1
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value
}

export function quote(text: string): string {
  return JSON.stringify(text)
}
