/**
 * `meta tail -o` start positions. Each form is one entry of FORMS: a pattern and what it
 * means. `-N`, `+N` and `@<time>` are answered by the broker's side index (seek), per
 * partition (src/cli/tail-start.ts); `stored` is the group's committed offset. Parsing only:
 * nothing here talks to a broker.
 *
 * Offsets are byte positions in the partition log (MetaQ's meaning), never message counts.
 */
import {MetaError} from '../protocol/errors.js'
import {parsePointInTime} from './admin/parse.js'

export type OffsetSpec =
  | {kind: 'beginning'}
  | {kind: 'end'}
  /** A byte offset; the consumer realigns to the next message boundary when it is not one. */
  | {kind: 'offset'; offset: number}
  /** -N: the last N messages of each partition. */
  | {kind: 'last'; count: number}
  /** +N: skip the first N messages of each partition. */
  | {kind: 'skip'; count: number}
  /** @<time>: the first message stored at or after this time (ms since the epoch). */
  | {kind: 'time'; ms: number}
  /** stored: the group's committed offset (the default with --group). */
  | {kind: 'stored'}

interface OffsetForm {
  pattern: RegExp
  /** What the form means, for error messages and docs. */
  describe: string
  parse(match: RegExpExecArray, nowMs: number): OffsetSpec
}

function count(text: string): number {
  const n = Number(text)
  if (!Number.isSafeInteger(n)) throw MetaError.invalidArgument(`invalid message count "${text}": expected at most ${Number.MAX_SAFE_INTEGER}`)
  return n
}

const FORMS: OffsetForm[] = [
  {pattern: /^(?:beginning|earliest|start|first)$/i, describe: 'beginning', parse: () => ({kind: 'beginning'})},
  {pattern: /^(?:end|latest|last)$/i, describe: 'end', parse: () => ({kind: 'end'})},
  {pattern: /^stored$/i, describe: 'stored', parse: () => ({kind: 'stored'})},
  {
    pattern: /^(\d+)$/,
    describe: '<byte offset>',
    parse: (m) => {
      const offset = Number(m[1])
      if (!Number.isSafeInteger(offset)) throw MetaError.invalidArgument(`invalid offset "${m[0]}": expected at most ${Number.MAX_SAFE_INTEGER}`)
      return {kind: 'offset', offset}
    },
  },
  {pattern: /^-(\d+)$/, describe: '-N (last N messages)', parse: (m) => ({kind: 'last', count: count(m[1])})},
  {pattern: /^\+(\d+)$/, describe: '+N (skip N messages)', parse: (m) => ({kind: 'skip', count: count(m[1])})},
  {
    // kcat's s@<ms since the epoch>
    pattern: /^s@(\d+)$/,
    describe: 's@<ms>',
    parse: (m) => ({kind: 'time', ms: Number(m[1])}),
  },
  {
    // One syntax for points in time across the CLI: @-1h, @2026-12-01T10:00:00Z, @<Unix ms>.
    pattern: /^@.+$/,
    describe: '@-<duration> (e.g. @-1h), @<ISO time>, @<Unix ms>',
    parse: (m, nowMs) => ({kind: 'time', ms: parsePointInTime(m[0], '-o', nowMs)!}),
  },
]

/** Parse a `-o` value. Throws INVALID_ARGUMENT naming the value and the accepted forms. */
export function parseOffsetSpec(text: string, nowMs = Date.now()): OffsetSpec {
  const value = text.trim()
  for (const form of FORMS) {
    const match = form.pattern.exec(value)
    if (match) return form.parse(match, nowMs)
  }
  throw MetaError.invalidArgument(`invalid offset "${text}": expected ${FORMS.map((f) => f.describe).join(', ')}`)
}
