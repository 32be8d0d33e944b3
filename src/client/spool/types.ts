/** What a SpoolingProducer is given, and what it counts. */
import type {Producer, SendCallback} from '../producer.js'
import type {SpoolDestination} from './destination.js'

export interface SpoolingProducerOptions {
  /**
   * The producer that talks to the brokers (its window bounds memory; retries apply per send).
   * One SpoolingProducer per producer: it keeps the direct sends in the producer (sendKept).
   */
  producer: Producer
  /** Spool root: one directory per topic below it (default: the state directory's, see spool/dirs.ts). */
  spoolDir?: string
  /** Bound per topic spool (bytes); default 1 GiB. */
  maxBytes?: number
  /** Give up after an outage this long (ms), or after the spool could not be written this long; default: never. */
  maxOutageMs?: number
  /**
   * Where the producer sends (spool/destination.ts spoolDestination): recorded in the spools it
   * writes; a spool left for another destination is left alone ('elsewhere'), one that records
   * none is adopted (said in 'opened'). Undefined: spools are neither checked nor marked.
   */
  destination?: SpoolDestination
  /** Take spools left for any destination, and record `destination` in them (said in 'opened'). */
  retarget?: boolean
  /** Records sent from a spool and not yet acknowledged, per topic (default DEFAULT_SPOOL_IN_FLIGHT). */
  maxInFlight?: number
  /**
   * Called with a record's callback once its bytes are written to the spool file (a killed
   * process keeps it; the spool sends it): a reader of a file may move its position past it.
   */
  onStored?: (callback: SendCallback) => void
}

export interface SpoolingStats {
  /** Records written to a spool by this process (the window when an outage began, and what was sent during it or its drain). */
  spooled: number
  /** Records sent from a spool and acknowledged (left by an earlier run included). */
  resent: number
  /** Records found in spools left by an earlier run. */
  leftover: number
  /** Records not yet acknowledged (in the spools, or sent direct and unanswered). */
  pending: number
  /** Damaged ranges found in spools and skipped (their bytes kept in the spool's quarantine directory). */
  damaged: number
  /** Bytes of those ranges. */
  damagedBytes: number
}
