/**
 * `meta tail -o` start positions. Each form is one entry of FORMS: a pattern and what it
 * means, so the forms that need the side index or consumer groups (`-N`, `+N`, `@<time>`,
 * `stored`) are added as entries, not as new branches in the command.
 *
 * Offsets are byte positions in the partition log (MetaQ's meaning), never message counts.
 */
import type {StartPosition} from '../client/index.js'
import {MetaError} from '../protocol/errors.js'

export type OffsetSpec =
  | {kind: 'beginning'}
  | {kind: 'end'}
  /** A byte offset; the consumer realigns to the next message boundary when it is not one. */
  | {kind: 'offset'; offset: number}

interface OffsetForm {
  pattern: RegExp
  /** What the form means, for error messages and docs. */
  describe: string
  parse(match: RegExpExecArray): OffsetSpec
}

const FORMS: OffsetForm[] = [
  {pattern: /^(?:beginning|earliest|start|first)$/i, describe: 'beginning', parse: () => ({kind: 'beginning'})},
  {pattern: /^(?:end|latest|last)$/i, describe: 'end', parse: () => ({kind: 'end'})},
  {
    pattern: /^(\d+)$/,
    describe: '<byte offset>',
    parse: (m) => {
      const offset = Number(m[1])
      if (!Number.isSafeInteger(offset)) throw MetaError.invalidArgument(`invalid offset "${m[0]}": expected at most ${Number.MAX_SAFE_INTEGER}`)
      return {kind: 'offset', offset}
    },
  },
]

/** Forms users know from kcat/rpk that meta will support once their prerequisite lands. */
const PLANNED: Array<{pattern: RegExp; reason: string}> = [
  {pattern: /^-\d+$/, reason: 'relative offsets (-N: the last N messages) need the side index'},
  {pattern: /^\+\d+$/, reason: 'relative offsets (+N: skip N messages) need the side index'},
  {pattern: /^[se]?@/, reason: 'time offsets (@<time>) need the side index'},
  {pattern: /^stored$/i, reason: 'the stored offset needs a consumer group (--group)'},
]

/** Parse a `-o` value. Throws INVALID_ARGUMENT naming the value and the accepted forms. */
export function parseOffsetSpec(text: string): OffsetSpec {
  const value = text.trim()
  for (const form of FORMS) {
    const match = form.pattern.exec(value)
    if (match) return form.parse(match)
  }
  const planned = PLANNED.find((p) => p.pattern.test(value))
  if (planned) throw MetaError.invalidArgument(`offset "${text}" is not supported yet: ${planned.reason}`)
  throw MetaError.invalidArgument(`invalid offset "${text}": expected ${FORMS.map((f) => f.describe).join(', ')}`)
}

/** The consumer's start position for a spec. */
export function toStartPosition(spec: OffsetSpec): StartPosition {
  switch (spec.kind) {
    case 'beginning':
      return 'earliest'
    case 'end':
      return 'latest'
    case 'offset':
      return spec.offset
  }
}
