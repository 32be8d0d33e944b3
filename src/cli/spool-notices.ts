/**
 * What `meta send` and `meta spool send` say on stderr about their spools: outages, a disk
 * that cannot be written, damage found and skipped, spools that wait for another destination.
 * Each is said once, as the SpoolingProducer reports it (client/spool/spooling-producer.ts events).
 */
import {describeDestination, destinationFlags, type DamagedRange, type SpoolDestination, type SpoolOpened} from '../client/spool/index.js'
import {inspectSpool, pendingSize} from '../client/spool/recover.js'
import {describeSystemError} from '../client/spool/spool.js'
import type {SpoolingProducer} from '../client/spool/spooling-producer.js'
import type {MetaError} from '../protocol/errors.js'
import {formatBytes, formatCount} from './format.js'

/** Damaged ranges named in full; the rest are counted. */
const RANGES_SHOWN = 5
/** A spool left for another destination is counted in messages up to this size (read whole), else given in bytes. */
const COUNTED_SPOOL_BYTES = 16 * 1024 * 1024

interface SpoolNoticeOptions {
  notify: (line: string) => void
  /** Where this process sends (for the hint of a spool that waits for another destination). */
  destination?: SpoolDestination
  /** ` --spool DIR` when the spool directory is not the default one. */
  spoolFlag: string
  maxOutageMs?: number
  /** Say which spools wait for another destination (default true). */
  elsewhere?: boolean
}

/** Say what the spooler reports about its spools. */
export function noticeSpoolEvents(spooler: SpoolingProducer, options: SpoolNoticeOptions): void {
  const {notify} = options
  spooler.on('outage', (topic: string, error: MetaError) => {
    notify(`% broker not taking messages of topic ${topic} (${error.message}): keeping them in the spool ${spooler.spoolDirOf(topic) ?? ''} until it does`)
  })
  spooler.on('recovered', (topic: string, backlog: number) => {
    notify(`% broker is back: sending the spool of topic ${topic} (${messages(backlog)})`)
  })
  spooler.on('stalled', (topic: string, dir: string, error: NodeJS.ErrnoException, held: {records: number; bytes: number}, pending: number) => {
    const limit = options.maxOutageMs === undefined ? '' : `, or gives up after --max-outage ${options.maxOutageMs / 1000} s`
    notify(
      `% cannot write the spool ${dir} of topic ${topic}: ${describeSystemError(error)}; input paused, ${messages(pending - held.records)} kept in the spool and ${messages(held.records)} (${formatBytes(held.bytes)}) held in memory until it can be written${limit}`,
    )
  })
  spooler.on('writable', (topic: string) => notify(`% the spool of topic ${topic} can be written again: input resumed`))
  spooler.on('lost', (topic: string, dir: string, count: number, error: NodeJS.ErrnoException) => {
    notify(`% ${messages(count)} of topic ${topic} could not be written to the spool ${dir} (${describeSystemError(error)}) and are not kept`)
  })
  spooler.on('opened', (topic: string, dir: string, opened: SpoolOpened) => {
    for (const line of openedLines(topic, dir, opened, options.destination)) notify(line)
  })
  spooler.on('elsewhere', (topic: string, dir: string, destination: SpoolDestination | undefined) => {
    if (options.elsewhere !== false) notify(elsewhereLine(topic, dir, destination, options))
  })
  spooler.on('unavailable', (topic: string, dir: string, error: Error) => {
    notify(`% the spool ${dir} of topic ${topic} cannot be opened: ${error.message}; it is left as it is`)
  })
}

/** What opening a spool found: damage skipped, a torn tail cut, a destination adopted or replaced. */
function openedLines(topic: string, dir: string, opened: SpoolOpened, destination: SpoolDestination | undefined): string[] {
  const lines: string[] = []
  if (opened.damaged.length > 0) {
    const bytes = opened.damaged.reduce((n, d) => n + damagedBytes(d), 0)
    const shown = opened.damaged.slice(0, RANGES_SHOWN).map(describeRange)
    const more = opened.damaged.length > RANGES_SHOWN ? `, and ${opened.damaged.length - RANGES_SHOWN} more` : ''
    lines.push(
      `% the spool ${dir} of topic ${topic} is damaged: skipped ${ranges(opened.damaged.length)} (${formatBytes(bytes)}): ${shown.join('; ')}${more}; every whole record is sent; the damaged bytes are kept in ${dir}/quarantine`,
    )
  }
  if (opened.tornBytes > 0)
    lines.push(`% the spool ${dir} of topic ${topic} ended in an incomplete record (${formatBytes(opened.tornBytes)}, a write cut short): cut off`)
  if (opened.positionDamaged) lines.push(`% the position file of the spool ${dir} is damaged: its records are sent from its start (some may be sent twice)`)
  if (opened.adopted && destination !== undefined) {
    lines.push(
      `% the spool ${dir} of topic ${topic} records no destination (an older meta wrote it): it is for ${describeDestination(destination)} from now on`,
    )
  }
  if (opened.retargetedFrom !== undefined && destination !== undefined) {
    lines.push(
      `% the spool ${dir} of topic ${topic} was for ${describeDestination(opened.retargetedFrom)}: sent to ${describeDestination(destination)} (--retarget)`,
    )
  }
  return lines
}

/** `bytes 1,234-1,456 of 00000000000000000000.spool (checksum mismatch)`. */
function describeRange(d: DamagedRange): string {
  if (d.to <= d.from) return `positions ${formatCount(d.position)}-${formatCount(d.end)} before ${d.segment} (${d.reason})`
  return `bytes ${formatCount(d.from)}-${formatCount(d.to)} of ${d.segment} (${d.reason})`
}

export function damagedBytes(d: DamagedRange): number {
  return Math.max(d.to - d.from, d.end - d.position)
}

/** One line about a spool left for another destination: which one, and the two ways to send it. */
export function elsewhereLine(
  topic: string,
  dir: string,
  destination: SpoolDestination | undefined,
  options: {destination?: SpoolDestination; spoolFlag: string},
): string {
  let count = ''
  try {
    const size = pendingSize(dir)
    count = ` (${size <= COUNTED_SPOOL_BYTES ? messages(inspectSpool(dir).records) : formatBytes(size)})`
  } catch {} // unreadable: said without a count
  const here = options.destination === undefined ? '' : ` ${destinationFlags(options.destination)}`
  const retarget = `'meta spool send ${topic}${options.spoolFlag}${here} --retarget'`
  if (destination === undefined)
    return `% the spool ${dir} of topic ${topic}${count} has a destination file that cannot be read: left alone; send it on purpose with ${retarget}`
  const notHere = options.destination === undefined ? '' : `, not ${describeDestination(options.destination)}`
  return `% the spool ${dir} of topic ${topic}${count} waits for ${describeDestination(destination)}${notHere}: left alone; send it there with 'meta spool send ${topic}${options.spoolFlag}', or here on purpose with ${retarget}`
}

function messages(n: number): string {
  return `${formatCount(n)} message${n === 1 ? '' : 's'}`
}

function ranges(n: number): string {
  return `${formatCount(n)} damaged range${n === 1 ? '' : 's'}`
}
