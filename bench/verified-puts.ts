/**
 * Shared by bench/connections.ts, bench/partitions.ts and bench/redis-replay.ts: one timed
 * `meta bench produce --verify` run (100 B by default) against a running broker, failing unless
 * every put was acknowledged and read back exactly once, intact.
 */
import type {EmbeddedBroker} from '../src/cli/bench/embedded.js'
import {runProduce, type RunSummary} from '../src/cli/bench/produce.js'

export interface VerifiedPutsOptions {
  topic: string
  count: number
  connections?: number
  maxInFlight?: number
  /** MetaQ's plain put (default) or meta's put-batch. */
  plainPut?: boolean
  messageBytes?: number
}

export async function verifiedPuts(broker: EmbeddedBroker, o: VerifiedPutsOptions): Promise<RunSummary> {
  const s = await runProduce({
    broker: broker.address,
    topic: o.topic,
    messageBytes: o.messageBytes ?? 100,
    count: o.count,
    maxInFlight: o.maxInFlight ?? 1000,
    connections: o.connections ?? 1,
    plainPut: o.plainPut ?? true,
    verify: true,
    progressIntervalMs: 0,
    progress: (line) => process.stderr.write(`${line}\n`),
    brokerCpuMs: broker.cpuMs,
  })
  if (s.failed > 0 || s.unacknowledged > 0) throw new Error(`${o.topic}: ${s.failed} puts failed, ${s.unacknowledged} unacknowledged`)
  if (s.messages !== o.count || s.verify === null || s.verify.messages !== s.verify.acknowledged) {
    throw new Error(`${o.topic}: ${s.messages} of ${o.count} acknowledged, ${s.verify?.messages} read back`)
  }
  return s
}
