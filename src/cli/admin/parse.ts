/**
 * Values of the admin commands' flags: topic scopes (`orders:0,2-3`), look-back durations
 * (`1h`, `PT1H`), date-times (`2026-12-01T10:00:00Z`, or local `2026-12-01 10:00`) and the
 * offsets CSV that `meta offset reset --export` writes and `--from-file` reads. Each parser
 * throws INVALID_ARGUMENT naming the value and what was expected.
 */
import {MetaError} from '../../protocol/errors.js'
import {validateTopicName} from '../../protocol/names.js'
import {parseDurationMs} from '../durations.js'

/** `--topic orders` (every partition) or `--topic orders:0,2-3`. */
export interface TopicSpec {
  topic: string
  /** Sorted, distinct; undefined = every partition of the topic. */
  partitions?: number[]
}

const PARTITION_LIST = /^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$/

/**
 * Parse `T`, `T:p`, `T:p,p` or `T:a-b` (mixable: `T:0,4-6`). Topic names may contain `:`, so
 * only a suffix that is a partition list is read as one (`a:b` is the topic "a:b").
 */
export function parseTopicSpec(text: string): TopicSpec {
  const value = text.trim()
  const colon = value.lastIndexOf(':')
  const suffix = colon < 0 ? '' : value.slice(colon + 1).replaceAll(' ', '')
  // Only digits, commas and dashes after the last colon make a partition list.
  if (colon < 0 || !/^[\d,-]*$/.test(suffix)) {
    validateTopicName(value)
    return {topic: value}
  }
  const topic = value.slice(0, colon)
  if (!PARTITION_LIST.test(suffix)) {
    throw MetaError.invalidArgument(`invalid topic "${text}": expected <topic> or <topic>:<partitions>, e.g. orders:0,2-3`)
  }
  validateTopicName(topic)
  const partitions = new Set<number>()
  for (const part of suffix.split(',')) {
    const [a, b = a] = part.split('-').map(Number)
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || b < a) {
      throw MetaError.invalidArgument(`invalid partition range "${part}" in "${text}": expected <first>-<last> with first <= last`)
    }
    if (b - a > 100_000) throw MetaError.invalidArgument(`invalid partition range "${part}" in "${text}": expected at most 100000 partitions`)
    for (let p = a; p <= b; p++) partitions.add(p)
  }
  return {topic, partitions: [...partitions].sort((x, y) => x - y)}
}

/**
 * Merge repeated `--topic` values: one spec per topic, in first-seen order; a topic named
 * without partitions anywhere means all of its partitions.
 */
export function mergeTopicSpecs(specs: TopicSpec[]): TopicSpec[] {
  const merged = new Map<string, TopicSpec>()
  for (const spec of specs) {
    const seen = merged.get(spec.topic)
    if (seen === undefined) merged.set(spec.topic, {...spec})
    else if (seen.partitions === undefined || spec.partitions === undefined) seen.partitions = undefined
    else seen.partitions = [...new Set([...seen.partitions, ...spec.partitions])].sort((x, y) => x - y)
  }
  return [...merged.values()]
}

const ISO_DURATION = /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i

/**
 * A positive duration: meta's short form (`90s`, `30m`, `1h`, `1d`, `1h30m`, `500ms`) or ISO 8601
 * (`PT1H`, `P1DT2H30M`, `PT0.5S`; years and months are refused: their length varies).
 */
export function parseLookbackMs(text: string, what = '--by-duration'): number {
  const value = text.trim()
  let ms: number
  if (/^P/i.test(value)) {
    const m = ISO_DURATION.exec(value)
    if (m === null || value.toUpperCase() === 'P' || /T$/i.test(value)) {
      throw MetaError.invalidArgument(
        `invalid ${what} "${text}": expected an ISO 8601 duration such as PT1H, PT30M or P1DT12H (weeks, days, hours, minutes, seconds), or 30m, 1h, 2d`,
      )
    }
    const [w, d, h, min, s] = m.slice(1).map((x) => (x === undefined ? 0 : Number(x)))
    ms = Math.round((((w * 7 + d) * 24 + h) * 60 + min) * 60_000 + s * 1000)
  } else {
    ms = parseDurationMs(value, what)
  }
  if (!(ms > 0)) throw MetaError.invalidArgument(`invalid ${what} "${text}": expected a duration greater than zero`)
  return ms
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i

/**
 * An ISO 8601 date-time in ms since the epoch. With `Z` or an offset (`+02:00`, `-0500`) it is
 * exact; without one it is a local time of this machine (the TZ environment variable, as
 * `date` reads it). Accepted: `2026-12-01T10:00:00Z`, `2026-12-01T10:00:00.250+02:00`,
 * `2026-12-01T10:00`, `2026-12-01 10:00:00`, `2026-12-01` (local midnight). A local time that
 * a daylight-saving change skips is moved forward by the gap, as JavaScript dates do.
 */
export function parseDateTimeMs(text: string, what = '--to-datetime'): number {
  const value = text.trim()
  const m = DATE_TIME.exec(value)
  const expected = `expected an ISO 8601 date-time such as 2026-12-01T10:00:00Z, 2026-12-01T10:00:00+02:00 or 2026-12-01 10:00 (local time)`
  if (m === null) throw MetaError.invalidArgument(`invalid ${what} "${text}": ${expected}`)
  const [year, month, day, hour = 0, minute = 0, second = 0] = m.slice(1, 7).map((x) => (x === undefined ? undefined : Number(x))) as number[]
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'))
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month) || hour > 23 || minute > 59 || second > 59) {
    throw MetaError.invalidArgument(`invalid ${what} "${text}": no such date or time of day`)
  }
  const zone = m[8]
  if (zone === undefined) return new Date(year, month - 1, day, hour, minute, second, millis).getTime()
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, millis)
  if (zone.toUpperCase() === 'Z') return utc
  const sign = zone.startsWith('-') ? -1 : 1
  const digits = zone.slice(1).replace(':', '')
  const offsetH = Number(digits.slice(0, 2))
  const offsetM = digits.length > 2 ? Number(digits.slice(2)) : 0
  if (offsetH > 23 || offsetM > 59) throw MetaError.invalidArgument(`invalid ${what} "${text}": no such time zone offset "${zone}"`)
  return utc - sign * (offsetH * 60 + offsetM) * 60_000
}

/** The forms of a point in time, for error messages. */
const POINT_IN_TIME_FORMS = '@-<duration> (e.g. @-1h), @<ISO 8601 time> (e.g. @2026-12-01T10:00:00Z) or @<Unix ms>'

/**
 * A point in time in the one syntax every command takes (docs/cli.md#points-in-time): `@-1h`
 * (a duration ago: 30m, 1h30m, 2d, PT1H), `@2026-12-01T10:00:00Z` (an ISO 8601 time, local
 * without a zone) or `@1764583200000` (milliseconds since the Unix epoch), in ms since the
 * epoch. Undefined when `text` does not start with `@` (each command keeps its own meaning for
 * other values); INVALID_ARGUMENT naming `what` and the value when it does but is malformed.
 */
export function parsePointInTime(text: string, what: string, nowMs = Date.now()): number | undefined {
  const value = text.trim()
  if (!value.startsWith('@')) return undefined
  const rest = value.slice(1)
  if (rest.startsWith('-')) {
    try {
      return nowMs - parseLookbackMs(rest.slice(1))
    } catch {
      throw MetaError.invalidArgument(`invalid ${what} "${text}": expected a duration after @-, e.g. @-30m, @-1h, @-2d, @-PT1H`)
    }
  }
  if (/^\d+$/.test(rest)) {
    const ms = Number(rest)
    if (!Number.isSafeInteger(ms)) throw MetaError.invalidArgument(`invalid ${what} "${text}": expected ${POINT_IN_TIME_FORMS}`)
    return ms
  }
  if (!/^\d{4}-/.test(rest)) throw MetaError.invalidArgument(`invalid ${what} "${text}": expected ${POINT_IN_TIME_FORMS}`)
  return parseDateTimeMs(rest, what)
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** One line of the offsets CSV. */
export interface OffsetLine {
  topic: string
  partition: number
  offset: number
}

const OFFSETS_CSV_HEADER = 'topic,partition,offset'

/**
 * Parse `topic,partition,offset` lines (the format `--export` writes, and Kafka's reset CSV).
 * The header line is optional; blank lines and lines starting with `#` are skipped. A topic
 * and partition may appear once. `source` names the input in errors.
 */
export function parseOffsetsCsv(text: string, source = 'the offsets file'): OffsetLine[] {
  const lines: OffsetLine[] = []
  const seen = new Set<string>()
  const rows = text.split(/\r?\n/)
  for (let i = 0; i < rows.length; i++) {
    const line = rows[i].trim()
    if (line === '' || line.startsWith('#')) continue
    const fields = line.split(',').map((f) => f.trim())
    if (lines.length === 0 && fields.join(',').toLowerCase() === OFFSETS_CSV_HEADER) continue
    const where = `line ${i + 1} of ${source}`
    if (fields.length !== 3) {
      throw MetaError.invalidArgument(`invalid ${where} "${line}": expected 3 columns ${OFFSETS_CSV_HEADER}, got ${fields.length}`)
    }
    const [topic, partitionText, offsetText] = fields
    try {
      validateTopicName(topic)
    } catch (error) {
      throw MetaError.invalidArgument(`invalid ${where}: ${(error as Error).message}`)
    }
    const partition = nonNegativeInteger(partitionText)
    const offset = nonNegativeInteger(offsetText)
    if (partition === undefined) throw MetaError.invalidArgument(`invalid partition "${partitionText}" on ${where}: expected a non-negative integer`)
    if (offset === undefined) throw MetaError.invalidArgument(`invalid offset "${offsetText}" on ${where}: expected a non-negative byte offset`)
    const key = `${topic}\0${partition}`
    if (seen.has(key)) throw MetaError.invalidArgument(`duplicate partition "${topic}:${partition}" on ${where}: each partition may appear once`)
    seen.add(key)
    lines.push({topic, partition, offset})
  }
  if (lines.length === 0) throw MetaError.invalidArgument(`${source} has no offsets: expected lines of ${OFFSETS_CSV_HEADER}`)
  return lines
}

/** The CSV `parseOffsetsCsv` reads, with a header line. */
export function formatOffsetsCsv(lines: readonly OffsetLine[]): string {
  return [OFFSETS_CSV_HEADER, ...lines.map((l) => `${l.topic},${l.partition},${l.offset}`)].join('\n') + '\n'
}

/** A decimal non-negative safe integer, or undefined. */
export function nonNegativeInteger(text: string): number | undefined {
  if (!/^\d+$/.test(text)) return undefined
  const n = Number(text)
  return Number.isSafeInteger(n) ? n : undefined
}
