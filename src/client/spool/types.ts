/** What a SpoolingProducer is given, what it tells (its events), and what it counts. */
import type {MetaError} from '../../protocol/errors.js'
import type {Producer, SendCallback} from '../producer.js'
import type {SpoolDestination} from './destination.js'
import type {SpoolOpened} from './spool.js'

/**
 * The events of a SpoolingProducer, by name, with their arguments: `producer.on('outage',
 * (topic, error) => …)` is checked against this map (a typed EventEmitter), so a misspelt
 * event or a listener of the wrong arguments does not compile (docs/architecture.md#client-events).
 */
export interface SpoolingProducerEvents {
  /** A topic's sends failed: its messages go to its spool until a broker takes them again. */
  outage: [topic: string, error: MetaError]
  /** A broker takes the topic's messages again; `backlog` records of the spool are still to send. */
  recovered: [topic: string, backlog: number]
  /** The spool could not be written (a full disk): input pauses, nothing is lost; `held` is what waits in memory. */
  stalled: [topic: string, dir: string, error: NodeJS.ErrnoException, held: {records: number; bytes: number}, pending: number]
  /** The stalled spool can be written again: input resumes. */
  writable: [topic: string]
  /** At close, `count` records could not be written to the spool (kept nowhere). */
  lost: [topic: string, dir: string, count: number, error: NodeJS.ErrnoException]
  /** A spool was opened: what recovery found (damage, adoption, a retarget). */
  opened: [topic: string, dir: string, opened: SpoolOpened]
  /** A spool left for another destination, left alone. */
  elsewhere: [topic: string, dir: string, destination: SpoolDestination | undefined]
  /** A leftover spool that could not be opened (in use, unreadable). */
  unavailable: [topic: string, dir: string, error: MetaError]
  /** A topic was given up (past maxOutageMs); flush() and close() reject with it too. */
  error: [error: MetaError]
  /** send() may be called again after it returned false. */
  drain: []
}

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
