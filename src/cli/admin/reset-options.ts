/**
 * `meta offset reset` flags → what to do: a scope (topics, all topics, or the file's lines)
 * and exactly one strategy. A pure function of the flags (and the clock, for --by-duration),
 * so every combination is unit tested without a broker. Conflicts are usage errors (exit 2)
 * that name the flags: a flag that would be silently ignored is worse than an error (rpk #2126).
 */
import {MetaError} from '../../protocol/errors.js'
import {validateGroupName} from '../../protocol/names.js'
import {mergeTopicSpecs, nonNegativeInteger, parseDateTimeMs, parseLookbackMs, parsePointInTime, parseTopicSpec, type TopicSpec} from './parse.js'

type ResetScope = {kind: 'topics'; topics: TopicSpec[]} | {kind: 'all-topics'} | {kind: 'file'}

export type ResetStrategy =
  | {kind: 'earliest'}
  | {kind: 'latest'}
  | {kind: 'current'}
  /** A byte offset: clamped to the log, moved to the next record boundary. */
  | {kind: 'offset'; offset: number}
  /** Messages from the committed offset (negative: back). */
  | {kind: 'shift'; delta: number}
  /** The first message stored at or after `ms`. */
  | {kind: 'time'; ms: number}
  /** Offsets from a CSV file (`-` = stdin); read by the command. */
  | {kind: 'file'; path: string}

export interface ResetRequest {
  group: string
  scope: ResetScope
  strategy: ResetStrategy
  /** The strategy as the user wrote it, for output: `--shift-by -5`. */
  strategyText: string
  execute: boolean
  export: boolean
}

/** The flags of `meta offset reset` (as oclif parses them). */
export interface ResetFlags {
  group: string
  topic?: string[]
  'all-topics'?: boolean
  'to-earliest'?: boolean
  'to-latest'?: boolean
  'to-current'?: boolean
  'to-offset'?: string
  'shift-by'?: string
  'to-datetime'?: string
  'by-duration'?: string
  'from-file'?: string
  execute?: boolean
  export?: boolean
  json?: boolean
}

export const STRATEGY_FLAGS = [
  'to-earliest',
  'to-latest',
  'to-current',
  'to-offset',
  'shift-by',
  'to-datetime',
  'by-duration',
  'from-file',
] as const satisfies ReadonlyArray<keyof ResetFlags>

/** A usage error: rendered as `error [USAGE]` with exit status 2 by the base command. */
export class UsageError extends Error {
  readonly oclif = {exit: 2}
}

const quote = (flag: string) => `'--${flag}'`

/** Resolve and check the flags. Throws UsageError (exit 2) naming the offending flags and values. */
export function resolveResetFlags(flags: ResetFlags, nowMs = Date.now()): ResetRequest {
  const given = STRATEGY_FLAGS.filter((f) => flags[f] !== undefined && flags[f] !== false)
  if (given.length === 0) {
    throw new UsageError(`a reset strategy is required: one of ${STRATEGY_FLAGS.map(quote).join(', ')}`)
  }
  if (given.length > 1) {
    throw new UsageError(`exactly one reset strategy is allowed, got ${given.map(quote).join(' and ')}`)
  }
  const [flag] = given
  if (flags.json && flags.export) throw new UsageError(`'--json' and '--export' are mutually exclusive: choose one output format`)
  const topics = flags.topic ?? []
  const all = flags['all-topics'] === true
  let scope: ResetScope
  if (flag === 'from-file') {
    const extra = [topics.length > 0 ? '--topic' : '', all ? '--all-topics' : ''].filter(Boolean)
    if (extra.length > 0) {
      throw new UsageError(`'--from-file' takes its topics and partitions from the file: drop ${extra.map((f) => `'${f}'`).join(' and ')}`)
    }
    scope = {kind: 'file'}
  } else if (topics.length > 0 && all) {
    throw new UsageError(`'--topic' and '--all-topics' are mutually exclusive`)
  } else if (topics.length > 0) {
    scope = {kind: 'topics', topics: mergeTopicSpecs(topics.map((t) => usage(() => parseTopicSpec(t))))}
  } else if (all) {
    scope = {kind: 'all-topics'}
  } else {
    throw new UsageError(`a scope is required: '--topic <topic>[:<partitions>]' (repeatable) or '--all-topics'`)
  }
  usage(() => validateGroupName(flags.group))
  const value = flags[flag]
  return {
    group: flags.group,
    scope,
    strategy: usage(() => strategyOf(flag, value, nowMs)),
    strategyText: typeof value === 'string' ? `--${flag} ${value}` : `--${flag}`,
    execute: flags.execute === true,
    export: flags.export === true,
  }
}

function strategyOf(flag: (typeof STRATEGY_FLAGS)[number], value: string | boolean | undefined, nowMs: number): ResetStrategy {
  const text = String(value)
  switch (flag) {
    case 'to-earliest':
      return {kind: 'earliest'}
    case 'to-latest':
      return {kind: 'latest'}
    case 'to-current':
      return {kind: 'current'}
    case 'to-offset': {
      const offset = nonNegativeInteger(text.trim())
      if (offset === undefined) throw MetaError.invalidArgument(`invalid --to-offset "${text}": expected a byte offset (a non-negative integer)`)
      return {kind: 'offset', offset}
    }
    case 'shift-by': {
      const m = /^([+-]?)(\d+)$/.exec(text.trim())
      const n = m === null ? undefined : nonNegativeInteger(m[2])
      if (m === null || n === undefined) {
        throw MetaError.invalidArgument(`invalid --shift-by "${text}": expected a number of messages, e.g. -100 (back) or 100 (forward)`)
      }
      return {kind: 'shift', delta: m[1] === '-' ? -n : n}
    }
    // Both also take the one point-in-time syntax of the CLI (@-1h, @<ISO time>, @<Unix ms>).
    case 'to-datetime':
      return {kind: 'time', ms: parsePointInTime(text, '--to-datetime', nowMs) ?? parseDateTimeMs(text)}
    case 'by-duration':
      return {kind: 'time', ms: parsePointInTime(text, '--by-duration', nowMs) ?? nowMs - parseLookbackMs(text)}
    case 'from-file':
      if (text.trim() === '') throw MetaError.invalidArgument(`invalid --from-file "": expected a path, or - for stdin`)
      return {kind: 'file', path: text}
  }
}

/** Run a value parser; its INVALID_ARGUMENT becomes a usage error (exit 2). */
export function usage<T>(parse: () => T): T {
  try {
    return parse()
  } catch (error) {
    if (error instanceof MetaError && error.code === 'INVALID_ARGUMENT') throw new UsageError(error.message)
    throw error
  }
}
