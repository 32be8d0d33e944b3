/**
 * `meta group seek` speaks rpk's words (`rpk group seek G --to start|end|<timestamp>
 * [--topics …] [--to-file F]`) and does what `meta offset reset` does: this translates its
 * flags into a reset request (same plan, dry run, --execute, confirmation and refusals).
 *
 *   --to start | earliest        → --to-earliest
 *   --to end | latest            → --to-latest
 *   --to <unix time>             → --to-datetime (10 digits: seconds; 13: milliseconds)
 *   --to <ISO 8601 time>         → --to-datetime
 *   --to-file F                  → --from-file F
 *   no --topic                   → --all-topics (the topics the group has offsets for)
 */
import {MetaError} from '../../protocol/errors.js'
import {resolveResetFlags, UsageError, type ResetRequest} from './reset-options.js'

interface SeekFlags {
  group: string
  to?: string
  'to-file'?: string
  topic?: string[]
  execute?: boolean
  export?: boolean
  json?: boolean
}

export function resolveSeekFlags(flags: SeekFlags, nowMs = Date.now()): ResetRequest {
  if ((flags.to === undefined) === (flags['to-file'] === undefined)) {
    throw new UsageError(`exactly one of '--to start|end|<time>' and '--to-file <file>' is required`)
  }
  const common = {group: flags.group, execute: flags.execute, export: flags.export, json: flags.json}
  const scope = flags.topic !== undefined && flags.topic.length > 0 ? {topic: flags.topic} : {'all-topics': true}
  if (flags['to-file'] !== undefined) {
    if (flags.topic !== undefined && flags.topic.length > 0) throw new UsageError(`'--to-file' takes its topics and partitions from the file: drop '--topic'`)
    return {...resolveResetFlags({...common, 'from-file': flags['to-file']}, nowMs), strategyText: `--to-file ${flags['to-file']}`}
  }
  const to = flags.to!.trim()
  const text = `--to ${to}`
  if (/^(start|earliest|beginning)$/i.test(to)) return {...resolveResetFlags({...common, ...scope, 'to-earliest': true}, nowMs), strategyText: text}
  if (/^(end|latest)$/i.test(to)) return {...resolveResetFlags({...common, ...scope, 'to-latest': true}, nowMs), strategyText: text}
  let iso = to
  if (/^\d+$/.test(to)) {
    if (to.length !== 10 && to.length !== 13) {
      throw new UsageError(`invalid --to "${flags.to}": a Unix time has 10 digits (seconds) or 13 (milliseconds); byte offsets are set with 'meta offset reset --to-offset'`)
    }
    iso = new Date(Number(to) * (to.length === 10 ? 1000 : 1)).toISOString()
  }
  try {
    return {...resolveResetFlags({...common, ...scope, 'to-datetime': iso}, nowMs), strategyText: text}
  } catch (error) {
    if (error instanceof UsageError || error instanceof MetaError) {
      throw new UsageError(`invalid --to "${flags.to}": expected start, end, a Unix time (seconds or milliseconds) or an ISO 8601 time such as 2026-12-01T10:00:00Z`)
    }
    throw error
  }
}
