/**
 * Long-poll gets (meta extension, docs/protocol.md#long-poll-get): a `get` with a trailing
 * maxWaitMs token that finds nothing at the end of the log waits here instead of answering 404 at
 * once. Appends to the partition wake every waiter of that partition, which re-runs its get; the
 * timeout answers 404 exactly as an immediate miss would. An idle tailing consumer therefore costs
 * one parked request per partition, and a new message reaches it within one event-loop turn of
 * being written.
 */
import type {GetCommand} from '../protocol/commands/get.js'
import type {Connection} from './connection.js'

interface Waiter {
  conn: Connection
  frame: GetCommand
  timer: NodeJS.Timeout
}

/** Upper bound on one wait; a longer request is capped (the client simply asks again). */
const MAX_POLL_WAIT_MS = 60_000

function pollKey(topic: string, partition: number): string {
  return `${topic}\0${partition}`
}

export class LongPollRegistry {
  private readonly waiting = new Map<string, Set<Waiter>>()
  private count = 0

  constructor(
    /** Re-run a woken get. */
    private readonly retry: (waiter: Waiter) => void,
    /** Answer a get whose wait ran out. */
    private readonly expire: (waiter: Waiter) => void,
  ) {}

  get size(): number {
    return this.count
  }

  park(conn: Connection, frame: GetCommand): void {
    const key = pollKey(frame.topic, frame.partition)
    let set = this.waiting.get(key)
    if (set === undefined) {
      set = new Set()
      this.waiting.set(key, set)
    }
    const waiter: Waiter = {conn, frame, timer: undefined as unknown as NodeJS.Timeout}
    waiter.timer = setTimeout(
      () => {
        this.remove(key, waiter)
        this.expire(waiter)
      },
      Math.min(frame.maxWaitMs, MAX_POLL_WAIT_MS),
    )
    set.add(waiter)
    this.count += 1
  }

  /** Data arrived in a partition: re-run every get waiting on it. */
  wake(topic: string, partition: number): void {
    const key = pollKey(topic, partition)
    const set = this.waiting.get(key)
    if (set === undefined) return
    this.waiting.delete(key)
    this.count -= set.size
    for (const waiter of set) {
      clearTimeout(waiter.timer)
      this.retry(waiter)
    }
  }

  /** Answer every waiter now (shutdown). */
  expireAll(): void {
    for (const [key, set] of this.waiting) {
      this.waiting.delete(key)
      for (const waiter of set) {
        clearTimeout(waiter.timer)
        this.expire(waiter)
      }
    }
    this.count = 0
  }

  /** Answer every waiter of one connection now (the connection is ending). */
  expireConnection(conn: Connection): void {
    for (const waiter of this.takeConnection(conn)) this.expire(waiter)
  }

  /** Forget the waiters of a closed connection. */
  dropConnection(conn: Connection): void {
    this.takeConnection(conn)
  }

  /** Remove a connection's waiters (timers cleared) and return them. */
  private takeConnection(conn: Connection): Waiter[] {
    const taken: Waiter[] = []
    for (const [key, set] of this.waiting) {
      for (const waiter of set) {
        if (waiter.conn !== conn) continue
        clearTimeout(waiter.timer)
        set.delete(waiter)
        taken.push(waiter)
      }
      if (set.size === 0) this.waiting.delete(key)
    }
    this.count -= taken.length
    return taken
  }

  private remove(key: string, waiter: Waiter): void {
    const set = this.waiting.get(key)
    if (set === undefined || !set.delete(waiter)) return
    this.count -= 1
    if (set.size === 0) this.waiting.delete(key)
  }
}
