/**
 * The one logger: namespaced per module, structured fields, always to stderr (stdout is for
 * data). Usage:
 *
 *   const log = rootLogger.child('storage')
 *   log.warn('truncated torn tail', {topic, partition, offset})
 *
 * Levels: error, warn, info, debug, trace (trace = per-frame protocol dumps). The level comes
 * from `--log-level` or META_LOG_LEVEL (default info); META_LOG_FORMAT=json (or
 * `--log-format json`) prints one JSON object per line instead of the human format.
 *
 * Lines are written synchronously, one write each, as pino's sync destination does, and in
 * pino's JSON shape (`{"level":30,"time":…,"ns":"broker","port":8123,"msg":"…"}`, numeric
 * levels), which log tooling reads. It is written here rather than with pino because a CLI
 * that starts in a pipeline cannot spend the ~20–40 ms pino and its worker-thread transport
 * take to load (docs/benchmarks.md#start-up); nothing is logged per message above trace, so
 * pino's throughput is not needed.
 */
import {writeSync} from 'node:fs'

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
type LogFields = Record<string, unknown>

export interface Logger {
  error(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  debug(message: string, fields?: LogFields): void
  trace(message: string, fields?: LogFields): void
  isLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean
  child(namespace: string, fields?: LogFields): Logger
  /**
   * This logger, with the lines written through it counted under `kind` (shared by every
   * logger of the family: the same kind from two connections is one count): the first
   * `burstLines` (default {@link LOG_BURST_LINES}) in an interval of `intervalMs` (default
   * {@link LOG_LIMIT_INTERVAL_MS}) are written, the rest dropped and, once the interval ends,
   * reported in one line carrying `dropped` (their number) and the last one's fields. For
   * lines a client or a fault can repeat at will (bad requests, EMFILE, failed writes).
   */
  limited(kind: string, options?: LogLimitOptions): Logger
}

/** Lines of one kind written per interval before the rest are only counted. */
export const LOG_BURST_LINES = 5
/** The interval of a limited kind of line, in ms. */
const LOG_LIMIT_INTERVAL_MS = 60_000

interface LogLimitOptions {
  /** Lines written per interval, 1..1000 (default {@link LOG_BURST_LINES}). */
  burstLines?: number
  /** The interval in ms, 10..3,600,000 (default {@link LOG_LIMIT_INTERVAL_MS}). */
  intervalMs?: number
}

interface LoggerOptions {
  level?: LogLevel
  format?: 'pretty' | 'json'
  /** Where lines go; default stderr (fd 2). Tests pass a stream to capture. */
  destination?: NodeJS.WritableStream | number
}

/** pino's numeric levels (the JSON format carries them). */
const LEVEL_VALUES = {trace: 10, debug: 20, info: 30, warn: 40, error: 50, silent: Number.POSITIVE_INFINITY} as const
const LEVEL_LABELS: Record<number, string> = {10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR'}

type Write = (line: string) => void

/** The count of one kind of limited line in the current interval. */
class LogLimit {
  private windowStartMs = 0
  private lines = 0
  private dropped = 0
  private last: {emit: (message: string, fields: LogFields) => void; message: string; fields: LogFields | undefined} | undefined
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly burstLines: number,
    private readonly intervalMs: number,
  ) {}

  /** Whether to write this line now; a dropped one is remembered for the report. */
  admit(emit: (message: string, fields: LogFields) => void, message: string, fields: LogFields | undefined): boolean {
    const now = Date.now()
    if (now - this.windowStartMs >= this.intervalMs) {
      this.report()
      this.windowStartMs = now
      this.lines = 0
    }
    if (this.lines < this.burstLines) {
      this.lines += 1
      return true
    }
    this.dropped += 1
    this.last = {emit, message, fields}
    // unref: a pending report never keeps the process alive.
    this.timer ??= setTimeout(() => this.report(), this.windowStartMs + this.intervalMs - now).unref()
    return false
  }

  private report(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    const last = this.last
    if (last === undefined || this.dropped === 0) return
    const dropped = this.dropped
    this.dropped = 0
    this.last = undefined
    last.emit(`${last.message} (${dropped} more not logged in ${this.intervalMs / 1000} s)`, {...last.fields, dropped})
  }
}

/** The limits of a logger family, by kind. */
type LogLimits = Map<string, LogLimit>

const clamp = (value: number | undefined, min: number, max: number, fallback: number): number =>
  value === undefined || !Number.isFinite(value) ? fallback : Math.min(max, Math.max(min, Math.floor(value)))

class LineLogger implements Logger {
  constructor(
    private readonly threshold: number,
    private readonly json: boolean,
    private readonly write: Write,
    private readonly ns: string,
    private readonly bindings: LogFields,
    private readonly limits: LogLimits,
    private readonly limit?: LogLimit,
  ) {}

  error(message: string, fields?: LogFields): void {
    this.log(50, message, fields)
  }
  warn(message: string, fields?: LogFields): void {
    this.log(40, message, fields)
  }
  info(message: string, fields?: LogFields): void {
    this.log(30, message, fields)
  }
  debug(message: string, fields?: LogFields): void {
    this.log(20, message, fields)
  }
  trace(message: string, fields?: LogFields): void {
    this.log(10, message, fields)
  }
  isLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean {
    return LEVEL_VALUES[level] >= this.threshold
  }
  child(namespace: string, fields?: LogFields): Logger {
    const ns = this.ns === '' ? namespace : `${this.ns}.${namespace}`
    return new LineLogger(this.threshold, this.json, this.write, ns, {...this.bindings, ...fields}, this.limits, this.limit)
  }
  limited(kind: string, options: LogLimitOptions = {}): Logger {
    let limit = this.limits.get(kind)
    if (limit === undefined) {
      limit = new LogLimit(clamp(options.burstLines, 1, 1000, LOG_BURST_LINES), clamp(options.intervalMs, 10, 3_600_000, LOG_LIMIT_INTERVAL_MS))
      this.limits.set(kind, limit)
    }
    return new LineLogger(this.threshold, this.json, this.write, this.ns, this.bindings, this.limits, limit)
  }

  private log(level: number, message: string, fields: LogFields | undefined): void {
    if (level < this.threshold) return
    if (this.limit !== undefined && !this.limit.admit((m, f) => this.line(level, m, f), message, fields)) return
    this.line(level, message, fields)
  }

  private line(level: number, message: string, fields: LogFields | undefined): void {
    const time = Date.now()
    const rest = {...this.bindings, ...fields}
    if (this.json) {
      this.write(`${stringify({level, time, ...(this.ns === '' ? {} : {ns: this.ns}), ...rest, msg: message})}\n`)
      return
    }
    // A compact human line: `12:00:01.123 INFO  broker: listening {"port":8123}`.
    const stamp = new Date(time).toISOString().slice(11, 23)
    const extra = Object.keys(rest).length > 0 ? ` ${stringify(rest)}` : ''
    this.write(`${stamp} ${LEVEL_LABELS[level].padEnd(5)} ${this.ns === '' ? '' : `${this.ns}: `}${message.replace(UNSAFE, unicodeEscape)}${extra}\n`)
  }
}

/**
 * Characters a terminal or an editor would act on or hide that JSON leaves as they are: C1
 * controls, bidirectional overrides and marks (U+202E turns the rest of a line around), line
 * and paragraph separators. (JSON escapes C0 controls itself.)
 */
const UNSAFE = /[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g

/** `text` with {@link UNSAFE} characters and C0 controls written as \uXXXX escapes. */
export function escapeUnsafe(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, unicodeEscape).replace(UNSAFE, unicodeEscape)
}

const unicodeEscape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`

/** A name as an error message or a log line quotes it: JSON-quoted, escaped, cut to `max` characters. */
export function quoteName(name: string, max = 64): string {
  return escapeUnsafe(JSON.stringify(name.length > max ? `${name.slice(0, max)}…` : name))
}

/** JSON of log fields: Errors as {message, code}, bigints as strings, cycles as "[Circular]"; {@link UNSAFE} characters escaped. */
function stringify(value: unknown): string {
  return jsonOf(value).replace(UNSAFE, unicodeEscape)
}

function jsonOf(value: unknown): string {
  const seen = new WeakSet<object>()
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString()
    if (v instanceof Error) return {message: v.message, ...((v as {code?: unknown}).code === undefined ? {} : {code: (v as {code?: unknown}).code})}
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[Circular]'
      seen.add(v)
    }
    return v
  })
}

function writerOf(destination: NodeJS.WritableStream | number): Write {
  // process.stderr writes synchronously to files, ttys and pipes on POSIX (and handles a pipe
  // that is momentarily full); a closed stderr is not worth failing the program for.
  if (destination === 2) return (line) => void process.stderr.write(line)
  if (typeof destination !== 'number') return (line) => void destination.write(line)
  return (line) => {
    try {
      writeSync(destination, line)
    } catch {
      // The file descriptor is gone: drop the line rather than fail the program.
    }
  }
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? envLevel() ?? 'info'
  const format = options.format ?? (process.env.META_LOG_FORMAT === 'json' ? 'json' : 'pretty')
  return new LineLogger(LEVEL_VALUES[level], format === 'json', writerOf(options.destination ?? 2), '', {}, new Map())
}

function envLevel(): LogLevel | undefined {
  const value = process.env.META_LOG_LEVEL
  return value !== undefined && (LOG_LEVELS as readonly string[]).includes(value) ? (value as LogLevel) : undefined
}

/** A logger that drops everything (library default when the caller passes none). */
export const silentLogger: Logger = createLogger({level: 'silent', format: 'json'})
