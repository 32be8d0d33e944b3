/**
 * `meta bench e2e`: end-to-end latency, put sent → message received by a consumer in the
 * same process (one clock). Each payload starts with its send time (performance.now() as a
 * big-endian float64); the consumer records receive − send for every message.
 *
 * The consumer starts at the end of each partition and parks a long poll; a warm-up phase
 * (messages stamped 0, not recorded) opens connections and creates the partitions. Sending
 * is rate-limited (default DEFAULT_E2E_RATE msg/s); the run ends when every acknowledged
 * message has arrived, or RECEIVE_TIMEOUT_MS after the last acknowledgement (the rest
 * count as failed).
 */
import {connectAdmin} from '../../client/admin.js'
import {createConsumer, type Consumer} from '../../client/consumer.js'
import {MetaError} from '../../protocol/errors.js'
import {Meter} from './meter.js'
import {withSpinner} from '../spinner.js'
import {closeProducers, openProducers, sendLoad} from './load.js'
import {DEFAULT_DURATION_MS, summarize, type RunSummary} from './produce.js'
import type {BenchRunOptions} from './types.js'

const DEFAULT_E2E_RATE = 10_000
const DEFAULT_WARMUP_MS = 1000
const RECEIVE_TIMEOUT_MS = 10_000
const STAMP_BYTES = 8

export async function runE2e(options: BenchRunOptions & {warmupMs?: number}): Promise<RunSummary> {
  if (options.messageBytes < STAMP_BYTES) {
    throw MetaError.invalidArgument(`invalid --size "${options.messageBytes}" for e2e: expected at least ${STAMP_BYTES} bytes (the send time)`)
  }
  const template = Buffer.alloc(options.messageBytes, 'x')
  const unstamped = Buffer.from(template)
  unstamped.writeDoubleBE(0, 0)
  const bytes = options.messageBytes
  const meter = new Meter(options.progressIntervalMs, options.progress, true, options.brokerCpuMs)
  let expected = Number.POSITIVE_INFINITY
  let lastReceivedAt = 0
  let allReceived!: () => void
  const received = new Promise<void>((resolve) => (allReceived = resolve))

  const consumer = createConsumer({
    broker: options.broker,
    topics: [options.topic],
    from: await endOffsets(options.broker, options.topic),
    logger: options.logger,
  })
  await consumer.start()
  const reading = (async () => {
    for await (const batch of consumer.batches()) {
      const now = performance.now()
      for (const m of batch.messages) {
        const sentAt = m.data.length >= STAMP_BYTES ? m.data.readDoubleBE(0) : 0
        if (sentAt <= 0) continue
        meter.add(1, m.data.length)
        meter.latency(now - sentAt)
      }
      lastReceivedAt = now
      if (meter.messages >= expected) allReceived()
    }
  })()

  const producers = await openProducers(options, unstamped)
  let failed = 0
  try {
    const rate = options.rate ?? DEFAULT_E2E_RATE
    const warmupMs = options.warmupMs ?? DEFAULT_WARMUP_MS
    if (warmupMs > 0) {
      await withSpinner(
        `warming up for ${warmupMs} ms (not measured)`,
        () => sendLoad(producers, {...options, rate, count: undefined, durationMs: warmupMs, payload: () => unstamped, onAck: () => {}}),
        {disabled: !options.spinner},
      )
    }
    meter.start()
    const durationMs = options.count === undefined ? (options.durationMs ?? DEFAULT_DURATION_MS) : options.durationMs
    const sent = await sendLoad(producers, {
      ...options,
      rate,
      durationMs,
      payload: (sentAt) => {
        const payload = Buffer.allocUnsafe(bytes)
        template.copy(payload)
        payload.writeDoubleBE(sentAt, 0)
        return payload
      },
      onAck: (r) => {
        if (!r.success) failed += 1
      },
    })
    expected = sent.sent - failed
    if (meter.messages < expected) {
      await waitFor(received, RECEIVE_TIMEOUT_MS)
    }
    meter.stop()
    const lost = Math.max(0, expected - meter.messages)
    if (lost > 0) options.progress(`${lost} acknowledged messages did not arrive within ${RECEIVE_TIMEOUT_MS} ms`)
    return summarize('e2e', {...options, rate}, meter, failed + lost, Math.max(lastReceivedAt, sent.endedAt) - meter.startedAt)
  } finally {
    meter.stop()
    await stopAll(consumer, reading)
    await closeProducers(producers)
  }
}

/** Start each existing partition at its end (new partitions start at 0). */
async function endOffsets(broker: string, topic: string): Promise<(topic: string, p: {partition: number}) => number> {
  const admin = await connectAdmin({broker})
  try {
    const ends = new Map<number, number>()
    for (const p of await admin.partitions()) if (p.topic === topic) ends.set(p.partition, p.maxOffset)
    return (_topic, p) => ends.get(p.partition) ?? 0
  } finally {
    admin.close()
  }
}

function waitFor(promise: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

async function stopAll(consumer: Consumer, reading: Promise<void>): Promise<void> {
  await consumer.stop()
  await reading.catch(() => {
    // The iterator ends with the consumer; an error here only means it ended abruptly.
  })
}
