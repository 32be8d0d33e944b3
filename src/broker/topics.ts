/**
 * Which topics and partitions this broker serves: resolved topic settings (cached, as the put
 * path asks for every message), partition choice for `-1`, and closed partitions (spec §10:
 * close-partitions makes put and get answer 403; in memory only, as in MetaQ).
 */
import {isValidTopicName} from '../protocol/names.js'
import {resolveTopic, type BrokerConfig, type ResolvedTopic} from './config/index.js'

export class TopicRegistry {
  private cache = new Map<string, ResolvedTopic | null>()
  private closed = new Set<string>()

  constructor(private config: BrokerConfig) {}

  /** Replace the config (reload); cached resolutions are dropped. */
  setConfig(config: BrokerConfig): void {
    this.config = config
    this.cache.clear()
  }

  /** The topic's settings, or undefined when this broker does not accept it. */
  resolve(topic: string): ResolvedTopic | undefined {
    let resolved = this.cache.get(topic)
    if (resolved === undefined) {
      resolved = isValidTopicName(topic) ? (resolveTopic(this.config, topic) ?? null) : null
      // Bound the cache: names come from clients, and unaccepted ones are cheap to recompute.
      if (this.cache.size > 100_000) this.cache.clear()
      this.cache.set(topic, resolved)
    }
    return resolved ?? undefined
  }

  /** A random partition in [0, numPartitions), MetaQ's choice for partition -1. */
  randomPartition(topic: ResolvedTopic): number {
    return Math.floor(Math.random() * topic.numPartitions)
  }

  isClosed(topic: string, partition: number): boolean {
    return this.closed.size > 0 && this.closed.has(`${topic}\0${partition}`)
  }

  /** Close partitions [start, end] of a topic: put and get answer 403 until reopened. */
  close(topic: string, start: number, end: number): void {
    for (let p = start; p <= end; p++) this.closed.add(`${topic}\0${p}`)
  }

  /** Reopen every closed partition of a topic. */
  open(topic: string): void {
    for (const key of this.closed) if (key.startsWith(`${topic}\0`)) this.closed.delete(key)
  }

  /** Configured topic patterns without wildcards (registered and listed even before data). */
  configuredTopics(): string[] {
    return this.config.topics.map((t) => t.pattern).filter((p) => !p.includes('*'))
  }
}
