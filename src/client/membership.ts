/**
 * Group membership behind one interface, so a group consumer works the same in standalone
 * mode (the broker coordinates: this file) and in cluster mode (ZooKeeper coordinates:
 * cluster-membership.ts).
 *
 * A membership produces views (generation, who subscribes to what, which partitions exist),
 * emits 'change' when a new one arrives, and grants ownership of partitions through claims.
 */
import {EventEmitter} from 'node:events'
import {
  decodeClaimResult,
  decodeGroupView,
  encodeGroupClaim,
  encodeGroupHeartbeat,
  encodeGroupJoin,
  encodeGroupLeave,
  type GroupView,
  type TopicPartition,
} from '../protocol/commands/group.js'
import {MetaError, isMetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'
import type {BrokerConnection} from './connection.js'
import {resultText} from './connection-errors.js'
import type {Partition} from './types.js'

/** A snapshot of a group as every member sees it. */
export interface MembershipView {
  generation: number
  /** Members subscribed to each topic (any order; the strategy sorts). */
  membersByTopic: Map<string, string[]>
  /** Partitions of each topic. */
  partitionsByTopic: Map<string, Partition[]>
}

export interface OwnedPartition {
  topic: string
  partition: Partition
}

export interface ClaimOutcome {
  granted: OwnedPartition[]
  busy: OwnedPartition[]
  generation: number
}

export interface GroupMembership extends EventEmitter {
  readonly memberId: string
  /** Register and return the first view; then 'change' (view) on every new generation. */
  join(): Promise<MembershipView>
  /** Give up `release`, then take `claim` (waiting up to maxWaitMs for current owners). */
  claim(claim: readonly OwnedPartition[], release: readonly OwnedPartition[], maxWaitMs: number): Promise<ClaimOutcome>
  /** Leave the group (releasing everything) and stop. */
  leave(): Promise<void>
  /** Optional: make claims that are waiting for other owners return at once (stopping). */
  cancelClaims?(): void
}

interface StandaloneMembershipOptions {
  conn: BrokerConnection
  group: string
  memberId: string
  topics: string[]
  sessionTimeoutMs: number
  log: Logger
}

/** Membership coordinated by one meta broker (group-join / group-heartbeat / group-claim). */
export class StandaloneMembership extends EventEmitter implements GroupMembership {
  readonly memberId: string
  private generation = -1
  private leaving = false
  private heartbeating = false

  constructor(private readonly options: StandaloneMembershipOptions) {
    super()
    this.memberId = options.memberId
  }

  async join(): Promise<MembershipView> {
    await this.options.conn.ready()
    if (!this.options.conn.capabilities.groups) {
      throw new MetaError(
        'SERVICE_UNAVAILABLE',
        `broker ${this.options.conn.name} does not coordinate groups (not a meta broker); use ZooKeeper (--zk) for MetaQ brokers`,
      )
    }
    const view = await this.sendJoin()
    this.generation = view.generation
    if (!this.heartbeating) void this.heartbeatLoop()
    return toView(view)
  }

  async claim(claim: readonly OwnedPartition[], release: readonly OwnedPartition[], maxWaitMs: number): Promise<ClaimOutcome> {
    const brokerId = (claim[0] ?? release[0])?.partition.brokerId ?? 0
    const request = {claim: claim.map(toWire), release: release.map(toWire)}
    const frame = await this.options.conn.requestAsync(
      (out, opaque) =>
        encodeGroupClaim(out, {
          group: this.options.group,
          memberId: this.memberId,
          generation: this.generation,
          maxWaitMs,
          opaque,
          request,
        }),
      maxWaitMs + 10_000,
    )
    const result = decodeClaimResult(resultText(frame))
    const back = (tp: TopicPartition): OwnedPartition => ({topic: tp.topic, partition: {brokerId, partition: tp.partition}})
    return {granted: result.granted.map(back), busy: result.busy.map(back), generation: result.generation}
  }

  async leave(): Promise<void> {
    if (this.leaving) return
    this.leaving = true
    try {
      resultText(await this.options.conn.requestAsync((out, opaque) => encodeGroupLeave(out, {group: this.options.group, memberId: this.memberId, opaque})))
    } catch (error) {
      // Leaving is a courtesy: if it fails, the broker evicts us after the session timeout.
      this.options.log.warn('cannot leave the group; the broker evicts this member after its session timeout', {
        group: this.options.group,
        member: this.memberId,
        sessionTimeoutMs: this.options.sessionTimeoutMs,
        error: (error as Error).message,
      })
    }
  }

  private async sendJoin(): Promise<GroupView> {
    const {group, topics, sessionTimeoutMs} = this.options
    const frame = await this.options.conn.requestAsync((out, opaque) =>
      encodeGroupJoin(out, {group, memberId: this.memberId, sessionTimeoutMs, topics, opaque}),
    )
    return decodeGroupView(resultText(frame))
  }

  /**
   * Held heartbeats: each waits on the broker until the generation moves (or a third of the
   * session timeout passes), so a rebalance is heard within one round trip. An unknown-member
   * answer (evicted, or the broker restarted) rejoins.
   */
  private async heartbeatLoop(): Promise<void> {
    this.heartbeating = true
    const {conn, group, sessionTimeoutMs, log} = this.options
    const waitMs = Math.max(50, Math.floor(sessionTimeoutMs / 3))
    let failures = 0
    while (!this.leaving && !conn.isClosed) {
      try {
        const frame = await conn.requestAsync(
          (out, opaque) => encodeGroupHeartbeat(out, {group, memberId: this.memberId, generation: this.generation, maxWaitMs: waitMs, opaque}),
          waitMs + 10_000,
        )
        if (this.leaving) break
        let view: GroupView
        if (frame.type === 'result' && frame.code === 404) {
          log.info('rejoining group', {group, member: this.memberId})
          view = await this.sendJoin()
        } else {
          view = decodeGroupView(resultText(frame))
        }
        failures = 0
        if (view.generation !== this.generation) {
          this.generation = view.generation
          this.emit('change', toView(view))
        }
      } catch (error) {
        if (this.leaving || conn.isClosed) break
        failures += 1
        const delay = Math.min(1000, 50 * 2 ** failures)
        if (!isMetaError(error, 'CONNECTION_CLOSED')) {
          const context = {group, member: this.memberId, failures, retryInMs: delay, error: (error as Error).message}
          if (failures === 1) log.warn('group heartbeat failed; retrying', context)
          else log.debug('group heartbeat failed again; retrying', context)
        }
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
    this.heartbeating = false
  }
}

function toWire(p: OwnedPartition): TopicPartition {
  return {topic: p.topic, partition: p.partition.partition}
}

function toView(view: GroupView): MembershipView {
  const membersByTopic = new Map<string, string[]>()
  for (const member of view.members) {
    for (const topic of member.topics) {
      const list = membersByTopic.get(topic) ?? []
      list.push(member.id)
      membersByTopic.set(topic, list)
    }
  }
  const partitionsByTopic = new Map<string, Partition[]>()
  for (const [topic, count] of Object.entries(view.partitions)) {
    partitionsByTopic.set(
      topic,
      Array.from({length: count}, (_, partition) => ({brokerId: view.brokerId, partition})),
    )
  }
  return {generation: view.generation, membersByTopic, partitionsByTopic}
}
