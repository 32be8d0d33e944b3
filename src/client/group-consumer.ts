/**
 * The group consumer: the members of a group share the partitions of their topics, resume
 * from the group's committed offsets, and hand partitions over without delivering a message
 * to two members at once (docs/protocol.md#consumers).
 *
 *   const consumer = createGroupConsumer({broker: '127.0.0.1:8123', group: 'billing', topics: ['orders']})
 *   await consumer.run({eachMessage: async (m) => { … }})   // retried, then recovered (see below)
 *   // or: for await (const m of consumer) { … }
 *   await consumer.stop()                                  // commit, leave
 *
 * Rebalance (on every new membership view, one at a time):
 *   1. compute my partitions with the strategy (MetaQ's DEFAULT unless told otherwise);
 *   2. for partitions I lose: stop fetching, wait for the message in hand, commit, release;
 *   3. claim my partitions (granted only once their previous owner released them), load their
 *      committed offsets (or start at the earliest / latest offset) and fetch.
 * Offsets are committed every `commitIntervalMs` (MetaQ: 5 s), before a partition is given
 * up, and on stop() — only for processed messages (at-least-once).
 *
 * Handler failures (run API): a message whose handler throws is retried up to
 * `maxFetchRetries` times, then given to the recover store (retried in the background) or
 * dropped (`onFailure: 'drop'`), and consumption moves on. A `filter` skips messages (their
 * offsets still advance).
 */
import {hostname, networkInterfaces} from 'node:os'
import {randomUUID} from 'node:crypto'
import {isMetaError, MetaError} from '../protocol/errors.js'
import {validateGroupName} from '../protocol/names.js'
import {assign, type AssignmentStrategy} from './assignment.js'
import {ConsumerBase, endOffset, partitionKey, TAIL_OFFSET, type ConsumerBaseOptions, type RunHandlers, type StartResolver} from './consumer.js'
import type {PartitionFetcher} from './fetcher.js'
import {StandaloneMembership, type GroupMembership, type MembershipView, type OwnedPartition} from './membership.js'
import {BrokerOffsetStore, offsetKey, type OffsetEntry, type OffsetStore} from './offset-store.js'
import {RecoverStore} from './recover-store.js'
import {ClusterTopology} from './cluster-topology.js'
import {ClusterMembership} from './cluster-membership.js'
import {ZkOffsetStore} from './offset-stores/zk-offset-store.js'
import {RangeCheckedOffsetStore} from './offset-stores/range-check.js'
import type {Message, Partition} from './types.js'

export interface GroupConsumerOptions extends Omit<ConsumerBaseOptions, 'filter'> {
  group: string
  /** Default `<group>_<host>-<pid>-<uuid>` (MetaQ's consumerIdString). */
  memberId?: string
  /** How long the coordinator waits without a heartbeat before evicting this member (default 30000). */
  sessionTimeoutMs?: number
  /** Periodic commit (default 5000, MetaQ's commitOffsetPeriodInMills). */
  commitIntervalMs?: number
  /** Where offsets live (default: the broker in standalone mode). */
  offsetStore?: OffsetStore
  /** Partitions without a committed offset start at the end (MetaQ's consumeFromMaxOffset). */
  fromLatest?: boolean
  /** Ignore committed offsets and always start at the end (MetaQ's alwaysConsumeFromMaxOffset). */
  alwaysFromLatest?: boolean
  strategy?: AssignmentStrategy
  /** Membership (default: the standalone broker coordinates; cluster mode passes ZooKeeper's). */
  membership?: GroupMembership
  /** Every consumer gets every partition; offsets are its own (MetaQ's broadcast consumer). */
  broadcast?: boolean
  /** Handler attempts per message before it is given up (default 5). */
  maxFetchRetries?: number
  /** What happens to a message whose handler kept failing (default 'recover'). */
  onFailure?: 'recover' | 'drop'
  /** Directory of the recover store (default ~/.meta_recover). */
  recoverDir?: string
  /** How often recovered messages are retried (default 300000; the first run after 5 s). */
  recoverIntervalMs?: number
  /**
   * Skip messages the filter rejects (their offsets still advance): a function runs here, a
   * filter expression (a string) runs on the broker, which then sends only what matches.
   */
  filter?: string | ((message: Message) => boolean)
  /**
   * Where each newly assigned partition starts, overriding its committed offset (a seek on
   * start, e.g. `meta tail --group g -o @-1h`); undefined keeps the committed offset.
   */
  from?: StartResolver
  /** Stop each assigned partition at the end it had when assigned; end the iteration when all did. */
  stopAtEnd?: boolean
  /** Commit offsets (default true); false reads without moving the group (peek). */
  autoCommit?: boolean
}

const CLAIM_WAIT_MS = 5_000

export class GroupConsumer extends ConsumerBase {
  readonly group: string
  readonly memberId: string
  private readonly options: GroupConsumerOptions
  private readonly offsetStore: OffsetStore
  private membership: GroupMembership | undefined
  private readonly owned = new Map<string, OwnedPartition>()
  private view: MembershipView | undefined
  private rebalancing: Promise<void> = Promise.resolve()
  private pendingView: MembershipView | undefined
  private commitTimer: NodeJS.Timeout | undefined
  private recover: RecoverStore | undefined
  private committing: Promise<void> = Promise.resolve()
  /** Partitions that reached their stop offset (stopAtEnd). */
  private readonly finishedKeys = new Set<string>()

  constructor(options: GroupConsumerOptions) {
    validateGroupName(options.group)
    const group = options.broadcast ? broadcastGroupName(options.group) : options.group
    super({...options, filter: typeof options.filter === 'string' ? options.filter : undefined}, group)
    this.options = options
    this.group = group
    this.memberId = options.memberId ?? `${group}_${hostname()}-${process.pid}-${randomUUID()}`
    if (options.offsetStore === undefined && options.broadcast) {
      throw MetaError.invalidArgument('a broadcast consumer needs its own offset store (offsetStore), e.g. a FileOffsetStore')
    }
    const topology = this.topology
    const store =
      options.offsetStore ??
      (topology instanceof ClusterTopology ? new ZkOffsetStore(() => topology.session(), topology.paths) : new BrokerOffsetStore(topology))
    // A broker checks the commits it stores; ZooKeeper, MySQL and files take whatever is written.
    this.offsetStore = store instanceof BrokerOffsetStore ? store : new RangeCheckedOffsetStore(store, topology, this.log)
  }

  /** Partitions this member owns now. */
  assignment(): OwnedPartition[] {
    return [...this.owned.values()]
  }

  /**
   * Callback API with MetaQ's failure handling: each message's handler is retried, then
   * recovered or dropped. Resolves when the consumer stops.
   */
  override async run(handlers: RunHandlers): Promise<void> {
    const eachMessage = handlers.eachMessage
    if (eachMessage !== undefined) this.recover = this.createRecoverStore(eachMessage)
    for await (const batch of this.batches()) {
      if (handlers.eachBatch) await handlers.eachBatch(batch)
      if (eachMessage) for (const m of batch.messages) await this.handle(m, eachMessage)
    }
  }

  /** Commit processed offsets now (nothing with autoCommit: false). */
  async commit(): Promise<void> {
    if (this.options.autoCommit === false) return
    // One commit at a time, in order: a later commit (the final one on stop) must not finish
    // before an earlier one still writing older offsets.
    const previous = this.committing
    const next = previous.then(() => this.commitDirty())
    // The caller gets this commit's error through `next`; the chain must not stop at it.
    this.committing = next.catch(() => undefined)
    return next
  }

  private async commitDirty(): Promise<void> {
    const entries: OffsetEntry[] = []
    for (const key of this.dirty) {
      const position = this.processed.get(key)
      const owned = this.owned.get(key)
      if (position === undefined || owned === undefined) continue
      entries.push({topic: owned.topic, partition: owned.partition, offset: position.offset, msgId: position.msgId})
    }
    if (entries.length === 0) return
    for (const e of entries) this.dirty.delete(partitionKey(e.topic, e.partition))
    try {
      await this.offsetStore.commit(this.group, entries)
    } catch (error) {
      for (const e of entries) this.dirty.add(partitionKey(e.topic, e.partition))
      throw error
    }
  }

  protected async begin(): Promise<void> {
    const interval = this.options.commitIntervalMs ?? 5_000
    this.commitTimer = setInterval(() => {
      this.commit().catch((error: Error) => this.log.warn('periodic commit failed', {group: this.group, error: error.message}))
    }, interval)
    this.commitTimer.unref()
    if (this.options.broadcast) {
      await this.rebalance(await this.broadcastView())
      // Partitions a topic gains later are read too, once the topology reports them.
      this.topology.on('change', this.onBroadcastTopologyChange)
      return
    }
    this.membership = this.options.membership ?? (await this.defaultMembership())
    this.membership.on('change', (view: MembershipView) => this.scheduleRebalance(view))
    this.scheduleRebalance(await this.membership.join())
    await this.rebalancing
  }

  private readonly onBroadcastTopologyChange = (topic: string): void => {
    if (this.stopped || !this.topics.includes(topic)) return
    this.broadcastView().then(
      (view) => this.scheduleRebalance(view),
      (error: Error) => this.log.warn('cannot read the partitions again', {topic, error: error.message}),
    )
  }

  protected override async shutdown(): Promise<void> {
    this.topology.off('change', this.onBroadcastTopologyChange)
    if (this.commitTimer) clearInterval(this.commitTimer)
    this.recover?.stop()
    this.membership?.cancelClaims?.()
    await this.rebalancing.catch(() => undefined) // a rebalance handles (logs, retries or fails with) its own errors
    try {
      await this.commit()
    } catch (error) {
      this.log.warn('final commit failed', {group: this.group, error: (error as Error).message})
    }
    await this.membership?.leave()
    await this.offsetStore.close()
  }

  private async defaultMembership(): Promise<GroupMembership> {
    const topology = this.topology
    if (topology instanceof ClusterTopology) {
      return new ClusterMembership({
        session: await topology.session(),
        paths: topology.paths,
        group: this.group,
        memberId: this.memberId,
        topics: this.topics,
        log: this.log,
      })
    }
    const conn = await this.topology.connection(this.topology.brokerIds()[0] ?? 0)
    return new StandaloneMembership({
      conn,
      group: this.group,
      memberId: this.memberId,
      topics: this.topics,
      sessionTimeoutMs: this.options.sessionTimeoutMs ?? 30_000,
      log: this.log,
    })
  }

  /**
   * Every partition of the topics, and those read already: a listing taken while brokers
   * register (a ZooKeeper watch fires per change) may lack some, and a broadcast member only
   * ever adds partitions.
   */
  private async broadcastView(): Promise<MembershipView> {
    const membersByTopic = new Map<string, string[]>()
    const partitionsByTopic = new Map<string, Partition[]>()
    for (const topic of this.topics) {
      membersByTopic.set(topic, [this.memberId])
      const partitions = [...(await this.topology.subscribePartitions(topic))]
      for (const owned of this.owned.values()) {
        if (owned.topic === topic && !partitions.some((p) => partitionKey(topic, p) === partitionKey(topic, owned.partition))) partitions.push(owned.partition)
      }
      partitionsByTopic.set(topic, partitions)
    }
    return {generation: 0, membersByTopic, partitionsByTopic}
  }

  /** Run rebalances one at a time; a view that arrives meanwhile replaces any waiting one. */
  private scheduleRebalance(view: MembershipView): void {
    if (this.stopped) return
    const waiting = this.pendingView !== undefined
    this.pendingView = view
    if (waiting) return
    this.rebalancing = this.rebalancing.then(async () => {
      const next = this.pendingView
      this.pendingView = undefined
      if (next === undefined || this.stopped) return
      try {
        await this.rebalance(next)
      } catch (error) {
        if (this.stopped) return
        if (!isMetaError(error) || !error.retriable) {
          // Retrying would fail the same way (a topic the broker refuses, a bug): stop.
          this.fail(error as Error)
          return
        }
        this.log.warn('rebalance failed; retrying in 500 ms', {group: this.group, generation: next.generation, code: error.code, error: error.message})
        setTimeout(() => this.scheduleRebalance(this.pendingView ?? next), 500).unref()
      }
    })
  }

  private async rebalance(view: MembershipView): Promise<void> {
    this.view = view
    const desired = new Map<string, OwnedPartition>()
    for (const topic of this.topics) {
      const partitions = view.partitionsByTopic.get(topic) ?? []
      const members = view.membersByTopic.get(topic) ?? []
      for (const partition of assign(this.options.strategy ?? 'default', members, partitions, this.memberId)) {
        desired.set(partitionKey(topic, partition), {topic, partition})
      }
    }
    const lost = [...this.owned.keys()].filter((key) => !desired.has(key))
    for (const key of lost) await this.removeFetcher(key)
    if (lost.length > 0) await this.commit()
    const released = lost.map((key) => this.owned.get(key)!)
    for (const key of lost) this.owned.delete(key)
    this.emit('rebalance', {generation: view.generation, assigned: [...desired.values()], revoked: released})
    await this.claimAndStart([...desired.values()], released, view)
  }

  /** Claim the partitions (idempotent for those already mine) and fetch the newly granted. */
  private async claimAndStart(wanted: OwnedPartition[], released: OwnedPartition[], view: MembershipView): Promise<void> {
    let release = released
    let pending = wanted
    while (!this.stopped && this.view === view) {
      const outcome = this.membership
        ? await this.membership.claim(pending, release, CLAIM_WAIT_MS)
        : {granted: pending, busy: [] as OwnedPartition[], generation: view.generation}
      release = []
      const granted = outcome.granted.filter((p) => !this.owned.has(partitionKey(p.topic, p.partition)))
      for (const busy of outcome.busy) await this.dropOwnership(partitionKey(busy.topic, busy.partition))
      await this.startPartitions(granted)
      if (outcome.busy.length === 0 || this.pendingView !== undefined) return
      this.log.debug('waiting for partitions still owned by another member', {group: this.group, busy: outcome.busy.length})
      pending = outcome.busy
    }
  }

  /** Lost ownership we thought we had (evicted meanwhile): stop without committing. */
  private async dropOwnership(key: string): Promise<void> {
    if (!this.owned.has(key)) return
    await this.removeFetcher(key)
    this.owned.delete(key)
    this.dirty.delete(key)
  }

  private async startPartitions(granted: OwnedPartition[]): Promise<void> {
    const started: PartitionFetcher[] = []
    const byTopic = new Map<string, OwnedPartition[]>()
    for (const p of granted) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p])
    for (const [topic, list] of byTopic) {
      const committed = this.options.alwaysFromLatest
        ? new Map<string, {offset: number; msgId: string}>()
        : await this.offsetStore.load(
            this.group,
            topic,
            list.map((p) => p.partition),
          )
      for (const p of list) {
        const key = partitionKey(topic, p.partition)
        const stored = committed.get(offsetKey(p.partition))
        const fallback = this.options.fromLatest || this.options.alwaysFromLatest ? TAIL_OFFSET : 0
        // Asked of the master, or of its slave when the master does not accept connections.
        const {conn, value} = await this.queryBroker(p.partition.brokerId, async (conn) => {
          const override = this.options.from === undefined ? undefined : await this.options.from(topic, p.partition, conn)
          let start = override === undefined ? (stored?.offset ?? fallback) : override === 'earliest' ? 0 : override === 'latest' ? TAIL_OFFSET : override
          let stopAt: number | undefined
          if (this.options.stopAtEnd) {
            stopAt = await endOffset(conn, this.group, topic, p.partition.partition)
            if (start === TAIL_OFFSET) start = stopAt
          }
          return {override, start, stopAt}
        })
        const {override, start, stopAt} = value
        if (stored !== undefined && override === undefined) this.processed.set(key, {offset: stored.offset, msgId: stored.msgId})
        else this.processed.delete(key)
        this.owned.set(key, p)
        if (!this.stopped) started.push(this.addFetcher(topic, p.partition, conn, start, stopAt))
      }
    }
    // Start only once all are added, so an empty partition that finishes at once (stopAtEnd)
    // cannot end the iteration before its siblings exist.
    for (const fetcher of started) fetcher.start()
  }

  override finished(fetcher: PartitionFetcher): void {
    super.finished(fetcher)
    if (!this.options.stopAtEnd) return
    this.finishedKeys.add(fetcher.key)
    if ([...this.fetchers.keys()].every((key) => this.finishedKeys.has(key))) this.queue.end()
  }

  private async handle(message: Message, handler: (m: Message) => void | Promise<void>): Promise<void> {
    if (typeof this.options.filter === 'function' && !safeFilter(this.options.filter, message)) return
    const maxRetries = this.options.maxFetchRetries ?? 5
    for (let attempt = 0; ; attempt++) {
      try {
        await handler(message)
        return
      } catch (error) {
        if (attempt >= maxRetries) {
          this.log.warn('giving up on a message after retries', {
            group: this.group,
            topic: message.topic,
            partition: message.partition,
            offset: message.offset,
            error: (error as Error).message,
          })
          this.emit('messageFailed', {message, error})
          if ((this.options.onFailure ?? 'recover') === 'recover') await this.recover?.save(message)
          return
        }
        const delayMs = Math.min(1000, 10 * 2 ** attempt)
        this.log.debug('handler failed; retrying the message', {
          group: this.group,
          topic: message.topic,
          partition: message.partition,
          offset: message.offset,
          attempt: attempt + 1,
          retryInMs: delayMs,
          error: (error as Error).message,
        })
        await new Promise((resolve) => setTimeout(resolve, delayMs))
      }
    }
  }

  private createRecoverStore(handler: (m: Message) => void | Promise<void>): RecoverStore | undefined {
    if ((this.options.onFailure ?? 'recover') !== 'recover') return undefined
    const store = new RecoverStore({
      dir: this.options.recoverDir,
      group: this.group,
      intervalMs: this.options.recoverIntervalMs ?? 300_000,
      handler,
      log: this.log,
    })
    store.start()
    return store
  }
}

function safeFilter(filter: (m: Message) => boolean, message: Message): boolean {
  try {
    return filter(message)
  } catch {
    return false // MetaQ counts a filter that throws as a rejection
  }
}

/** MetaQ's broadcast group name: `<group>-<local IP with '.' and ':' replaced by '-'>`. */
export function broadcastGroupName(group: string): string {
  let ip = '127.0.0.1'
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal)
    if (found) {
      ip = found.address
      break
    }
  }
  return `${group}-${ip.replace(/[.:]/g, '-')}`
}

export function createGroupConsumer(options: GroupConsumerOptions): GroupConsumer {
  return new GroupConsumer(options)
}
