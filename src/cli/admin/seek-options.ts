/**
 * `meta group seek` (rpk's words: `--to start|end|<time>`, `--to-file F`) and `meta offset
 * reset` (kafka-consumer-groups' words: `--to-earliest`, `--to-datetime`, …) are two spellings
 * of one operation: both commands take every flag of both, and this translates the rpk
 * spellings into a reset request (same plan, dry run, --execute, confirmation and refusals).
 *
 *   --to start | earliest        → --to-earliest
 *   --to end | latest            → --to-latest
 *   --to @-1h | @<ISO> | @<ms>   → the one point-in-time syntax (docs/cli.md#points-in-time)
 *   --to <unix time>             → --to-datetime (10 digits: seconds; 13: milliseconds)
 *   --to <ISO 8601 time>         → --to-datetime
 *   --to-file F                  → --from-file F
 *
 * The scope is the one difference, as in the tools they come from: without --topic,
 * `group seek` means every topic the group has offsets for (rpk), `offset reset` asks for
 * --all-topics (kafka-consumer-groups).
 */
import {MetaError} from '../../protocol/errors.js'
import {parsePointInTime} from './parse.js'
import {resolveResetFlags, STRATEGY_FLAGS, usage, UsageError, type ResetFlags, type ResetRequest} from './reset-options.js'

interface SeekFlags extends ResetFlags {
  to?: string
  'to-file'?: string
}

const SEEK_FLAGS = ['to', 'to-file'] as const

/** Resolve the flags of `group seek` (scope: all topics by default) or `offset reset` (scope required). */
export function resolveSeekFlags(flags: SeekFlags, nowMs = Date.now(), command: 'seek' | 'reset' = 'seek'): ResetRequest {
  const seek = SEEK_FLAGS.filter((f) => flags[f] !== undefined)
  const reset = STRATEGY_FLAGS.filter((f) => flags[f] !== undefined && flags[f] !== false)
  const defaultScope =
    command === 'seek' && (flags.topic ?? []).length === 0 && flags['all-topics'] !== true && flags['from-file'] === undefined && flags['to-file'] === undefined
  const scoped: SeekFlags = defaultScope ? {...flags, 'all-topics': true} : flags
  if (seek.length === 0) {
    if (reset.length === 0 && command === 'seek') {
      throw new UsageError(`a strategy is required: '--to start|end|@<time>', '--to-file <file>' or one of ${STRATEGY_FLAGS.map((f) => `'--${f}'`).join(', ')}`)
    }
    return resolveResetFlags(scoped, nowMs)
  }
  if (seek.length + reset.length > 1) {
    throw new UsageError(`exactly one strategy is allowed, got ${[...seek, ...reset].map((f) => `'--${f}'`).join(' and ')}`)
  }
  const common = {group: flags.group, execute: flags.execute, export: flags.export, json: flags.json}
  if (flags['to-file'] !== undefined) {
    if (flags.topic !== undefined && flags.topic.length > 0) throw new UsageError(`'--to-file' takes its topics and partitions from the file: drop '--topic'`)
    if (flags['all-topics'] === true) throw new UsageError(`'--to-file' takes its topics and partitions from the file: drop '--all-topics'`)
    return {...resolveResetFlags({...common, 'from-file': flags['to-file']}, nowMs), strategyText: `--to-file ${flags['to-file']}`}
  }
  const scope = {topic: scoped.topic, 'all-topics': scoped['all-topics']}
  const to = flags.to!.trim()
  const text = `--to ${to}`
  if (/^(start|earliest|beginning)$/i.test(to)) return {...resolveResetFlags({...common, ...scope, 'to-earliest': true}, nowMs), strategyText: text}
  if (/^(end|latest)$/i.test(to)) return {...resolveResetFlags({...common, ...scope, 'to-latest': true}, nowMs), strategyText: text}
  const at = usage(() => parsePointInTime(to, '--to', nowMs))
  if (at !== undefined) {
    const request = resolveResetFlags({...common, ...scope, 'to-datetime': new Date(at).toISOString()}, nowMs)
    return {...request, strategy: {kind: 'time', ms: at}, strategyText: text}
  }
  if (/^-\d/.test(to)) throw new UsageError(`invalid --to "${flags.to}": a time ago is written @${to}, e.g. --to @-1h`)
  let iso = to
  if (/^\d+$/.test(to)) {
    if (to.length !== 10 && to.length !== 13) {
      throw new UsageError(`invalid --to "${flags.to}": a Unix time has 10 digits (seconds) or 13 (milliseconds); byte offsets are set with '--to-offset'`)
    }
    iso = new Date(Number(to) * (to.length === 10 ? 1000 : 1)).toISOString()
  }
  try {
    return {...resolveResetFlags({...common, ...scope, 'to-datetime': iso}, nowMs), strategyText: text}
  } catch (error) {
    if (error instanceof UsageError || error instanceof MetaError) {
      throw new UsageError(
        `invalid --to "${flags.to}": expected start, end, @-<duration> (e.g. @-1h), @<ISO 8601 time>, @<Unix ms>, a Unix time (seconds or milliseconds) or an ISO 8601 time such as 2026-12-01T10:00:00Z`,
      )
    }
    throw error
  }
}
