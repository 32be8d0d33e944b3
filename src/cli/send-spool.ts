/**
 * `meta send`'s disk spool: the flags, what they resolve to, and the spooling producer the
 * session sends through (client/spool/spooling-producer.ts; the library's own code, not a second
 * implementation). The session sends through it unless --no-spool or --transaction.
 */
import type {SendCallback} from '../client/producer-options.js'
import {Flags} from '@oclif/core'
import {defaultSpoolRoot, DEFAULT_SPOOL_MAX_BYTES, SPOOL_MAX_BYTES_CEILING, SPOOL_MAX_BYTES_FLOOR, type SpoolDestination} from '../client/spool/index.js'
import {SpoolingProducer, MAX_OUTAGE_CEILING_MS, MAX_OUTAGE_FLOOR_MS} from '../client/spool/spooling-producer.js'
import type {Producer} from '../client/producer.js'
import {MetaError} from '../protocol/errors.js'
import {parseSize} from './bench/flags.js'
import {durationFlag} from './client-flags.js'
import {formatBytes} from './format.js'
import {noticeSpoolEvents} from './spool-notices.js'

export interface SendSpoolOptions {
  /** Spool root (one directory per topic below it). */
  dir: string
  maxBytes: number
  /** Give up after an outage this long; undefined = wait as long as it takes (and fail fast at start). */
  maxOutageMs?: number
  /** One line when spooling starts and one when the broker is back (and about the spool's disk and damage). */
  notify: (line: string) => void
  /** Where this process sends: spools record it, and those of another destination are left alone. */
  destination?: SpoolDestination
  /** Take spools left for any destination (meta spool send --retarget). */
  retarget?: boolean
  /** --spool was given (hints then repeat it). */
  dirGiven?: boolean
}

const SPOOL_DIR_SUMMARY =
  'Spool directory, one directory per topic below it (default $META_STATE_DIR/spool, else $XDG_STATE_HOME/meta/spool, else ~/.local/state/meta/spool).'

/**
 * The spool is on by default, and costs nothing while the broker takes messages: only the
 * unacknowledged window is kept, in memory, and written to the spool when a send fails.
 * `--no-spool` is a flag of its own: oclif's `--no-` prefix only negates booleans.
 */
export const spoolFlags = {
  spool: Flags.string({
    summary: `Keep what the broker cannot take now in a disk spool here and send it when the broker is back. ${SPOOL_DIR_SUMMARY}`,
    helpValue: '<dir>',
    aliases: ['spool-dir'],
    helpGroup: 'SPOOL',
  }),
  'no-spool': Flags.boolean({
    summary: 'No spool: fail fast (a send that fails for a lost connection ends meta send, exit 1). Implied by --transaction.',
    helpGroup: 'SPOOL',
  }),
  'spool-max': Flags.string({
    summary: "Bound of a topic's spool; when full, input is not read until the broker takes messages again (1MiB..1TiB, default 1GiB).",
    helpValue: '<size>',
    helpGroup: 'SPOOL',
  }),
  'max-outage': maxOutageFlag(
    'Give up (exit 1, spool kept) when the broker is away this long, also at start (1s..30d; default: wait as long as it takes; a broker never reached since start fails at once).',
    'SPOOL',
  ),
}

/** `--max-outage`, bounded as the spooling producer bounds it (MAX_OUTAGE_FLOOR_MS..MAX_OUTAGE_CEILING_MS). */
export function maxOutageFlag(summary: string, helpGroup?: string): ReturnType<typeof durationFlag> {
  return durationFlag({summary, helpGroup, minMs: MAX_OUTAGE_FLOOR_MS, maxMs: MAX_OUTAGE_CEILING_MS})
}

interface SpoolFlagValues {
  spool?: string
  'no-spool'?: boolean
  'spool-max'?: string
  'max-outage'?: number
  transaction?: boolean
}

/** What the spool flags ask for; undefined = no spool (--no-spool, or -T). Throws INVALID_ARGUMENT. */
export function resolveSpoolOptions(
  flags: SpoolFlagValues,
  notify: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): SendSpoolOptions | undefined {
  const off = flags['no-spool'] === true ? '--no-spool' : flags.transaction === true ? '--transaction' : undefined
  if (off !== undefined) {
    if (flags.spool !== undefined) {
      throw MetaError.invalidArgument(
        off === '--no-spool'
          ? '--spool DIR and --no-spool: expected one of them'
          : '--spool cannot go with --transaction: a transaction is sent whole or not at all, expected one of them',
      )
    }
    for (const name of ['spool-max', 'max-outage'] as const) {
      if (flags[name] !== undefined) throw MetaError.invalidArgument(`--${name} applies to the spool: expected no ${off} with it`)
    }
    return undefined
  }
  const maxBytes = flags['spool-max'] === undefined ? DEFAULT_SPOOL_MAX_BYTES : parseSize(flags['spool-max'])
  if (maxBytes < SPOOL_MAX_BYTES_FLOOR || maxBytes > SPOOL_MAX_BYTES_CEILING) {
    throw MetaError.invalidArgument(
      `invalid --spool-max "${flags['spool-max']}": expected ${formatBytes(SPOOL_MAX_BYTES_FLOOR)}..${formatBytes(SPOOL_MAX_BYTES_CEILING)}`,
    )
  }
  // --max-outage's bounds are checked by its flag parser (MAX_OUTAGE_FLOOR_MS..MAX_OUTAGE_CEILING_MS).
  return {dir: flags.spool ?? defaultSpoolRoot(env), dirGiven: flags.spool !== undefined, maxBytes, maxOutageMs: flags['max-outage'], notify}
}

/** The sender of a spooling `meta send`, saying on stderr what happens to its spools (spool-notices.ts). */
export function createSendSpooler(
  producer: Producer,
  options: SendSpoolOptions,
  maxInFlight: number | undefined,
  onStored?: (callback: SendCallback) => void,
): SpoolingProducer {
  const {dir, maxBytes, maxOutageMs, destination, retarget} = options
  const spooler = new SpoolingProducer({producer, spoolDir: dir, maxBytes, maxOutageMs, maxInFlight, onStored, destination, retarget})
  noticeSpoolEvents(spooler, {notify: options.notify, destination, maxOutageMs, spoolFlag: options.dirGiven === true ? ` --spool ${dir}` : ''})
  return spooler
}

/**
 * --spool for `meta spool …` (--spool-dir is kept as an alias, so scripts that use it keep
 * working).
 */
export const spoolDirFlag = Flags.string({
  summary: SPOOL_DIR_SUMMARY,
  helpValue: '<dir>',
  aliases: ['spool-dir'],
})
