/**
 * The SpoolingProducer's state per topic (a lane) and the parts of its spool's life that need
 * nothing else of the producer: taking the spools an earlier run left, and closing.
 */
import {Buffer} from 'node:buffer'
import type {MetaError} from '../../protocol/errors.js'
import type {SendCallback, SendOptions} from '../producer.js'
import type {SendResult} from '../types.js'
import {leftoverSpools, mergeSpool, sendsTo} from './dirs.js'
import type {SpoolEntry, SpoolRecord} from './format.js'
import {Queue} from './queue.js'
import type {Spool, SpoolOpened} from './spool.js'
import type {SpoolingProducerEvents, SpoolingProducerOptions} from './types.js'

/** First and largest wait before a probe during an outage (ms). */
export const PROBE_BACKOFF_MIN_MS = 50
export const PROBE_BACKOFF_MAX_MS = 1000
/** First and largest wait before writing a stalled spool again (ms). */
export const STALL_RETRY_MIN_MS = 100
export const STALL_RETRY_MAX_MS = 1000
/** Tries to save a spool's position at close when a write fails, the wait doubling from STALL_RETRY_MIN_MS. */
const CLOSE_SAVE_ATTEMPTS = 5

/**
 * direct: sending straight to the producer (no spool in the way); sending: draining the spool;
 * outage: waiting to probe; probing: one record out to see whether the broker is back.
 */
type LaneState = 'direct' | 'sending' | 'outage' | 'probing' | 'failed'

export interface Lane {
  topic: string
  /** Opened at the first outage, or at start for a spool left behind. */
  spool: Spool | undefined
  state: LaneState
  /** The callback of a direct send written to the spool (handed over); its context is its spool record. */
  spooledResult: (result: SendResult, record: SpoolRecord) => void
  /** Direct sends written to the spool and not answered yet. */
  spooledInFlight: number
  /** Position of the next spool record to send. */
  cursor: number
  /** Spool records appended in this process and not yet sent (a copy of the spool's tail). */
  memory: Queue<SpoolRecord>
  memoryBytes: number
  /** Spool records read from disk, not yet sent. */
  readAhead: Queue<SpoolRecord>
  /** Spool records sent and not answered. */
  inFlight: number
  /** Sends of an older epoch belong to a window cut short by an outage. */
  epoch: number
  callbacks: Map<number, SendCallback>
  /** Callbacks of records appended since the spool's last flush (only with onStored). */
  unstored: SendCallback[]
  outageSinceMs: number
  backoffMs: number
  timer: NodeJS.Timeout | undefined
  pumpScheduled: boolean
  /** The spool could not be written: when to try again. */
  stallTimer: NodeJS.Timeout | undefined
  stallBackoffMs: number
  /** 'stalled' was emitted for the current stall. */
  stallReported: boolean
}

export function newLane(topic: string, spooledResult: Lane['spooledResult']): Lane {
  return {
    topic,
    spool: undefined,
    state: 'direct',
    spooledResult,
    spooledInFlight: 0,
    cursor: 0,
    memory: new Queue(),
    memoryBytes: 0,
    readAhead: new Queue(),
    inFlight: 0,
    epoch: 0,
    callbacks: new Map(),
    unstored: [],
    outageSinceMs: 0,
    backoffMs: PROBE_BACKOFF_MIN_MS,
    timer: undefined,
    pumpScheduled: false,
    stallTimer: undefined,
    stallBackoffMs: STALL_RETRY_MIN_MS,
    stallReported: false,
  }
}

/** The events a lane reports: some of the producer's, and 'merged' (a leftover spool taken into the lane's). */
interface LaneEvents extends Pick<SpoolingProducerEvents, 'elsewhere' | 'unavailable' | 'lost'> {
  merged: [dir: string, opened: SpoolOpened]
}

export type LaneEmit = <K extends keyof LaneEvents>(event: K, ...args: LaneEvents[K]) => void
type Emit = LaneEmit

/**
 * Open the spools an earlier run left for a topic and this destination (the first one, the
 * others merged into it); those of another destination are left alone ('elsewhere'), one that
 * cannot be opened too ('unavailable'). Returns the spool opened, if any.
 */
export function openLeftovers(root: string, topic: string, options: SpoolingProducerOptions, open: (dir: string) => Spool, emit: Emit): Spool | undefined {
  const retarget = options.retarget === true
  const leftovers = leftoverSpools(root, topic)
  for (const other of leftovers) if (!sendsTo(other, options.destination, retarget)) emit('elsewhere', topic, other.dir, other.destination)
  let spool: Spool | undefined
  for (const {dir} of leftovers.filter((l) => sendsTo(l, options.destination, retarget))) {
    if (spool === undefined) {
      try {
        spool = open(dir)
      } catch (error) {
        emit('unavailable', topic, dir, error as MetaError)
      }
      continue
    }
    const opened = mergeSpool(spool, dir)
    if (opened !== undefined) emit('merged', dir, opened)
    if (spool.stalled !== undefined) break // the rest stays where it is
  }
  return spool
}

/**
 * Close a lane's spool: what could not be written is told ('lost'), a position write that
 * fails is tried again a few times before acknowledged messages are left to be sent twice.
 * Returns the error close() ended with, if any.
 */
export async function closeSpool(topic: string, spool: Spool, emit: Emit): Promise<MetaError | undefined> {
  const held = spool.held.records
  if (held > 0 && !spool.flush()) emit('lost', topic, spool.dir, held, spool.stalled!.error)
  for (let attempt = 1, waitMs = STALL_RETRY_MIN_MS; attempt < CLOSE_SAVE_ATTEMPTS && !trySave(spool); attempt++, waitMs *= 2) await delay(waitMs)
  try {
    spool.close()
    return undefined
  } catch (error) {
    return error as MetaError
  }
}

/** Save a spool's position now; false when the write failed. */
function trySave(spool: Spool): boolean {
  try {
    spool.savePosition()
    return true
  } catch {
    return false
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** The same bytes as a Buffer (a view, not a copy). */
export function asBuffer(payload: Uint8Array): Buffer {
  return Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength)
}

export function sendOptions(entry: SpoolEntry): SendOptions {
  const options: SendOptions = {attribute: entry.attribute}
  if (entry.partition >= 0) options.partition = entry.partition
  return options
}

/** A failure the broker (or the network) will get over: keep the record and try again later. */
export function isOutage(error: MetaError): boolean {
  return error.retriable && error.code !== 'NOT_FOUND'
}
