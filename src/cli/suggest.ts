/**
 * "Did you mean …?" for mistyped commands, flags and topic names (fastest-levenshtein).
 * A candidate is suggested when it is a few edits away (about a third of the word) or when
 * one name contains the other (`order` → `orders-v2`); the closest come first.
 */
import {distance} from 'fastest-levenshtein'
import {MetaError} from '../protocol/errors.js'

/** Up to `max` candidates close to `input`, closest first. */
export function closeNames(input: string, candidates: Iterable<string>, max = 3): string[] {
  const typed = input.toLowerCase()
  const limit = Math.max(2, Math.ceil(typed.length / 3))
  const scored: Array<{name: string; score: number}> = []
  for (const name of new Set(candidates)) {
    if (name === input) continue
    const lower = name.toLowerCase()
    const d = distance(typed, lower)
    const contains = typed.length >= 3 && (lower.includes(typed) || typed.includes(lower))
    if (d <= limit || contains) scored.push({name, score: contains ? Math.min(d, limit) : d})
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : 1))
  return scored.slice(0, max).map((s) => s.name)
}

/** `"a"`, `"a" or "b"`, `"a", "b" or "c"`. */
export function quoteList(names: readonly string[]): string {
  const quoted = names.map((n) => `"${n}"`)
  return quoted.length <= 1 ? (quoted[0] ?? '') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`
}

/**
 * NOT_FOUND for a topic a broker (or cluster) does not have, with the close names as a hint
 * (`did you mean "orders"?`), or the known topics when none is close.
 */
export function unknownTopicError(topic: string, known: readonly string[], where: string): MetaError & {hint?: string} {
  const close = closeNames(topic, known)
  const sorted = [...new Set(known)].sort()
  const hint =
    close.length > 0
      ? `did you mean ${quoteList(close)}?`
      : sorted.length === 0
        ? `${where} has no topics yet`
        : `topics on ${where}: ${sorted.slice(0, 10).join(', ')}${sorted.length > 10 ? `, … (${sorted.length})` : ''}`
  const error = new MetaError('NOT_FOUND', `topic "${topic}" does not exist on ${where}`, {details: {topic}}) as MetaError & {hint?: string}
  error.hint = hint
  return error
}
