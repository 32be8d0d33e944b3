/**
 * Where a topic's partitions live and how to reach their brokers. The producer and consumer
 * work against this interface; standalone mode has one broker (this file), cluster mode reads
 * ZooKeeper (src/client/cluster-topology.ts).
 */
import {EventEmitter} from 'node:events'
import {encodePartitions} from '../protocol/commands/partitions.js'
import type {Logger} from '../log.js'
import {parseBrokerAddress, type BrokerAddress} from './address.js'
import {BrokerConnection} from './connection.js'
import {resultText} from './connection-errors.js'
import type {ConnectionOptions} from './connection-options.js'
import type {Partition, Topology} from './types.js'
import {ClusterTopology} from './cluster-topology.js'
import {MetaError} from '../protocol/errors.js'

export type {Topology} from './types.js'

export interface StandaloneTopologyOptions extends Omit<ConnectionOptions, 'host' | 'port'> {
  broker: string | BrokerAddress
  logger?: Logger
  /**
   * How often the partition counts of the topics in use are asked again, in ms (default
   * 30 s; 0 = never), so partitions a broker gains by a reload are used without a restart.
   * A change emits 'change' (topic).
   */
  refreshMs?: number
}

/** Default {@link StandaloneTopologyOptions.refreshMs}. */
const DEFAULT_TOPOLOGY_REFRESH_MS = 30_000

/** The topology a client's options ask for: ZooKeeper with `zk`, else one broker. */
export function createTopology(options: {
  broker?: string
  zk?: string
  zkRoot?: string
  logger?: Logger
  requestTimeoutMs?: number
  /** Standalone: see {@link StandaloneTopologyOptions.refreshMs}. Cluster mode follows ZooKeeper watches instead. */
  refreshMs?: number
}): Topology {
  if (options.zk !== undefined && options.broker !== undefined) {
    throw MetaError.invalidArgument('both a broker address and a ZooKeeper connect string were given: expected one of them')
  }
  if (options.zk !== undefined) {
    return new ClusterTopology({zk: options.zk, zkRoot: options.zkRoot, logger: options.logger, requestTimeoutMs: options.requestTimeoutMs})
  }
  return new StandaloneTopology({
    broker: options.broker ?? '127.0.0.1:8123',
    logger: options.logger,
    requestTimeoutMs: options.requestTimeoutMs,
    refreshMs: options.refreshMs,
  })
}

/** One broker, reached directly (no ZooKeeper). */
export class StandaloneTopology extends EventEmitter implements Topology {
  readonly conn: BrokerConnection
  private readonly partitionCounts = new Map<string, Promise<number>>()
  private readonly refreshTimer: NodeJS.Timeout | undefined

  constructor(options: StandaloneTopologyOptions) {
    super()
    const address = typeof options.broker === 'string' ? parseBrokerAddress(options.broker) : options.broker
    this.conn = new BrokerConnection({...options, ...address})
    const refreshMs = options.refreshMs ?? DEFAULT_TOPOLOGY_REFRESH_MS
    if (refreshMs > 0) {
      this.refreshTimer = setInterval(() => void this.refresh(), refreshMs)
      this.refreshTimer.unref()
    }
  }

  /** The broker's id as it reports it (0 for a MetaQ broker, which does not say). */
  get brokerId(): number {
    return this.conn.capabilities.brokerId ?? 0
  }

  async publishPartitions(topic: string): Promise<Partition[]> {
    await this.conn.ready()
    if (!this.conn.capabilities.meta) return []
    const count = await this.partitionCount(topic)
    return Array.from({length: count}, (_, partition) => ({brokerId: this.brokerId, partition}))
  }

  async subscribePartitions(topic: string): Promise<Partition[]> {
    const partitions = await this.publishPartitions(topic)
    return partitions.sort((a, b) => (`${a.brokerId}-${a.partition}` < `${b.brokerId}-${b.partition}` ? -1 : 1))
  }

  async connection(_brokerId: number): Promise<BrokerConnection> {
    await this.conn.ready()
    return this.conn
  }

  brokerIds(): number[] {
    return [this.brokerId]
  }

  invalidate(topic: string): void {
    this.partitionCounts.delete(topic)
  }

  async close(): Promise<void> {
    if (this.refreshTimer !== undefined) clearInterval(this.refreshTimer)
    this.conn.close()
  }

  /** Ask again for the partition counts in use; emit 'change' for each topic whose count moved. */
  private async refresh(): Promise<void> {
    if (this.conn.isClosed || !this.conn.capabilities.meta) return
    for (const [topic, cached] of [...this.partitionCounts]) {
      const before = await cached.catch(() => undefined)
      this.partitionCounts.delete(topic)
      const after = await this.partitionCount(topic).catch(() => undefined)
      if (before !== undefined && after !== undefined && before !== after) this.emit('change', topic)
    }
  }

  private partitionCount(topic: string): Promise<number> {
    let count = this.partitionCounts.get(topic)
    if (count === undefined) {
      count = this.conn.requestAsync((out, opaque) => encodePartitions(out, {topic, opaque})).then((frame) => Number(resultText(frame)))
      // Forget a failed lookup so the next send asks again; its caller gets the error from `count`.
      count.catch(() => this.partitionCounts.delete(topic))
      this.partitionCounts.set(topic, count)
    }
    return count
  }
}
