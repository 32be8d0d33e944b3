/**
 * The standalone group coordinator (docs/protocol.md#standalone-consumer-groups): consumer-group
 * membership, generations and partition ownership, kept in memory on the broker. It plays the part
 * of MetaQ's ZooKeeper nodes `consumers/<group>/ids` (members) and `consumers/<group>/owners`
 * (ownership):
 *
 * - join adds a member (or changes its topics) and bumps the generation; leave and eviction
 *   (no heartbeat for the member's session timeout) remove it and bump it again;
 * - heartbeats are held until the generation moves past the one they carry (or their wait
 *   ends), so every member hears about a change within one round trip;
 * - a member claims the partitions it computed for itself; a claim is granted only when no
 *   other live member owns the partition, and waits (up to the request's maxWaitMs) for the
 *   owner to release it. A partition is therefore never owned by two members at once.
 *
 * Members and owners are not persisted: after a broker restart consumers rejoin (their
 * heartbeats get 404) and reclaim. Committed offsets are persisted (storage/offset-log.ts).
 */
import type {Logger} from '../../log.js'
import type {ClaimRequest, ClaimResult, GroupMember, GroupView, TopicPartition} from '../../protocol/commands/group.js'
import type {GroupDescription, GroupSummary} from '../../protocol/commands/group-admin.js'
import {MetaError} from '../../protocol/errors.js'

const SWEEP_INTERVAL_MS = 100
/** Bounds on a member's session timeout (the value a client asks for is clamped). */
const MIN_SESSION_TIMEOUT_MS = 100
const MAX_SESSION_TIMEOUT_MS = 300_000
/**
 * Most consumer groups with live members the coordinator holds (each costs its members,
 * owners and held requests in memory): a join that would start one more is refused with
 * GROUP_LIMIT. A group goes when its last member leaves or is evicted.
 */
export const GROUPS_MAX = 10_000
/** Most members one group holds: a join of one more is refused with GROUP_LIMIT (a member already in it may join again). */
export const MEMBERS_PER_GROUP_MAX = 1_000

interface Member {
  id: string
  topics: string[]
  sessionTimeoutMs: number
  lastSeenMs: number
  /** Heartbeats currently held for this member (alive while > 0). */
  held: number
  host: string
}

interface HeldHeartbeat {
  memberId: string
  generation: number
  reply: (view: GroupView | undefined) => void
  timer: NodeJS.Timeout
  connectionId: number
}

interface HeldClaim {
  memberId: string
  request: ClaimRequest
  reply: (result: ClaimResult) => void
  timer: NodeJS.Timeout
  connectionId: number
}

class Group {
  generation = 0
  readonly members = new Map<string, Member>()
  /** `topic\0partition` → owning member id. */
  readonly owners = new Map<string, string>()
  readonly heartbeats = new Set<HeldHeartbeat>()
  readonly claims = new Set<HeldClaim>()
  constructor(readonly name: string) {}
}

interface CoordinatorOptions {
  brokerId: number
  defaultSessionTimeoutMs: number
  /** Partition count of a topic on this broker (0 when the topic is not accepted). */
  partitionCount(topic: string): number
  log: Logger
  /** Default {@link GROUPS_MAX} (tests make it small). */
  maxGroups?: number
  /** Default {@link MEMBERS_PER_GROUP_MAX} (tests make it small). */
  maxMembersPerGroup?: number
}

function ownerKey(tp: TopicPartition): string {
  return `${tp.topic}\0${tp.partition}`
}

export class GroupCoordinator {
  private readonly groups = new Map<string, Group>()
  private readonly sweeper: NodeJS.Timeout

  constructor(private readonly options: CoordinatorOptions) {
    this.sweeper = setInterval(() => this.sweep(), SWEEP_INTERVAL_MS)
    this.sweeper.unref()
  }

  /**
   * Topics' partition counts changed (a reload): every group with a member subscribed to one
   * for which `changed(topic)` is true gets a new generation, so its members rebalance over
   * the new partitions.
   */
  partitionCountsChanged(changed: (topic: string) => boolean): void {
    for (const g of this.groups.values()) {
      const topics = new Set([...g.members.values()].flatMap((m) => m.topics))
      if ([...topics].some(changed)) {
        this.options.log.info('partition count changed: rebalancing', {group: g.name})
        this.bump(g)
      }
    }
  }

  /** Add or refresh a member; throws GROUP_LIMIT when that would pass {@link GROUPS_MAX} or {@link MEMBERS_PER_GROUP_MAX}. */
  join(group: string, memberId: string, topics: string[], sessionTimeoutMs: number, host: string): GroupView {
    this.checkLimits(group, memberId)
    const g = this.group(group)
    const timeout = clamp(sessionTimeoutMs || this.options.defaultSessionTimeoutMs, MIN_SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS)
    const sorted = [...new Set(topics)].sort()
    const existing = g.members.get(memberId)
    if (existing === undefined || existing.topics.join(',') !== sorted.join(',')) {
      g.members.set(memberId, {id: memberId, topics: sorted, sessionTimeoutMs: timeout, lastSeenMs: Date.now(), held: 0, host})
      this.options.log.limited('group-membership', {burstLines: 50}).info('member joined', {group, member: memberId, topics: sorted})
      this.bump(g)
    } else {
      existing.lastSeenMs = Date.now()
      existing.sessionTimeoutMs = timeout
    }
    return this.view(g)
  }

  /**
   * A heartbeat: answered at once (view) when the caller's generation is stale, held up to
   * maxWaitMs otherwise. `reply(undefined)` means "unknown member: join again".
   */
  heartbeat(group: string, memberId: string, generation: number, maxWaitMs: number, connectionId: number, reply: (view: GroupView | undefined) => void): void {
    const g = this.groups.get(group)
    const member = g?.members.get(memberId)
    if (g === undefined || member === undefined) return reply(undefined)
    member.lastSeenMs = Date.now()
    if (generation !== g.generation || maxWaitMs <= 0) return reply(this.view(g))
    const wait = Math.min(maxWaitMs, member.sessionTimeoutMs)
    const held: HeldHeartbeat = {memberId, generation, reply, connectionId, timer: undefined as unknown as NodeJS.Timeout}
    held.timer = setTimeout(() => this.releaseHeartbeat(g, held, true), wait)
    member.held += 1
    g.heartbeats.add(held)
  }

  leave(group: string, memberId: string): boolean {
    const g = this.groups.get(group)
    if (g === undefined || !g.members.has(memberId)) return false
    this.options.log.limited('group-membership', {burstLines: 50}).info('member left', {group, member: memberId})
    this.remove(g, memberId)
    return true
  }

  /** Release, then claim; waits up to maxWaitMs for partitions another member still owns. */
  claim(
    group: string,
    memberId: string,
    request: ClaimRequest,
    maxWaitMs: number,
    connectionId: number,
    reply: (result: ClaimResult | undefined) => void,
  ): void {
    const g = this.groups.get(group)
    const member = g?.members.get(memberId)
    if (g === undefined || member === undefined) return reply(undefined)
    member.lastSeenMs = Date.now()
    let released = false
    for (const tp of request.release) {
      const key = ownerKey(tp)
      if (g.owners.get(key) === memberId) {
        g.owners.delete(key)
        released = true
      }
    }
    const result = this.tryClaim(g, memberId, request.claim)
    if (result.busy.length === 0 || maxWaitMs <= 0) reply(result)
    else {
      const held: HeldClaim = {memberId, request: {claim: result.busy, release: []}, reply, connectionId, timer: undefined as unknown as NodeJS.Timeout}
      const granted = result.granted
      held.reply = (later) => reply({...later, granted: [...granted, ...later.granted]})
      held.timer = setTimeout(() => this.answerClaim(g, held), Math.min(maxWaitMs, member.sessionTimeoutMs))
      g.claims.add(held)
    }
    if (released) this.retryClaims(g)
  }

  /** A connection is ending: answer its held requests now (heartbeats with the view, claims with what is free). */
  answerConnection(connectionId: number): void {
    for (const g of this.groups.values()) {
      for (const held of g.heartbeats) if (held.connectionId === connectionId) this.releaseHeartbeat(g, held, true)
      for (const held of g.claims) if (held.connectionId === connectionId) this.answerClaim(g, held)
    }
  }

  /** A connection closed: its held requests are dropped and its members' sessions start to run out. */
  connectionClosed(connectionId: number): void {
    for (const g of this.groups.values()) {
      for (const held of g.heartbeats) if (held.connectionId === connectionId) this.releaseHeartbeat(g, held, false)
      for (const held of g.claims) {
        if (held.connectionId !== connectionId) continue
        clearTimeout(held.timer)
        g.claims.delete(held)
      }
    }
  }

  list(committedGroups: readonly string[], committedTopics: (group: string) => string[]): GroupSummary[] {
    const names = new Set([...this.groups.keys(), ...committedGroups])
    return [...names].sort().map((name) => {
      const g = this.groups.get(name)
      const topics = new Set(committedTopics(name))
      for (const m of g?.members.values() ?? []) for (const t of m.topics) topics.add(t)
      return {group: name, generation: g?.generation ?? 0, members: g?.members.size ?? 0, topics: [...topics].sort()}
    })
  }

  describe(group: string): Omit<GroupDescription, 'offsets'> | undefined {
    const g = this.groups.get(group)
    if (g === undefined) return undefined
    const now = Date.now()
    return {
      group,
      generation: g.generation,
      members: [...g.members.values()].sort(byId).map((m) => ({
        id: m.id,
        topics: m.topics,
        host: m.host,
        idleMs: m.held > 0 ? 0 : now - m.lastSeenMs,
        sessionTimeoutMs: m.sessionTimeoutMs,
        owned: [...g.owners]
          .filter(([, owner]) => owner === m.id)
          .map(([key]) => {
            const [topic, partition] = key.split('\0')
            return {topic, partition: Number(partition)}
          })
          .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition)),
      })),
    }
  }

  /** Live members of a group (for refusing offset resets on an active group). */
  memberCount(group: string): number {
    return this.groups.get(group)?.members.size ?? 0
  }

  /** Answer every held request and stop (broker shutdown). */
  /** The names of the groups that exist (one member at least). */
  names(): IterableIterator<string> {
    return this.groups.keys()
  }

  close(): void {
    clearInterval(this.sweeper)
    for (const g of this.groups.values()) {
      for (const held of g.heartbeats) this.releaseHeartbeat(g, held, true)
      for (const held of g.claims) this.answerClaim(g, held)
    }
  }

  private checkLimits(group: string, memberId: string): void {
    const g = this.groups.get(group)
    if (g === undefined) {
      const max = this.options.maxGroups ?? GROUPS_MAX
      if (this.groups.size >= max) {
        throw new MetaError(
          'GROUP_LIMIT',
          `cannot start group "${group}": this broker holds ${this.groups.size} consumer groups, the most it takes (${max}); try again once a group has gone`,
        )
      }
      return
    }
    const max = this.options.maxMembersPerGroup ?? MEMBERS_PER_GROUP_MAX
    if (!g.members.has(memberId) && g.members.size >= max) {
      throw new MetaError(
        'GROUP_LIMIT',
        `cannot add member "${memberId}" to group "${group}": it has ${g.members.size} members, the most a group takes (${max})`,
      )
    }
  }

  private group(name: string): Group {
    let g = this.groups.get(name)
    if (g === undefined) {
      g = new Group(name)
      this.groups.set(name, g)
    }
    return g
  }

  private view(g: Group): GroupView {
    const members: GroupMember[] = [...g.members.values()].sort(byId).map((m) => ({id: m.id, topics: m.topics}))
    const partitions: Record<string, number> = {}
    for (const m of members) for (const t of m.topics) partitions[t] ??= this.options.partitionCount(t)
    return {group: g.name, generation: g.generation, members, partitions, brokerId: this.options.brokerId}
  }

  /** Membership changed: new generation; held heartbeats and claims answer now. */
  private bump(g: Group): void {
    g.generation += 1
    for (const held of g.heartbeats) this.releaseHeartbeat(g, held, true)
    for (const held of g.claims) this.answerClaim(g, held)
  }

  private remove(g: Group, memberId: string): void {
    g.members.delete(memberId)
    for (const [key, owner] of g.owners) if (owner === memberId) g.owners.delete(key)
    for (const held of g.heartbeats) if (held.memberId === memberId) this.releaseHeartbeat(g, held, true)
    if (g.members.size === 0 && g.heartbeats.size === 0 && g.claims.size === 0) {
      g.generation += 1
      this.groups.delete(g.name)
      return
    }
    this.bump(g)
  }

  private releaseHeartbeat(g: Group, held: HeldHeartbeat, answer: boolean): void {
    if (!g.heartbeats.delete(held)) return
    clearTimeout(held.timer)
    const member = g.members.get(held.memberId)
    if (member !== undefined) {
      member.held -= 1
      member.lastSeenMs = Date.now()
    }
    if (answer) held.reply(member === undefined ? undefined : this.view(g))
  }

  private tryClaim(g: Group, memberId: string, wanted: TopicPartition[]): ClaimResult {
    const granted: TopicPartition[] = []
    const busy: TopicPartition[] = []
    for (const tp of wanted) {
      const key = ownerKey(tp)
      const owner = g.owners.get(key)
      if (owner === undefined || owner === memberId || !g.members.has(owner)) {
        g.owners.set(key, memberId)
        granted.push(tp)
      } else {
        busy.push(tp)
      }
    }
    return {granted, busy, generation: g.generation}
  }

  private retryClaims(g: Group): void {
    for (const held of g.claims) {
      const result = this.tryClaim(g, held.memberId, held.request.claim)
      if (result.busy.length === 0) {
        g.claims.delete(held)
        clearTimeout(held.timer)
        held.reply(result)
      } else {
        held.request = {claim: result.busy, release: []}
        if (result.granted.length > 0) {
          const reply = held.reply
          held.reply = (later) => reply({...later, granted: [...result.granted, ...later.granted]})
        }
      }
    }
  }

  private answerClaim(g: Group, held: HeldClaim): void {
    if (!g.claims.delete(held)) return
    clearTimeout(held.timer)
    held.reply(
      g.members.has(held.memberId) ? this.tryClaim(g, held.memberId, held.request.claim) : {granted: [], busy: held.request.claim, generation: g.generation},
    )
  }

  private sweep(): void {
    const now = Date.now()
    for (const g of [...this.groups.values()]) {
      for (const member of [...g.members.values()]) {
        if (member.held > 0 || now - member.lastSeenMs <= member.sessionTimeoutMs) continue
        this.options.log
          .limited('group-membership', {burstLines: 50})
          .info('member session expired', {group: g.name, member: member.id, sessionTimeoutMs: member.sessionTimeoutMs})
        this.remove(g, member.id)
      }
    }
  }
}

function byId(a: {id: string}, b: {id: string}): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value))
}
