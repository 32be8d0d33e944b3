/**
 * What `meta bench` runs take and what they report (the `--json` summary).
 */
import type {Logger} from '../../log.js'
import type {FlushPolicy} from './embedded.js'
import type {LatencyPercentiles} from './histogram.js'

export type BenchMode = 'produce' | 'consume' | 'e2e'

export interface BenchRunOptions {
  /** host:port of the broker. */
  broker: string
  topic: string
  /** Payload bytes per message. */
  messageBytes: number
  /** Stop after this many messages … */
  count?: number
  /** … or after this long (when neither: the mode's default). */
  durationMs?: number
  /** Unacknowledged messages per producer connection (already bounded by --max-in-flight-bytes). */
  maxInFlight: number
  /** Target send rate in messages/s (undefined = as fast as acknowledgements allow). */
  rate?: number
  /** Producer connections. */
  connections: number
  /** Send MetaQ's plain put per message instead of put-batch frames (--plain-put). */
  plainPut?: boolean
  /** produce: stamp every payload, read the topic back afterwards and check every message (--verify). */
  verify?: boolean
  /** Progress line interval (0 = none). */
  progressIntervalMs: number
  /** Where progress lines go. */
  progress: (line: string) => void
  /** The broker's CPU time so far in ms, when it can be read (an embedded broker on Linux). */
  brokerCpuMs?: () => number | undefined
  /** Show a spinner (on a terminal) during unmeasured phases: warm-up, filling a topic. */
  spinner?: boolean
  /** Aborting ends the run early (Ctrl-C): sending stops, what is in flight is awaited. */
  signal?: AbortSignal
  logger?: Logger
}

interface BenchLatency extends LatencyPercentiles {
  /** ack = put sent → result received; end-to-end = put sent → message received by a consumer. */
  kind: 'ack' | 'end-to-end'
}

/** The result of one run, as `--json` prints it. Times in ms, throughput of payload bytes. */
export interface BenchSummary {
  mode: BenchMode
  broker: string
  /** The broker was started by the bench (`--embedded`). */
  embedded: boolean
  /** The embedded broker's flush policy (null for an external broker: its config decides). */
  flush: FlushPolicy | null
  topic: string
  messageBytes: number
  /** The embedded broker's partitions per topic (null for an external broker). */
  partitions: number | null
  /** How messages were put: MetaQ's plain put per message (--plain-put) or meta's put-batch. */
  put: 'plain' | 'batch'
  connections: number
  maxInFlight: number
  /** Target rate in messages/s, null when unlimited. */
  rate: number | null
  /** Messages acknowledged (produce) or received (consume, e2e) in the measured run. */
  messages: number
  /** Sends that failed (produce, e2e) plus, for e2e, messages sent but never received. */
  failed: number
  /**
   * Puts with no acknowledgement within the deadline (produce): not counted as failed, since
   * the broker may have stored them. Bounding the bytes in flight (--max-in-flight-bytes)
   * keeps this at 0 for any message size the broker accepts.
   */
  unacknowledged: number
  /** Payload bytes of `messages`. */
  bytes: number
  elapsedMs: number
  msgsPerSec: number
  /** Payload MB/s, 1 MB = 10^6 bytes. */
  mbPerSec: number
  latency: BenchLatency | null
  /**
   * CPU time per message in µs during the measured run: this process (the load generator)
   * and the broker (null unless embedded on Linux). On a machine shared with other work these
   * are steadier than wall-clock rates; with a core each, throughput ≈ 10^6 / the larger one.
   */
  cpu: {clientUsPerMsg: number; brokerUsPerMsg: number | null}
  /** produce --verify: the read-back that checked every message (null without --verify). */
  verify: BenchVerify | null
}

/** The read-back of `produce --verify`: every acknowledged message came back once, intact. */
export interface BenchVerify {
  /** Messages of this run read back (each checked: CRC by the consumer, every payload byte here). */
  messages: number
  /** Messages the broker acknowledged (all of them were among those read back). */
  acknowledged: number
  elapsedMs: number
  /** Replay rate of the read-back (all messages read, this run's or not). */
  msgsPerSec: number
  mbPerSec: number
  cpu: {clientUsPerMsg: number; brokerUsPerMsg: number | null}
}
