/**
 * Refusing commits outside what the client knows of a partition, before they are written.
 * ZooKeeper, MySQL and file stores are written by clients directly (MetaQ
 * clients do the same), so no broker sees those commits; meta's client checks them itself:
 *
 * - the partition must be one the topology lists for the topic (when it lists any of its
 *   broker's: a MetaQ broker reached without ZooKeeper does not say, and a broker missing from
 *   ZooKeeper for a moment — its session expired, the quorum lost — is a range that cannot be
 *   learnt, not a wrong partition);
 * - the offset must be no further than the end of the partition's log. The end is asked from
 *   the partition's broker with MetaQ's `offset` command (the nearest valid offset of a
 *   position past the end is the end; 404 = no data yet = 0), only when an offset is beyond the
 *   highest end already seen, so a consumer's steady commits cost no request.
 *
 * A range that cannot be learnt (broker unreachable, timeout) is not checked: the commit goes
 * ahead, exactly as it would without this wrapper. Nor is it while the partition is read from
 * a slave: an asynchronous slave's log may end before its master's, so a position read from
 * the master before the switch is not out of range. A refused commit writes nothing.
 */
import {encodeOffset} from '../../protocol/commands/offset.js'
import {MetaError} from '../../protocol/errors.js'
import {silentLogger, type Logger} from '../../log.js'
import {offsetKey, type OffsetEntry, type OffsetStore} from '../offset-store.js'
import type {Topology} from '../topology.js'
import type {Partition} from '../types.js'
import {checkEntries} from './entries.js'

/** How long to wait for a broker's log end before committing unchecked. */
const END_TIMEOUT_MS = 5000

export class RangeCheckedOffsetStore implements OffsetStore {
  /** Highest log end seen per `topic brokerId-partition`. */
  private readonly ends = new Map<string, number>()

  constructor(
    private readonly inner: OffsetStore,
    private readonly topology: Topology,
    private readonly log: Logger = silentLogger,
  ) {}

  load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>> {
    return this.inner.load(group, topic, partitions)
  }

  /** Throws INVALID_ARGUMENT naming the first entry out of range; otherwise commits them all. */
  async commit(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    await this.check(group, entries)
    return this.inner.commit(group, entries)
  }

  close(): Promise<void> {
    return this.inner.close()
  }

  /** Throws INVALID_ARGUMENT for the first entry whose partition or offset is out of range. */
  async check(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    checkEntries(entries)
    const listed = new Map<string, Promise<Partition[] | undefined>>()
    for (const e of entries) {
      const key = offsetKey(e.partition)
      if (!listed.has(e.topic)) listed.set(e.topic, this.partitions(e.topic))
      const partitions = await listed.get(e.topic)!
      const ofItsBroker = partitions?.filter((p) => p.brokerId === e.partition.brokerId) ?? []
      if (ofItsBroker.length > 0 && !ofItsBroker.some((p) => offsetKey(p) === key)) {
        throw MetaError.invalidArgument(`invalid partition ${key} for topic "${e.topic}": expected one of ${ofItsBroker.map(offsetKey).join(', ')}`, {
          topic: e.topic,
          partition: key,
        })
      }
      const endKey = `${e.topic} ${key}`
      if (e.offset <= (this.ends.get(endKey) ?? 0)) continue
      const end = await this.end(group, e.topic, e.partition)
      if (end === undefined) continue
      this.ends.set(endKey, Math.max(end, this.ends.get(endKey) ?? 0))
      if (e.offset > end) {
        throw MetaError.invalidArgument(`invalid offset ${e.offset} for topic "${e.topic}" partition ${key}: expected 0..${end} (the end of its log)`, {
          topic: e.topic,
          partition: key,
          offset: e.offset,
        })
      }
    }
  }

  private async partitions(topic: string): Promise<Partition[] | undefined> {
    try {
      return await this.topology.subscribePartitions(topic)
    } catch (error) {
      this.log.debug('partitions unknown; commit not checked against them', {topic, error: (error as Error).message})
      return undefined
    }
  }

  /** The partition's log end as its broker reports it, or undefined when it cannot be learnt. */
  private async end(group: string, topic: string, partition: Partition): Promise<number | undefined> {
    if (this.topology.readsFromSlave?.(partition.brokerId) === true) return undefined
    try {
      const conn = await this.topology.connection(partition.brokerId)
      const frame = await conn.requestAsync(
        (out, opaque) => encodeOffset(out, {topic, group, partition: partition.partition, offset: Number.MAX_SAFE_INTEGER, opaque}),
        END_TIMEOUT_MS,
      )
      if (frame.type !== 'result') return undefined
      if (frame.code === 404) return 0
      const end = Number(frame.body.toString('latin1'))
      return frame.code === 200 && Number.isSafeInteger(end) ? end : undefined
    } catch (error) {
      this.log.debug('log end unknown; commit not checked against it', {topic, partition: offsetKey(partition), error: (error as Error).message})
      return undefined
    }
  }
}
