/**
 * `meta bench tx`: committed local transactions per second with N messages each. For each N
 * of --per-tx, --connections producers each run begin → N sends → commit in a loop for
 * --duration; a transaction counts once its commit is acknowledged (its messages appended and
 * visible). Latency = begin → commit acknowledged.
 */
import {performance} from 'node:perf_hooks'
import type {Logger} from '../../log.js'
import {formatCount} from '../format.js'
import {selfArgs} from '../self.js'
import {startEmbeddedBroker, type EmbeddedBroker, type FlushPolicy} from './embedded.js'
import {LatencyHistogram, type LatencyPercentiles} from './histogram.js'

interface TxBenchOptions {
  broker?: string
  embedded: boolean
  flush?: FlushPolicy
  root: string
  topic?: string
  messageBytes: number
  perTx: number[]
  durationMs: number
  connections: number
  status: (line: string) => void
  logger?: Logger
}

interface TxBenchRow {
  messagesPerTx: number
  transactions: number
  txPerSec: number
  msgsPerSec: number
  failed: number
  latency: LatencyPercentiles
}

export interface TxBenchSummary {
  broker: string
  embedded: boolean
  flush: FlushPolicy | null
  messageBytes: number
  connections: number
  durationMs: number
  runs: TxBenchRow[]
}

export async function runTxBench(options: TxBenchOptions): Promise<TxBenchSummary> {
  let embedded: EmbeddedBroker | undefined
  const flush = options.flush ?? 'threshold'
  if (options.embedded) {
    embedded = await startEmbeddedBroker({self: selfArgs(options.root), flush})
    options.status(`embedded broker (pid ${embedded.pid}) on ${embedded.address}, ${flush} flush`)
  }
  const broker = embedded?.address ?? options.broker!
  const {createProducer} = await import('../../client/producer.js')
  const producers = Array.from({length: options.connections}, () => createProducer({broker, logger: options.logger, sendTimeoutMs: 30_000}))
  const payload = Buffer.alloc(options.messageBytes, 0x61)
  const runs: TxBenchRow[] = []
  try {
    for (const n of options.perTx) {
      const topic = options.topic ?? `bench-tx-${Date.now().toString(36)}-${process.pid}`
      const histogram = new LatencyHistogram()
      let transactions = 0
      let failed = 0
      const started = performance.now()
      const deadline = started + options.durationMs
      await Promise.all(
        producers.map(async (producer) => {
          while (performance.now() < deadline) {
            const begin = performance.now()
            producer.beginTransaction()
            const sends: Array<Promise<unknown>> = []
            for (let i = 0; i < n; i++) sends.push(producer.send(topic, payload))
            await Promise.all(sends)
            try {
              await producer.commit()
              transactions += 1
              histogram.record(performance.now() - begin)
            } catch {
              failed += 1
            }
          }
        }),
      )
      const elapsedS = (performance.now() - started) / 1000
      const row = {
        messagesPerTx: n,
        transactions,
        txPerSec: Math.round(transactions / elapsedS),
        msgsPerSec: Math.round((transactions * n) / elapsedS),
        failed,
        latency: histogram.percentiles(),
      }
      options.status(`${n} message${n === 1 ? '' : 's'} per transaction: ${formatCount(row.txPerSec)} tx/s, ${formatCount(row.msgsPerSec)} msg/s`)
      runs.push(row)
    }
  } finally {
    await Promise.all(producers.map((p) => p.close()))
    await embedded?.stop()
  }
  return {
    broker,
    embedded: embedded !== undefined,
    flush: embedded === undefined ? null : flush,
    messageBytes: options.messageBytes,
    connections: options.connections,
    durationMs: options.durationMs,
    runs,
  }
}

export function renderTxBench(s: TxBenchSummary): string {
  const ms = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1))
  const lines = [
    `transactions of ${s.messageBytes} B messages, ${s.connections} connection${s.connections === 1 ? '' : 's'}, ${(s.durationMs / 1000).toFixed(0)} s each:`,
  ]
  for (const r of s.runs) {
    lines.push(
      `  ${String(r.messagesPerTx).padStart(4)} msg/tx: ${formatCount(r.txPerSec).padStart(7)} tx/s ${formatCount(r.msgsPerSec).padStart(9)} msg/s` +
        `  commit latency p50 ${ms(r.latency.p50)} ms  p99 ${ms(r.latency.p99)} ms` +
        (r.failed > 0 ? `  (${formatCount(r.failed)} failed)` : ''),
    )
  }
  lines.push(`  ${s.embedded ? `embedded broker (${s.flush} flush)` : `broker ${s.broker}`}`)
  return `${lines.join('\n')}\n`
}
