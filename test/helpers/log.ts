/**
 * A real logger (src/log.ts, JSON format) whose lines are kept in memory, so a test can
 * assert what was logged: `entries`, or `find(level, message)`.
 */
import {createLogger, type Logger, type LogLevel} from '../../src/log.js'

/** One parsed log line: pino's fields plus the structured fields of the call. */
export interface LogEntry {
  level: number
  msg: string
  ns?: string
  [field: string]: unknown
}

const LEVELS: Record<string, number> = {trace: 10, debug: 20, info: 30, warn: 40, error: 50}

export interface CapturedLog {
  logger: Logger
  entries: LogEntry[]
  /** Entries at `level` whose message matches. */
  find(level: 'trace' | 'debug' | 'info' | 'warn' | 'error', message: string | RegExp): LogEntry[]
}

export function captureLogger(level: LogLevel = 'debug'): CapturedLog {
  const entries: LogEntry[] = []
  // pino writes each line with a synchronous write(): a plain object keeps the lines in order
  // and visible at once (a stream.Writable may defer them).
  const destination = {
    write(chunk: string): boolean {
      for (const line of chunk.split('\n')) {
        if (line.trim() !== '') entries.push(JSON.parse(line) as LogEntry)
      }
      return true
    },
  } as unknown as NodeJS.WritableStream
  const logger = createLogger({level, format: 'json', destination})
  return {
    logger,
    entries,
    find(at, message) {
      return entries.filter((e) => e.level === LEVELS[at] && (typeof message === 'string' ? e.msg === message : message.test(e.msg)))
    },
  }
}
