/**
 * What a lane sends next and what it keeps: the records at its cursor, from the copy of the
 * spool's tail kept in memory or read from the disk, and what is said about the records a
 * lane gives up. They need the lane and its spool only, nothing else of the producer.
 */
import {MetaError} from '../../protocol/errors.js'
import type {SpoolRecord} from './format.js'
import type {Lane} from './lane.js'
import {Queue} from './queue.js'
import {describeSystemError} from './spool.js'

/** Records appended and not yet sent kept in memory too (bytes, with RECORD_HEAP_BYTES each), so a drain does not read the disk. */
const MEMORY_TAIL_BYTES = 16 * 1024 * 1024
/** What a record kept in memory costs beyond its bytes (its object and payload Buffer), counted against MEMORY_TAIL_BYTES. */
const RECORD_HEAP_BYTES = 160

/** A record just appended is kept in memory too, while the memory tail has room. */
export function keepInMemory(lane: Lane, record: SpoolRecord): void {
  if (lane.memoryBytes >= MEMORY_TAIL_BYTES) return
  lane.memory.push(record)
  lane.memoryBytes += record.end - record.position + RECORD_HEAP_BYTES
}

/** Every spool record is out: nothing read or kept for sending is needed any more. */
export function forgetReadState(lane: Lane): void {
  lane.memory = new Queue()
  lane.memoryBytes = 0
  lane.readAhead = new Queue()
}

/** The next spool record to send at the cursor, from memory or from the disk. */
export function nextRecord(lane: Lane): SpoolRecord | undefined {
  const spool = lane.spool!
  for (;;) {
    for (let head = lane.memory.peek(); head !== undefined && head.position < lane.cursor; head = lane.memory.peek()) {
      lane.memoryBytes -= head.end - head.position + RECORD_HEAP_BYTES
      lane.memory.shift()
    }
    for (let head = lane.readAhead.peek(); head !== undefined && head.position < lane.cursor; head = lane.readAhead.peek()) lane.readAhead.shift()
    let record = lane.memory.peek()?.position === lane.cursor ? lane.memory.peek() : lane.readAhead.peek()
    if (record === undefined || record.position !== lane.cursor) {
      if (lane.cursor >= spool.end) return undefined
      lane.readAhead = new Queue(spool.read(lane.cursor))
      record = lane.readAhead.peek()
      if (record === undefined) return undefined
    }
    // Only what the spool file holds is sent (its position never passes what is written).
    if (record.end > spool.written && (!spool.flush() || record.end > spool.written)) return undefined
    lane.cursor = record.end
    if (!spool.isAcked(record.position)) return record
  }
}

/** `1,000 messages kept in DIR` (and how many could not be written, if any). */
export function keptText(lane: Lane): string {
  const spool = lane.spool!
  const written = spool.flush()
  const held = spool.held.records
  const kept = `${spool.pending - held} messages kept in ${spool.dir}`
  return written ? kept : `${kept}; ${held} more could not be written to it (${describeSystemError(spool.stalled!.error)}) and are not kept`
}

/** A lane given up: records its spool never wrote fail their callbacks (a reader of a file reads them again), none vanishes. */
export function failUnwritten(lane: Lane): void {
  const spool = lane.spool
  if (spool === undefined || spool.held.records === 0 || spool.flush()) return
  const lost = new MetaError('STORAGE_ERROR', `not kept: the spool ${spool.dir} could not be written (${describeSystemError(spool.stalled!.error)})`)
  for (const position of spool.discardHeld()) {
    const callback = lane.callbacks.get(position)
    lane.callbacks.delete(position)
    callback?.({success: false, topic: lane.topic, partition: -1, brokerId: -1, offset: -1, id: undefined, error: lost, errorMessage: lost.message})
  }
  lane.unstored = []
}
