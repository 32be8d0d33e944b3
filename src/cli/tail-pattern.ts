/**
 * `meta tail -t 'logs-*'` and `--topic-pattern REGEX`: every topic whose name matches, read by
 * TailSessions (src/cli/tail-session.ts) over one stdout.
 *
 * - With -e the topics that match at start are read to the end offsets they had then, as one
 *   session; no matching topic is an error (exit 1) naming the pattern.
 * - Following, the topics are listed again every `rescanMs` (default 5 s, 100 ms to 5 min): a
 *   topic that appears and matches gets its own session, read from its beginning (with
 *   --group: from the group's committed offset, which a new topic does not have). With --group
 *   each session is a member of the group for its topics, so the group consumes every
 *   matching topic and other members share the partitions.
 * - Stops (a signal, the reader closing stdout) stop every session. -c: each session gets
 *   what is left of the count when it starts, and the tail stops once the sessions together
 *   wrote the count (sessions writing at that moment may add a batch each). --timeout is not
 *   offered with a following pattern (each session would time out on its own quiet topics).
 */
import type {Logger} from '../log.js'
import {MetaError} from '../protocol/errors.js'
import {createTopology} from '../client/topology.js'
import {matchingTopics, type TopicPattern} from '../client/topic-pattern.js'
import {RESCAN_DEFAULT_MS, TailSession, type TailOptions} from './tail-session.js'

interface PatternTailOptions extends Omit<TailOptions, 'topics'> {
  /** Topics named exactly (-t without `*`), read as given. */
  topics: string[]
  patterns: TopicPattern[]
  logger?: Logger
}

export class PatternTail {
  private readonly sessions = new Map<string, {session: TailSession; done: Promise<unknown>}>()
  private stopped = false
  private wake: (() => void) | undefined
  private failure: unknown

  constructor(private readonly options: PatternTailOptions) {}

  /** Read until a stop; rejects for start failures (unreachable broker, no matching topic with -e). */
  async run(): Promise<void> {
    const o = this.options
    const first = await this.list()
    if (o.exitAtEnd) {
      if (first.length === 0) {
        const where = o.zk !== undefined ? `the cluster at ${o.zk}` : `broker ${o.broker}`
        throw new MetaError('NOT_FOUND', `no topic on ${where} matches ${o.patterns.map((p) => `"${p.text}"`).join(' or ')}: expected at least one with -e`)
      }
      this.start(first, o.offset)
      await this.settled()
      return
    }
    if (first.length > 0) this.start(first, o.offset)
    const names = o.patterns.map((p) => `"${p.text}"`).join(' or ')
    o.status?.(
      `% reading ${first.length} topic${first.length === 1 ? '' : 's'} matching ${names}${first.length === 0 ? '' : `: ${first.join(', ')}`}; new ones are picked up every ${o.rescanMs ?? RESCAN_DEFAULT_MS} ms`,
    )
    while (!this.stopped) {
      await new Promise<void>((resolve) => {
        this.wake = resolve
        setTimeout(resolve, o.rescanMs ?? RESCAN_DEFAULT_MS).unref()
      })
      if (this.stopped) break
      const fresh = (await this.list().catch((error: Error) => (o.status?.(`% cannot list topics (retrying): ${error.message}`), []))).filter(
        (t) => !this.sessions.has(t),
      )
      if (fresh.length === 0) continue
      o.status?.(`% new topic${fresh.length === 1 ? '' : 's'} matching ${names}: ${fresh.join(', ')}`)
      // A topic that appeared after the start is read from its beginning (its first messages made it appear).
      this.start(fresh, o.group === undefined ? {kind: 'beginning'} : o.offset)
    }
    await this.settled()
  }

  /** Stop every session; run() then resolves. */
  stop(reason: Parameters<TailSession['stop']>[0] = 'signal'): void {
    if (this.stopped) return
    this.stopped = true
    for (const {session} of this.sessions.values()) session.stop(reason)
    this.wake?.()
  }

  private get written(): number {
    let total = 0
    for (const {session} of this.sessions.values()) total += session.messages
    return total
  }

  /** Exact names and the existing topics the patterns match, sorted and without duplicates. */
  private async list(): Promise<string[]> {
    const o = this.options
    const topology = createTopology({broker: o.broker, zk: o.zk, zkRoot: o.zkRoot, logger: o.logger})
    try {
      return [...new Set([...o.topics, ...(await matchingTopics(topology, o.patterns))])].sort()
    } finally {
      await topology.close()
    }
  }

  private start(topics: string[], offset: TailOptions['offset']): void {
    const o = this.options
    const left = o.count === undefined ? undefined : Math.max(1, o.count - this.written)
    const session = new TailSession({...o, topics, offset, count: left})
    const done = session.run().then(
      (result) => {
        // A reader that closed stdout or a count reached ends the whole tail.
        if (result.reason !== 'end') this.stop(result.reason)
        if (o.count !== undefined && this.written >= o.count) this.stop('count')
      },
      (error: unknown) => {
        this.failure ??= error
        this.stop()
      },
    )
    for (const topic of topics) this.sessions.set(topic, {session, done})
  }

  private async settled(): Promise<void> {
    await Promise.all(new Set([...this.sessions.values()].map((s) => s.done)))
    if (this.failure !== undefined) throw this.failure
  }
}
