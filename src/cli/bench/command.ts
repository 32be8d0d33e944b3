/**
 * What every `meta bench` command does around its runner: start the embedded broker when
 * asked, pick the topic, turn Ctrl-C into a clean early end, run, stop the broker, and
 * render the summary.
 */
import type {Logger} from '../../log.js'
import {formatCount} from '../format.js'
import {selfArgs} from '../self.js'
import {withSpinner} from '../spinner.js'
import {runConsume} from './consume.js'
import {runE2e} from './e2e.js'
import {startEmbeddedBroker, type EmbeddedBroker, type FlushPolicy} from './embedded.js'
import type {RunSummary} from './produce.js'
import {runProduce} from './produce.js'
import {checkVerifiable} from './verify.js'
import type {BenchMode, BenchRunOptions, BenchSummary} from './types.js'

interface BenchCommandFlags {
  /** The broker when not --embedded. */
  broker?: string
  embedded: boolean
  flush?: FlushPolicy
  partitions?: number
  'broker-node-options'?: string
  topic?: string
  size: number
  count?: number
  duration?: number
  'max-in-flight': number
  'max-in-flight-bytes': number
  rate?: number
  connections: number
  'plain-put'?: boolean
  /** produce only. */
  verify?: boolean
  interval: number
  quiet: boolean
  warmup?: number
}

interface BenchContext {
  /** The package root (bin/run.js lives under it). */
  root: string
  logger?: Logger
  /** Where progress and status lines go (stderr). */
  status: (line: string) => void
  /** --json: no spinner. */
  json?: boolean
}

/** Run one bench mode as its command does; resolves with the summary. */
export async function runBench(mode: BenchMode, flags: BenchCommandFlags, context: BenchContext): Promise<BenchSummary> {
  const flush: FlushPolicy = flags.flush ?? 'threshold'
  if (flags.verify === true) checkVerifiable(flags.size)
  let embedded: EmbeddedBroker | undefined
  if (flags.embedded) {
    embedded = await withSpinner(
      'starting an embedded broker',
      () =>
        startEmbeddedBroker({
          self: selfArgs(context.root),
          flush,
          partitions: flags.partitions,
          nodeArgs: flags['broker-node-options']?.split(/\s+/).filter(Boolean),
        }),
      {disabled: flags.quiet || context.json},
    )
    context.status(`embedded broker (pid ${embedded.pid}) on ${embedded.address}, ${flush} flush, ${flags.partitions ?? 1} partition(s)`)
  }
  const abort = new AbortController()
  const onSignal = () => {
    context.status('interrupted: finishing what is in flight (again to force)')
    process.off('SIGINT', onSignal)
    abort.abort()
  }
  process.once('SIGINT', onSignal)
  try {
    const options: BenchRunOptions & {warmupMs?: number} = {
      broker: embedded?.address ?? flags.broker!,
      topic: flags.topic ?? `bench-${Date.now().toString(36)}-${process.pid}`,
      messageBytes: flags.size,
      count: flags.count,
      durationMs: flags.duration,
      maxInFlight: windowOf(flags),
      rate: flags.rate,
      connections: flags.connections,
      plainPut: flags['plain-put'] === true,
      verify: flags.verify === true,
      progressIntervalMs: flags.quiet ? 0 : flags.interval,
      progress: flags.quiet ? () => {} : context.status,
      spinner: !flags.quiet && !context.json,
      signal: abort.signal,
      logger: context.logger,
      warmupMs: flags.warmup,
      brokerCpuMs: embedded?.cpuMs,
    }
    const run: RunSummary = mode === 'produce' ? await runProduce(options) : mode === 'consume' ? await runConsume(options) : await runE2e(options)
    return {
      ...run,
      embedded: embedded !== undefined,
      flush: embedded === undefined ? null : flush,
      partitions: embedded === undefined ? null : (flags.partitions ?? 1),
      put: flags['plain-put'] === true ? 'plain' : 'batch',
    }
  } finally {
    process.off('SIGINT', onSignal)
    await embedded?.stop()
  }
}

/** The human summary (stdout). */
export function renderSummary(s: BenchSummary): string {
  const lines = [
    `${s.mode}: ${formatCount(s.messages)} messages of ${s.messageBytes} B in ${(s.elapsedMs / 1000).toFixed(2)} s` +
      `  →  ${formatCount(s.msgsPerSec)} msg/s  ${s.mbPerSec.toFixed(1)} MB/s` +
      (s.failed > 0 ? `  (${formatCount(s.failed)} failed)` : '') +
      (s.unacknowledged > 0 ? `  (${formatCount(s.unacknowledged)} not acknowledged in time: the broker may have stored them)` : ''),
  ]
  if (s.latency !== null) {
    const l = s.latency
    const ms = (v: number) => `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms`
    lines.push(`  ${l.kind} latency: p50 ${ms(l.p50)}  p95 ${ms(l.p95)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`)
  }
  lines.push(
    `  cpu per message: client ${s.cpu.clientUsPerMsg.toFixed(2)} µs` + (s.cpu.brokerUsPerMsg === null ? '' : `, broker ${s.cpu.brokerUsPerMsg.toFixed(2)} µs`),
  )
  if (s.verify !== null) {
    const v = s.verify
    lines.push(
      `  read back and verified: ${formatCount(v.messages)} messages (all ${formatCount(v.acknowledged)} acknowledged, each once, intact) in ${(v.elapsedMs / 1000).toFixed(2)} s` +
        `  →  ${formatCount(v.msgsPerSec)} msg/s  ${v.mbPerSec.toFixed(1)} MB/s; cpu per message: client ${v.cpu.clientUsPerMsg.toFixed(2)} µs` +
        (v.cpu.brokerUsPerMsg === null ? '' : `, broker ${v.cpu.brokerUsPerMsg.toFixed(2)} µs`),
    )
  }
  const broker = s.embedded ? `embedded broker (${s.flush} flush, ${s.partitions} partition${s.partitions === 1 ? '' : 's'})` : `broker ${s.broker}`
  lines.push(
    `  ${broker}, ${s.put === 'plain' ? 'plain put' : 'put-batch'}, topic ${s.topic}, ${s.connections} connection${s.connections === 1 ? '' : 's'}, max in flight ${s.maxInFlight}` +
      (s.rate === null ? '' : `, rate ${formatCount(s.rate)} msg/s`),
  )
  return `${lines.join('\n')}\n`
}

/**
 * Puts unacknowledged at once per connection: --max-in-flight, but never more payload bytes
 * than --max-in-flight-bytes (4096 puts of 1 MB would be 4 GB in flight: memory, then
 * timeouts of puts the broker did store). At least one.
 */
function windowOf(flags: Pick<BenchCommandFlags, 'max-in-flight' | 'max-in-flight-bytes' | 'size'>): number {
  return Math.max(1, Math.min(flags['max-in-flight'], Math.floor(flags['max-in-flight-bytes'] / Math.max(1, flags.size))))
}
