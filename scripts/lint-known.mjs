/**
 * The lint scripts' shared list of known findings (scripts/lint-known.txt): findings in files
 * that were being restructured on other branches when the lint was added, accepted until those
 * branches are merged. Each line is `<file> <check> <name>`; `#` starts a comment. A finding on
 * the list does not fail the lint; an entry that no longer matches a finding does (remove it),
 * so the list can only shrink. The goal is an empty list.
 */
import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'

export const KNOWN_FILE = fileURLToPath(new URL('lint-known.txt', import.meta.url))

/** The entries of one check (`unused`, `export`), as `<file> <name>` keys. */
export function knownFindings(check) {
  const keys = new Set()
  for (const raw of readFileSync(KNOWN_FILE, 'utf8').split('\n')) {
    const line = raw.replace(/#.*/, '').trim()
    if (line === '') continue
    const [file, kind, ...rest] = line.split(/\s+/)
    if (kind === check) keys.add(`${file} ${rest.join(' ')}`)
  }
  return keys
}

/**
 * Splits `findings` (objects with `key`, `<file> <name>`, and `text`) into new ones and
 * accepted ones, prints both kinds of failure and returns the exit code.
 */
export function report(check, findings, what) {
  const known = knownFindings(check)
  const fresh = findings.filter((f) => !known.has(f.key))
  const found = new Set(findings.map((f) => f.key))
  const stale = [...known].filter((k) => !found.has(k))
  for (const f of fresh) console.error(f.text)
  for (const k of stale) console.error(`scripts/lint-known.txt: "${k.replace(' ', ` ${check} `)}" is no longer found: remove the line`)
  const accepted = findings.length - fresh.length
  const note = accepted > 0 ? ` (${accepted} more on the known list, scripts/lint-known.txt)` : ''
  if (fresh.length === 0 && stale.length === 0) {
    console.log(`lint ${check}: no ${what}${note}`)
    return 0
  }
  console.error(`lint ${check}: ${fresh.length} ${what}, ${stale.length} stale known-list lines${note}`)
  return 1
}
