/**
 * Durations on the command line: a number and a unit, `500ms`, `5s`, `1.5s`, `2m`, `1h`, or a
 * sum of them (`1m30s`). A bare number is refused rather than guessed: `--timeout 5` could mean
 * 5 ms or 5 s, and guessing wrong makes a script exit early or hang.
 */
import {MetaError} from '../protocol/errors.js'

const UNIT_MS: Record<string, number> = {ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000}
const PART = /(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h|d)/gy

/** "1m30s" → 90000. Throws INVALID_ARGUMENT naming the value and the expected forms. */
export function parseDurationMs(text: string, what = 'duration'): number {
  const input = text.trim()
  let total = 0
  let matched = 0
  PART.lastIndex = 0
  for (let m = PART.exec(input); m !== null; m = PART.exec(input)) {
    total += Number(m[1]) * UNIT_MS[m[2]]
    matched = PART.lastIndex
  }
  if (input === '' || matched !== input.length) {
    const hint = /^\d+(\.\d+)?$/.test(input) ? ` (a unit is required: "${input}ms" or "${input}s"?)` : ''
    throw MetaError.invalidArgument(`invalid ${what} "${text}": expected a number with a unit, e.g. 500ms, 5s, 2m, 1h${hint}`)
  }
  return Math.round(total)
}

/** 1234 → "1.2 s", 90000 → "1m 30s": for summaries. */
export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`
  const m = Math.floor(ms / 60_000)
  const s = Math.floor((ms % 60_000) / 1000)
  return m >= 60 ? `${Math.floor(m / 60)}h ${m % 60}m ${s}s` : `${m}m ${s}s`
}
