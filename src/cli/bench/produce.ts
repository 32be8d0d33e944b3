/**
 * `meta bench produce`: put throughput and acknowledgement latency (put sent → result
 * received). Every message carries the same payload of `messageBytes` bytes.
 */
import {MB, Meter} from './meter.js'
import {closeProducers, openProducers, sendLoad, SEND_TIMEOUT_MS} from './load.js'
import type {BenchRunOptions, BenchSummary} from './types.js'
import {VerifiedPayloads} from './verify.js'

/** Default length of a produce run when neither --count nor --duration is given. */
export const DEFAULT_DURATION_MS = 10_000

export type RunSummary = Omit<BenchSummary, 'embedded' | 'flush' | 'partitions' | 'put'>

export async function runProduce(options: BenchRunOptions): Promise<RunSummary> {
  const payload = Buffer.alloc(options.messageBytes, 'x')
  const verified = options.verify === true ? new VerifiedPayloads(options.messageBytes) : undefined
  const producers = await openProducers(options, payload)
  const meter = new Meter(options.progressIntervalMs, options.progress, true, options.brokerCpuMs)
  let failed = 0
  let unacknowledged = 0
  let firstError: string | undefined
  const bytes = options.messageBytes
  try {
    meter.start()
    const durationMs = options.count === undefined ? (options.durationMs ?? DEFAULT_DURATION_MS) : options.durationMs
    const result = await sendLoad(producers, {
      ...options,
      durationMs,
      payload: verified === undefined ? () => payload : () => verified.payload(),
      onAck: (r, sentAt, body, ackedAt) => {
        if (r.success) {
          verified?.acknowledged(body)
          meter.add(1, bytes)
          meter.latency(ackedAt - sentAt)
        } else if (r.error?.code === 'TIMEOUT') {
          // No answer in time: the broker may well have stored it; say so rather than "failed".
          unacknowledged += 1
        } else {
          failed += 1
          firstError ??= r.errorMessage
        }
      },
    })
    meter.stop()
    if (failed > 0) options.progress(`${failed} sends failed; first error: ${firstError}`)
    if (unacknowledged > 0)
      options.progress(`${unacknowledged} sends were not acknowledged within ${SEND_TIMEOUT_MS / 1000} s: the broker may have stored them`)
    const summary = summarize('produce', options, meter, failed, result.endedAt - result.startedAt, unacknowledged)
    await closeProducers(producers)
    if (verified !== undefined) summary.verify = await verified.readBack(options)
    return summary
  } finally {
    meter.stop()
    await closeProducers(producers)
  }
}

export function summarize(
  mode: BenchSummary['mode'],
  options: BenchRunOptions,
  meter: Meter,
  failed: number,
  elapsedMs: number,
  unacknowledged = 0,
): RunSummary {
  const seconds = elapsedMs / 1000
  const latency = meter.total.count === 0 ? null : {kind: mode === 'e2e' ? ('end-to-end' as const) : ('ack' as const), ...meter.total.percentiles()}
  return {
    mode,
    broker: options.broker,
    topic: options.topic,
    messageBytes: options.messageBytes,
    connections: options.connections,
    maxInFlight: options.maxInFlight,
    rate: options.rate ?? null,
    messages: meter.messages,
    failed,
    unacknowledged,
    bytes: meter.bytes,
    elapsedMs: Math.round(elapsedMs * 10) / 10,
    msgsPerSec: seconds > 0 ? Math.round(meter.messages / seconds) : 0,
    mbPerSec: seconds > 0 ? Math.round((meter.bytes / MB / seconds) * 100) / 100 : 0,
    latency: mode === 'consume' ? null : latency,
    cpu: {
      clientUsPerMsg: perMessage(meter.clientCpuMs, meter.messages)!,
      brokerUsPerMsg: meter.brokerCpuMs === null ? null : perMessage(meter.brokerCpuMs, meter.messages),
    },
    verify: null,
  }
}

function perMessage(cpuMs: number, messages: number): number {
  return messages === 0 ? 0 : Math.round((cpuMs * 1000 * 100) / messages) / 100
}
