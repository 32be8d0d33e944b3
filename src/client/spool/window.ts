/**
 * The direct window of a spooling producer's topic: messages sent straight to the producer and
 * not yet answered, in send order, kept in memory only (the spool is written when an outage
 * begins or on close, never on the healthy path).
 *
 * A ring of parallel arrays rather than an object per message: the healthy path stores a few
 * fields per send and allocates nothing per message. A message is known by its sequence number, which the
 * producer hands back to the callback as its context; its slot is `seq & mask`, so a sequence
 * number stays valid while the ring doubles (send() may run past the producer's window).
 * Sequence numbers wrap at SEQ_LIMIT, a power of two above any capacity, so they stay small
 * integers (no heap number per send) and `seq & mask` stays right across the wrap.
 *
 * The arrays of references (attributes, payloads, callbacks) are made anew each time the ring
 * wraps, the kept slots copied over, so they die young, in V8's young generation, where storing
 * a young object (a payload, a callback) is cheap. Into an array promoted to the old generation
 * every such store takes the write barrier's slow path and adds a slot the next scavenge must
 * visit (callgrind: about a third of what the spooling path cost over --no-spool).
 *
 * A slot is: sent (unanswered), spooled (unanswered, and its record is in the spool at
 * `positionOf(seq)`), or answered. The oldest slot leaves once answered, and the ones behind it
 * that are; answers may come in any order (partitions are acknowledged separately).
 */
import type {Buffer} from 'node:buffer'
import type {SendCallback} from '../producer-options.js'

/** Slots at first (the ring doubles when full). */
const INITIAL_CAPACITY = 1024
/** Sequence numbers run modulo this (2^30: a small integer in V8, and above any capacity). */
const SEQ_LIMIT = 2 ** 30
const SEQ_MASK = SEQ_LIMIT - 1
/** `positions` of a slot sent and not spooled, and of a slot answered. */
const SENT = -1
const ANSWERED = -2

export class SendWindow {
  private capacity = INITIAL_CAPACITY
  private mask = INITIAL_CAPACITY - 1
  private partitions = new Int32Array(INITIAL_CAPACITY)
  private attributes: Array<string | undefined> = new Array(INITIAL_CAPACITY).fill(undefined)
  private payloads: Array<Buffer | undefined> = new Array(INITIAL_CAPACITY).fill(undefined)
  private callbacks: Array<SendCallback | undefined> = new Array(INITIAL_CAPACITY).fill(undefined)
  /** SENT, ANSWERED, or the spool position of the slot's record. */
  private positions = new Float64Array(INITIAL_CAPACITY).fill(ANSWERED)
  /** Spool position after the record (spooled slots only). */
  private ends = new Float64Array(INITIAL_CAPACITY)
  /** Sequence number of the oldest slot kept, and of the next send. */
  private head: number
  private tail: number
  /** Slots sent and neither answered nor spooled. */
  private sentCount = 0

  /** `firstSeq`: the first sequence number (tests start near the wrap). */
  constructor(firstSeq = 0) {
    this.head = this.tail = firstSeq & SEQ_MASK
  }

  /** Messages sent, not answered and not in the spool. */
  get pending(): number {
    return this.sentCount
  }

  /** Slots kept: sent or spooled and unanswered, or answered behind one that is not. */
  get length(): number {
    return (this.tail - this.head) & SEQ_MASK
  }

  /** Add a message at the end; returns its sequence number. */
  push(partition: number, attribute: string | undefined, payload: Buffer, callback: SendCallback): number {
    if (this.length === this.capacity) this.grow()
    const seq = this.tail
    const slot = seq & this.mask
    if (slot === 0) this.renew()
    this.partitions[slot] = partition
    this.attributes[slot] = attribute
    this.payloads[slot] = payload
    this.callbacks[slot] = callback
    this.positions[slot] = SENT
    this.tail = (seq + 1) & SEQ_MASK
    this.sentCount += 1
    return seq
  }

  /** Take back the message pushed last (the producer refused it before it left). */
  pop(): void {
    this.tail = (this.tail - 1) & SEQ_MASK
    this.clear(this.tail & this.mask)
    this.sentCount -= 1
  }

  /** The record of a spooled message's slot starts here in the spool; -1 when it was not spooled. */
  positionOf(seq: number): number {
    const position = this.positions[seq & this.mask]!
    return position >= 0 ? position : -1
  }

  endOf(seq: number): number {
    return this.ends[seq & this.mask]!
  }

  /**
   * The producer answered `seq`: its slot leaves the window (with every answered one after it,
   * once it is the oldest). Returns the message's callback.
   */
  answer(seq: number): SendCallback {
    const slot = seq & this.mask
    const callback = this.callbacks[slot]!
    if (this.positions[slot] === SENT) this.sentCount -= 1
    this.positions[slot] = ANSWERED
    if (seq !== this.head) return callback
    let head = this.head
    do {
      this.clear(head & this.mask)
      head = (head + 1) & SEQ_MASK
    } while (head !== this.tail && this.positions[head & this.mask] === ANSWERED)
    this.head = head
    return callback
  }

  /**
   * Hand every message sent and not yet answered, oldest first, to `store`, which writes it to
   * the spool and returns its [position, end); the slots stay until answered, as spooled.
   * Stops at the first throw (the rest stay sent).
   */
  spoolInto(store: (partition: number, attribute: string | undefined, payload: Buffer, callback: SendCallback) => {position: number; end: number}): void {
    for (let seq = this.head; seq !== this.tail; seq = (seq + 1) & SEQ_MASK) {
      const slot = seq & this.mask
      if (this.positions[slot] !== SENT) continue
      const {position, end} = store(this.partitions[slot]!, this.attributes[slot], this.payloads[slot]!, this.callbacks[slot]!)
      this.positions[slot] = position
      this.ends[slot] = end
      this.sentCount -= 1
    }
  }

  /** Drop the references of a slot (its payload may be large). */
  private clear(slot: number): void {
    this.attributes[slot] = undefined
    this.payloads[slot] = undefined
    this.callbacks[slot] = undefined
    this.positions[slot] = ANSWERED
  }

  /** New arrays of references, with the kept slots copied (see the top of the file). */
  private renew(): void {
    const attributes: Array<string | undefined> = new Array(this.capacity).fill(undefined)
    const payloads: Array<Buffer | undefined> = new Array(this.capacity).fill(undefined)
    const callbacks: Array<SendCallback | undefined> = new Array(this.capacity).fill(undefined)
    for (let seq = this.head; seq !== this.tail; seq = (seq + 1) & SEQ_MASK) {
      const slot = seq & this.mask
      attributes[slot] = this.attributes[slot]
      payloads[slot] = this.payloads[slot]
      callbacks[slot] = this.callbacks[slot]
    }
    this.attributes = attributes
    this.payloads = payloads
    this.callbacks = callbacks
  }

  /** Double the ring, every kept slot moving to where its sequence number lands under the new mask. */
  private grow(): void {
    const capacity = this.capacity * 2
    const mask = capacity - 1
    const partitions = new Int32Array(capacity)
    const attributes: Array<string | undefined> = new Array(capacity).fill(undefined)
    const payloads: Array<Buffer | undefined> = new Array(capacity).fill(undefined)
    const callbacks: Array<SendCallback | undefined> = new Array(capacity).fill(undefined)
    const positions = new Float64Array(capacity).fill(ANSWERED)
    const ends = new Float64Array(capacity)
    for (let seq = this.head; seq !== this.tail; seq = (seq + 1) & SEQ_MASK) {
      const from = seq & this.mask
      const to = seq & mask
      partitions[to] = this.partitions[from]!
      attributes[to] = this.attributes[from]
      payloads[to] = this.payloads[from]
      callbacks[to] = this.callbacks[from]
      positions[to] = this.positions[from]!
      ends[to] = this.ends[from]!
    }
    this.capacity = capacity
    this.mask = mask
    this.partitions = partitions
    this.attributes = attributes
    this.payloads = payloads
    this.callbacks = callbacks
    this.positions = positions
    this.ends = ends
  }
}
