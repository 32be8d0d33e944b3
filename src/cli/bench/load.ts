/**
 * The sending side of `meta bench`: one producer per connection, driven without a promise
 * or timer per message.
 *
 * - Unlimited: each producer sends until its window (maxInFlight) is full, then sends one
 *   more per acknowledgement (its 'drain' event), so the window stays full.
 * - Rate-limited: a 1 ms ticker sends what is due by now (rate × elapsed), round-robin over
 *   the producers, skipping a producer whose window is full.
 *
 * Stops after `count` messages or `durationMs`, whichever comes first, and resolves once
 * every message sent is acknowledged or failed.
 */
import {createProducer, type Producer} from '../../client/producer.js'
import type {SendResult} from '../../client/types.js'
import type {Logger} from '../../log.js'

interface LoadOptions {
  broker: string
  topic: string
  connections: number
  maxInFlight: number
  count?: number
  durationMs?: number
  rate?: number
  /** The payload of the next message (called once per message, at send time). */
  payload: (sentAt: number) => Uint8Array
  /**
   * Called once per acknowledgement with the send time and the time the acknowledgement was
   * handled (both performance.now(), read once each per message) and the payload sent.
   */
  onAck: (result: SendResult, sentAt: number, payload: Uint8Array, ackedAt: number) => void
  signal?: AbortSignal
  logger?: Logger
}

interface LoadResult {
  sent: number
  /** performance.now() of the first send and of the last acknowledgement. */
  startedAt: number
  endedAt: number
}

const NO_OPTIONS = {}
/** Deadline of each put's acknowledgement. */
export const SEND_TIMEOUT_MS = 30_000

/** Open the producers and send one message through each (connect, topic lookup). */
export async function openProducers(
  options: Pick<LoadOptions, 'broker' | 'topic' | 'connections' | 'maxInFlight' | 'logger'> & {plainPut?: boolean},
  warmup: Uint8Array,
): Promise<Producer[]> {
  const producers: Producer[] = []
  for (let i = 0; i < options.connections; i++) {
    producers.push(
      createProducer({
        broker: options.broker,
        maxInFlight: options.maxInFlight,
        sendTimeoutMs: SEND_TIMEOUT_MS,
        logger: options.logger,
        batchPut: options.plainPut !== true,
      }),
    )
  }
  try {
    const results = await Promise.all(producers.map((p) => p.send(options.topic, warmup)))
    const failed = results.find((r) => !r.success)
    if (failed) throw failed.error ?? new Error(failed.errorMessage)
  } catch (error) {
    await closeProducers(producers)
    throw error
  }
  return producers
}

export async function closeProducers(producers: Producer[]): Promise<void> {
  await Promise.all(producers.map((p) => p.close()))
}

export function sendLoad(producers: Producer[], options: LoadOptions): Promise<LoadResult> {
  const {topic, payload, onAck} = options
  const limit = options.count ?? Number.POSITIVE_INFINITY
  let sent = 0
  let done = 0
  let stopping = false
  let endedAt = 0
  const startedAt = performance.now()
  let resolve!: (result: LoadResult) => void
  const finished = new Promise<LoadResult>((r) => (resolve = r))
  let durationTimer: NodeJS.Timeout | undefined
  let ticker: NodeJS.Timeout | undefined

  const stop = () => {
    if (stopping) return
    stopping = true
    if (durationTimer !== undefined) clearTimeout(durationTimer)
    if (ticker !== undefined) clearInterval(ticker)
    for (const p of producers) p.off('drain', pumps.get(p)!)
    options.signal?.removeEventListener('abort', stop)
    maybeFinish()
  }
  const maybeFinish = () => {
    if (stopping && done === sent) {
      endedAt ||= performance.now()
      resolve({sent, startedAt, endedAt})
    }
  }
  const ack = (result: SendResult, sentAt: number, body: Uint8Array) => {
    done += 1
    endedAt = performance.now()
    onAck(result, sentAt, body, endedAt)
    if (stopping && done === sent) maybeFinish()
  }
  const sendOne = (p: Producer): boolean => {
    sent += 1
    const sentAt = performance.now()
    const body = payload(sentAt)
    const ok = p.sendCallback(topic, body, NO_OPTIONS, (r) => ack(r, sentAt, body))
    if (sent >= limit) stop()
    return ok
  }

  const pumps = new Map<Producer, () => void>()
  for (const p of producers) {
    pumps.set(p, () => {
      while (!stopping && sendOne(p)) {
        // keep the window full
      }
    })
  }

  if (options.durationMs !== undefined) durationTimer = setTimeout(stop, options.durationMs)
  options.signal?.addEventListener('abort', stop)
  if (limit <= 0 || options.signal?.aborted) {
    stop()
  } else if (options.rate === undefined) {
    for (const p of producers) {
      p.on('drain', pumps.get(p)!)
      pumps.get(p)!()
    }
  } else {
    const rate = options.rate
    let next = 0
    const tick = () => {
      const due = Math.min(limit, Math.floor((rate * (performance.now() - startedAt)) / 1000) + 1)
      let skipped = 0
      while (!stopping && sent < due && skipped < producers.length) {
        const p = producers[next]
        next = (next + 1) % producers.length
        if (p.inFlight >= options.maxInFlight) {
          skipped += 1
          continue
        }
        skipped = 0
        sendOne(p)
      }
    }
    ticker = setInterval(tick, 1)
    tick()
  }
  return finished
}
