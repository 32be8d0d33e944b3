/**
 * Glob patterns of `meta send --follow` ('/var/log/app/*.log'): `*` (any run of characters but
 * `/`), `?` (one character) and `[…]` classes (`[!…]` negates), in any path component. Matched
 * by reading the directories the pattern names, with no dependency and no shell: the pattern is
 * quoted on the command line so that files appearing later match too. Hidden files match only
 * a component that starts with a dot (as in sh).
 */
import {readdir} from 'node:fs/promises'
import {isAbsolute, join, sep} from 'node:path'

/** Whether `path` holds a glob character (`*`, `?`, `[`), else it is followed as a literal path. */
export function isGlob(path: string): boolean {
  return /[*?[]/.test(path)
}

/** Every existing path that matches `pattern` (sorted); a directory that cannot be read matches nothing. */
export async function expandGlob(pattern: string): Promise<string[]> {
  // Paths are built as the pattern was written: relative ones stay relative.
  let bases = [isAbsolute(pattern) ? sep : '']
  for (const part of pattern.split(sep)) {
    if (part === '') continue
    const next: string[] = []
    if (!isGlob(part)) {
      for (const base of bases) next.push(child(base, part))
    } else {
      const re = componentRegExp(part)
      for (const base of bases) {
        let names: string[]
        try {
          names = await readdir(base === '' ? '.' : base)
        } catch {
          continue // not a directory, gone or unreadable: nothing matches below it
        }
        for (const name of names) {
          if (name.startsWith('.') && !part.startsWith('.')) continue
          if (re.test(name)) next.push(child(base, name))
        }
      }
    }
    bases = next
    if (bases.length === 0) break
  }
  return bases.sort()
}

/** Whether `path` is one `pattern` names: itself for a literal path, a match for a glob (as expandGlob() would give it). */
export function patternNames(pattern: string, path: string): boolean {
  if (!isGlob(pattern)) return pattern === path
  const parts = pattern.split(sep).filter((p) => p !== '')
  const names = path.split(sep).filter((p) => p !== '')
  if (parts.length !== names.length || isAbsolute(pattern) !== isAbsolute(path)) return false
  return parts.every((part, i) =>
    isGlob(part) ? componentRegExp(part).test(names[i]) && (!names[i].startsWith('.') || part.startsWith('.')) : part === names[i],
  )
}

function child(base: string, name: string): string {
  return base === '' ? name : join(base, name)
}

/** One path component of a glob as a regular expression. */
function componentRegExp(part: string): RegExp {
  let source = ''
  for (let i = 0; i < part.length; i += 1) {
    const c = part[i]
    if (c === '*') source += '[^/]*'
    else if (c === '?') source += '[^/]'
    else if (c === '[') {
      const end = part.indexOf(']', i + 2)
      if (end === -1) {
        source += '\\['
        continue
      }
      let body = part.slice(i + 1, end)
      const negate = body.startsWith('!') || body.startsWith('^')
      if (negate) body = body.slice(1)
      source += `[${negate ? '^' : ''}${body.replaceAll('\\', '\\\\').replaceAll(']', '\\]')}]`
      i = end
    } else source += c.replace(/[.+^${}()|\\]/g, '\\$&')
  }
  return new RegExp(`^${source}$`)
}
