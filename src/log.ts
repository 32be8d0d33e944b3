/**
 * The one logger: pino underneath, namespaced per module, structured fields, always to
 * stderr (stdout is for data). Usage:
 *
 *   const log = rootLogger.child('storage')
 *   log.warn('truncated torn tail', {topic, partition, offset})
 *
 * Levels: error, warn, info, debug, trace (trace = per-frame protocol dumps). The level comes
 * from `--log-level` or META_LOG_LEVEL (default info); META_LOG_FORMAT=json (or
 * `--log-format json`) prints one JSON object per line instead of the human format.
 */
import {pino, type Logger as PinoLogger, type Level} from 'pino'

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]
export type LogFields = Record<string, unknown>

export interface Logger {
  error(message: string, fields?: LogFields): void
  warn(message: string, fields?: LogFields): void
  info(message: string, fields?: LogFields): void
  debug(message: string, fields?: LogFields): void
  trace(message: string, fields?: LogFields): void
  isLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean
  child(namespace: string, fields?: LogFields): Logger
}

export interface LoggerOptions {
  level?: LogLevel
  format?: 'pretty' | 'json'
  /** Where lines go; default stderr (fd 2). Tests pass a stream to capture. */
  destination?: NodeJS.WritableStream | number
}

class PinoBackedLogger implements Logger {
  constructor(private readonly p: PinoLogger) {}
  error(message: string, fields?: LogFields): void {
    this.p.error(fields ?? {}, message)
  }
  warn(message: string, fields?: LogFields): void {
    this.p.warn(fields ?? {}, message)
  }
  info(message: string, fields?: LogFields): void {
    this.p.info(fields ?? {}, message)
  }
  debug(message: string, fields?: LogFields): void {
    this.p.debug(fields ?? {}, message)
  }
  trace(message: string, fields?: LogFields): void {
    this.p.trace(fields ?? {}, message)
  }
  isLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean {
    return this.p.isLevelEnabled(level as Level)
  }
  child(namespace: string, fields?: LogFields): Logger {
    const parent = (this.p.bindings().ns as string | undefined) ?? ''
    return new PinoBackedLogger(this.p.child({ns: parent === '' ? namespace : `${parent}.${namespace}`, ...fields}))
  }
}

const LEVEL_LABELS: Record<number, string> = {10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL'}

/** A compact human line: `12:00:01.123 INFO  broker: listening {"port":8123}`. */
function prettyStream(destination: NodeJS.WritableStream | number): NodeJS.WritableStream {
  const target = typeof destination === 'number' ? pino.destination({dest: destination, sync: true}) : destination
  return {
    write(line: string): boolean {
      let entry: Record<string, unknown>
      try {
        entry = JSON.parse(line) as Record<string, unknown>
      } catch {
        // Not JSON (should not happen with pino): pass the line through unchanged.
        return target.write(line)
      }
      const {level, time, ns, msg, pid: _pid, hostname: _host, ...rest} = entry
      const stamp = new Date(time as number).toISOString().slice(11, 23)
      const label = (LEVEL_LABELS[level as number] ?? String(level)).padEnd(5)
      const fields = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : ''
      return target.write(`${stamp} ${label} ${ns ? `${ns}: ` : ''}${msg}${fields}\n`)
    },
  } as unknown as NodeJS.WritableStream
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? envLevel() ?? 'info'
  const format = options.format ?? (process.env.META_LOG_FORMAT === 'json' ? 'json' : 'pretty')
  const destination = options.destination ?? 2
  const stream =
    format === 'json'
      ? typeof destination === 'number'
        ? pino.destination({dest: destination, sync: true})
        : destination
      : prettyStream(destination)
  return new PinoBackedLogger(pino({level, base: undefined}, stream as pino.DestinationStream))
}

function envLevel(): LogLevel | undefined {
  const value = process.env.META_LOG_LEVEL
  return value !== undefined && (LOG_LEVELS as readonly string[]).includes(value) ? (value as LogLevel) : undefined
}

/** A logger that drops everything (library default when the caller passes none). */
export const silentLogger: Logger = createLogger({level: 'silent', format: 'json'})
