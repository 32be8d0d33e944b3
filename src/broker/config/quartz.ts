/**
 * Quartz cron expressions (MetaQ's `deleteWhen`, docs/configuration.md#deletewhen-quartz-cron):
 *
 *   seconds minutes hours day-of-month month day-of-week [year]
 *
 * Quartz rules checked here before croner parses the fields: 6 or 7 fields; exactly one of
 * day-of-month and day-of-week is `?` (Quartz refuses both or neither); day-of-week numbers
 * are 1..7 with 1 = Sunday; each field uses only the characters Quartz allows in it. croner
 * (with `alternativeWeekdays`, Quartz's numbering) then checks ranges, names, `L`, `W`, `#`
 * and steps such as `0/5`. Not supported: day-of-month offsets from the end (`L-3`).
 */
import {Cron} from 'croner'

const FIELD_NAMES = ['seconds', 'minutes', 'hours', 'day-of-month', 'month', 'day-of-week', 'year']
const FIELD_CHARS = [/^[0-9,\-*/]+$/, /^[0-9,\-*/]+$/, /^[0-9,\-*/]+$/, /^[0-9,\-*/?LW]+$/i, /^[0-9A-Z,\-*/]+$/i, /^[0-9A-Z,\-*/?L#]+$/i, /^[0-9,\-*/]+$/]

const CRON_OPTIONS = {
  mode: '6-or-7-parts',
  alternativeWeekdays: true,
  sloppyRanges: true,
  paused: true,
} as const

/** Why `expression` is not a Quartz cron expression that ever fires (lowercase, no "expected"), or undefined when it is fine. */
export function quartzCronProblem(expression: string): string | undefined {
  const fields = expression.trim().split(/\s+/)
  if (expression.trim() === '' || fields.length < 6 || fields.length > 7) {
    const count = expression.trim() === '' ? 0 : fields.length
    return `6 or 7 fields needed (seconds minutes hours day-of-month month day-of-week [year]), got ${count}`
  }
  for (let i = 0; i < fields.length; i++) {
    if (!FIELD_CHARS[i].test(fields[i])) return `invalid ${FIELD_NAMES[i]} field "${fields[i]}"`
  }
  if ((fields[3] === '?') === (fields[5] === '?')) {
    return '"?" needed in exactly one of day-of-month and day-of-week'
  }
  // Quartz numbers weekdays 1..7 from Sunday; croner would quietly read 8 as Sunday.
  for (const number of fields[5].replace(/#\d+/g, '').match(/\d+/g) ?? []) {
    const day = Number(number)
    if (day < 1 || day > 7) return `invalid day-of-week "${number}": weekdays are 1..7 (1 = Sunday) or SUN..SAT`
  }
  let cron: Cron
  try {
    cron = new Cron(fields.join(' '), CRON_OPTIONS)
  } catch (error) {
    return (error instanceof Error ? error.message : String(error)).replace(/^CronPattern: /, '').replace(/\.$/, '')
  }
  if (cron.nextRun() === null) return 'it never fires'
  return undefined
}

/**
 * The next time after `from` that Quartz expression `expression` fires, in local time, or
 * undefined if it never fires again. The retention scheduler should use this rather than a
 * cron library directly: Quartz numbers weekdays from 1 = Sunday, Unix cron from 0.
 */
export function nextQuartzFireTime(expression: string, from: Date = new Date()): Date | undefined {
  const fields = expression.trim().split(/\s+/)
  return new Cron(fields.join(' '), CRON_OPTIONS).nextRun(from) ?? undefined
}

/** A running schedule ({@link scheduleQuartz}). */
export interface QuartzJob {
  stop(): void
  /** When it fires next, or undefined when never again. */
  nextRun(): Date | undefined
}

/**
 * Call `fn` every time Quartz expression `expression` fires (local time, seconds included).
 * The timer does not keep the process alive. A run that is still going when the next one is
 * due is not overlapped: that firing is skipped (croner's `protect`).
 */
export function scheduleQuartz(expression: string, fn: () => Promise<void> | void): QuartzJob {
  const fields = expression.trim().split(/\s+/)
  const cron = new Cron(fields.join(' '), {...CRON_OPTIONS, paused: false, protect: true, unref: true}, fn)
  return {
    stop: () => cron.stop(),
    nextRun: () => cron.nextRun() ?? undefined,
  }
}
