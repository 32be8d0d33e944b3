/**
 * `meta bench consume`: replay throughput of a topic from its first message.
 *
 * If the topic holds fewer messages than the run needs (--count, else DEFAULT_FILL_COUNT for
 * an empty topic), the missing ones are produced first (not measured). Then consumers read
 * from the earliest offset to the end as it was when each pass started: one pass, or passes
 * until --duration is over, or until --count messages were read.
 */
import {connectAdmin} from '../../client/admin.js'
import {createConsumer} from '../../client/consumer.js'
import {Meter} from './meter.js'
import {withSpinner} from '../spinner.js'
import {runProduce, summarize, type RunSummary} from './produce.js'
import type {BenchRunOptions} from './types.js'

/** Messages written first when the topic is empty and no --count is given. */
const DEFAULT_FILL_COUNT = 1_000_000

export async function runConsume(options: BenchRunOptions): Promise<RunSummary> {
  const existing = await storedMessages(options.broker, options.topic)
  const wanted = options.count ?? (existing > 0 ? existing : DEFAULT_FILL_COUNT)
  if (existing < wanted) {
    const missing = wanted - existing
    const what = `filling ${options.topic} with ${missing} messages of ${options.messageBytes} B (not measured)`
    options.progress(what)
    const fill = await withSpinner(what, () => runProduce({...options, count: missing, durationMs: undefined, rate: undefined, progressIntervalMs: 0}), {
      disabled: !options.spinner,
    })
    if (fill.failed > 0) options.progress(`${fill.failed} fill messages failed`)
  }

  const meter = new Meter(options.progressIntervalMs, options.progress, false, options.brokerCpuMs)
  const limit = options.count ?? Number.POSITIVE_INFINITY
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + options.durationMs
  let endedAt = 0
  meter.start()
  try {
    for (let pass = 0; ; pass++) {
      const before = meter.messages
      const consumer = createConsumer({broker: options.broker, topics: [options.topic], from: 'earliest', stopAtEnd: true, logger: options.logger})
      try {
        for await (const batch of consumer.batches()) {
          const messages = batch.messages
          const take = Math.min(messages.length, limit - meter.messages)
          let bytes = 0
          for (let i = 0; i < take; i++) bytes += messages[i].data.length
          meter.add(take, bytes)
          endedAt = performance.now()
          if (meter.messages >= limit || endedAt >= deadline || options.signal?.aborted) break
        }
      } finally {
        await consumer.stop()
      }
      const more = meter.messages < limit && performance.now() < deadline && options.durationMs !== undefined
      if (!more || meter.messages === before || options.signal?.aborted) break
    }
  } finally {
    meter.stop()
  }
  return summarize('consume', options, meter, 0, (endedAt || performance.now()) - meter.startedAt)
}

/** Messages the broker says the topic holds (0 when it has none). */
async function storedMessages(broker: string, topic: string): Promise<number> {
  const admin = await connectAdmin({broker})
  try {
    const stats = await admin.topic(topic)
    return stats.resultCode === 0 ? stats.messageCount : 0
  } finally {
    admin.close()
  }
}
