/**
 * Group membership through ZooKeeper, exactly as MetaQ 1.4 consumers do it
 * (docs/protocol.md#load-balancing), so meta and MetaQ consumers can share a group:
 *
 * - member:    ephemeral `consumers/<group>/ids/<consumerId>` = subscribed topics, comma-joined;
 * - view:      members per topic = children of `ids` whose data lists the topic; partitions =
 *              `topics-sub/<topic>` (cluster/discovery.ts); watches on both produce a new
 *              view (a local generation counter) on every change;
 * - ownership: ephemeral `consumers/<group>/owners/<topic>/<brokerId>-<partition>` = owner id;
 *              a claim of a node another member holds waits (an exists watch) until it is
 *              deleted, up to the claim's maxWaitMs.
 *
 * After a session expiry the ephemeral nodes are gone: the member is registered again and a
 * new view is emitted, and the group consumer claims its partitions again.
 *
 * ZooKeeper failures in the background (registering again, re-reading the view after a watch
 * fired) are logged at warn and retried with back-off: the watches a read sets are how this
 * member hears of every later change, so a read that failed once must not be the last.
 */
import {EventEmitter} from 'node:events'
import type {Logger} from '../log.js'
import {readSubscribePartitions} from '../cluster/discovery.js'
import type {ZkPaths} from '../cluster/paths.js'
import {CreateMode, type ZkSession} from '../cluster/zk-session.js'
import type {ClaimOutcome, GroupMembership, MembershipView, OwnedPartition} from './membership.js'
import type {Partition} from './types.js'

export interface ClusterMembershipOptions {
  session: ZkSession
  paths: ZkPaths
  group: string
  memberId: string
  topics: string[]
  log: Logger
}

export class ClusterMembership extends EventEmitter implements GroupMembership {
  readonly memberId: string
  private generation = 0
  private left = false
  private refreshing = false
  private refreshAgain = false
  /** Background retries waiting for their time: registering again, reading the view. */
  private registerTimer: NodeJS.Timeout | undefined
  private refreshTimer: NodeJS.Timeout | undefined
  /** Set by cancelClaims(): waiting claims return at once (the consumer is stopping). */
  private cancelled = false
  private wakers: Array<() => void> = []

  constructor(private readonly options: ClusterMembershipOptions) {
    super()
    this.memberId = options.memberId
    options.session.on('session', () => {
      if (this.left) return
      this.options.log.info('new ZooKeeper session: registering the member again', {group: options.group, member: this.memberId})
      this.registerAgain(1)
    })
  }

  async join(): Promise<MembershipView> {
    await this.register()
    return this.readView()
  }

  async claim(claim: readonly OwnedPartition[], release: readonly OwnedPartition[], maxWaitMs: number): Promise<ClaimOutcome> {
    const {session, paths, group} = this.options
    for (const p of release) {
      const path = paths.owner(group, p.topic, p.partition.brokerId, p.partition.partition)
      if ((await session.getString(path)) === this.memberId) await session.remove(path)
    }
    const deadline = Date.now() + maxWaitMs
    const granted: OwnedPartition[] = []
    let busy: OwnedPartition[] = [...claim]
    for (;;) {
      const stillBusy: OwnedPartition[] = []
      const deleted: Array<Promise<void>> = []
      for (const p of busy) {
        const path = paths.owner(group, p.topic, p.partition.brokerId, p.partition.partition)
        if (await this.takeOwner(path)) {
          granted.push(p)
          continue
        }
        stillBusy.push(p)
        deleted.push(
          new Promise<void>((resolve) => {
            session
              .exists(path, () => resolve())
              .then(
                (stat) => stat === undefined && resolve(),
                (error: Error) => {
                  // Without the watch we cannot wait for the owner: try the claim again now
                  // (it fails the same way if ZooKeeper is unreachable, and the rebalance retries).
                  this.options.log.debug('cannot watch a partition owner', {path, error: error.message})
                  resolve()
                },
              )
          }),
        )
      }
      busy = stillBusy
      const remaining = deadline - Date.now()
      if (busy.length === 0 || remaining <= 0 || this.left || this.cancelled) break
      // Wait for one of the owners to let go (or the time to run out, or a stop), then try again.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        Promise.race(deleted),
        new Promise((resolve) => (timer = setTimeout(resolve, remaining))),
        new Promise<void>((resolve) => this.wakers.push(resolve)),
      ])
      clearTimeout(timer)
    }
    return {granted, busy, generation: this.generation}
  }

  /** Make claims that wait for other owners return now (the consumer is stopping). */
  cancelClaims(): void {
    this.cancelled = true
    const wakers = this.wakers
    this.wakers = []
    for (const wake of wakers) wake()
  }

  async leave(): Promise<void> {
    if (this.left) return
    this.left = true
    clearTimeout(this.registerTimer)
    clearTimeout(this.refreshTimer)
    const {session, paths, group} = this.options
    try {
      for (const topic of this.options.topics) {
        for (const child of await session.children(paths.owners(group, topic))) {
          const path = `${paths.owners(group, topic)}/${child}`
          if ((await session.getString(path)) === this.memberId) await session.remove(path)
        }
      }
      await session.remove(paths.consumerId(group, this.memberId))
    } catch (error) {
      // The nodes are ephemeral: they go when the session ends (at the latest when the
      // topology closes it); until then other members wait for these partitions.
      this.options.log.warn('cannot leave the group cleanly; its nodes go with the ZooKeeper session', {
        group,
        member: this.memberId,
        error: (error as Error).message,
      })
    }
  }

  private async register(): Promise<void> {
    const {session, paths, group, topics} = this.options
    await session.put(paths.consumerId(group, this.memberId), topics.join(','), CreateMode.EPHEMERAL)
  }

  /** Create the owner node, or find it is already ours. */
  private async takeOwner(path: string): Promise<boolean> {
    const {session} = this.options
    if (await session.create(path, this.memberId, CreateMode.EPHEMERAL)) return true
    const owner = await session.getString(path)
    if (owner === undefined) return this.takeOwner(path) // deleted meanwhile
    if (owner !== this.memberId) return false
    // Ours, but possibly from a session that expired: make sure it is this session's node.
    await session.put(path, this.memberId, CreateMode.EPHEMERAL)
    return true
  }

  /** Register again under a new session, retrying with back-off until it works. */
  private registerAgain(attempt: number): void {
    clearTimeout(this.registerTimer)
    if (this.left) return
    this.register().then(
      () => this.refresh(),
      (error: Error) => {
        this.registerTimer = this.retryLater(attempt, 'cannot register the member again', error, () => this.registerAgain(attempt + 1))
      },
    )
  }

  /**
   * Re-read the view after a watch fired (or a new session); overlapping refreshes are
   * coalesced, and a failed read is retried with back-off (it is what sets the next watches).
   */
  private refresh(attempt = 1): void {
    if (this.left) return
    if (this.refreshing) {
      this.refreshAgain = true
      return
    }
    clearTimeout(this.refreshTimer)
    this.refreshing = true
    this.readView().then(
      (view) => {
        this.refreshing = false
        if (!this.left) this.emit('change', view)
        if (this.refreshAgain) {
          this.refreshAgain = false
          this.refresh()
        }
      },
      (error: Error) => {
        this.refreshing = false
        this.refreshAgain = false // the retry reads everything again
        this.refreshTimer = this.retryLater(attempt, 'cannot read the group', error, () => this.refresh(attempt + 1))
      },
    )
  }

  private retryLater(attempt: number, what: string, error: Error, again: () => void): NodeJS.Timeout | undefined {
    if (this.left) return undefined
    const delayMs = Math.min(200 * 2 ** (attempt - 1), 10_000)
    this.options.log.warn(`${what}; retrying`, {group: this.options.group, member: this.memberId, attempt, retryInMs: delayMs, error: error.message})
    return setTimeout(again, delayMs).unref()
  }

  private async readView(): Promise<MembershipView> {
    const {session, paths, group, topics} = this.options
    const onChange = () => this.refresh()
    this.generation += 1
    const membersByTopic = new Map<string, string[]>()
    for (const id of await session.children(paths.consumerIds(group), onChange)) {
      const data = (await session.getString(paths.consumerId(group, id))) ?? ''
      for (const topic of data.split(',').map((t) => t.trim())) {
        if (topic === '') continue
        membersByTopic.set(topic, [...(membersByTopic.get(topic) ?? []), id])
      }
    }
    const partitionsByTopic = new Map<string, Partition[]>()
    for (const topic of topics) partitionsByTopic.set(topic, await readSubscribePartitions(session, paths, topic, onChange))
    return {generation: this.generation, membersByTopic, partitionsByTopic}
  }
}
