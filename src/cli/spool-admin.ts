/**
 * `meta spool list|send|drop`: what `meta send` left in its spools, sending it, discarding it.
 * The spools are the library's (client/spool); sending uses the same SpoolingProducer as
 * `meta send`. Spools are read without their locks to be listed (a spool a running `meta
 * send` holds is counted as far as it is written).
 */
import {rmSync} from 'node:fs'
import {
  describeDestination,
  listSpools,
  sameDestination,
  spoolDestination,
  SPOOL_MAX_BYTES_CEILING,
  type SpoolDestination,
  type SpoolListing,
  type SpoolOpened,
} from '../client/spool/index.js'
import {MetaError} from '../protocol/errors.js'
import {confirmOnTty, declined} from './admin/confirm.js'
import {formatBytes, formatCount} from './format.js'
import {renderTable} from './output.js'
import {damagedBytes, elsewhereLine} from './spool-notices.js'

/** Damaged ranges of a spool the table names; --json has them all. */
const RANGES_LISTED = 10

/** A damaged range as `--json` shows it: bytes [from, to) of a segment file. */
interface DamagedRangeInfo {
  segment: string
  from: number
  to: number
  bytes: number
  reason: string
}

export interface SpoolInfo {
  topic: string
  dir: string
  /** The broker (`{"broker": "host:port"}`) or cluster (`{"zk": …, "zkRoot": …}`) it is for; null when it records none (an older meta wrote it). */
  destination: SpoolDestination | null
  /** Its destination file cannot be read: it is sent only with --retarget. */
  destinationUnreadable: boolean
  /** Unacknowledged messages (whole records after the saved position). */
  messages: number
  bytes: number
  /** pid of the `meta send` using it, if one is. */
  inUseBy: number | null
  /** Damaged ranges still in its segments: the next send skips them. */
  damaged: DamagedRangeInfo[]
  /** Damaged bytes a send skipped, kept in its quarantine directory. */
  quarantined: Array<{path: string; bytes: number}>
}

/** Every spool under `root` with messages, damage or a quarantine (a spool in use is read too, without its lock). */
export function spoolInfos(root: string, topics: string[] = []): SpoolInfo[] {
  const wanted = new Set(topics)
  return listSpools(root)
    .filter((s) => wanted.size === 0 || wanted.has(s.topic))
    .map(infoOf)
    .filter((s) => s.messages !== 0 || s.inUseBy !== null || s.damaged.length > 0 || s.quarantined.length > 0)
}

function infoOf(s: SpoolListing): SpoolInfo {
  return {
    topic: s.topic,
    dir: s.dir,
    destination: s.destination ?? null,
    destinationUnreadable: s.destinationUnreadable,
    messages: s.records,
    bytes: s.bytes,
    inUseBy: s.inUseBy ?? null,
    damaged: s.damaged.map((d) => ({segment: d.segment, from: d.from, to: d.to, bytes: damagedBytes(d), reason: d.reason})),
    quarantined: s.quarantined,
  }
}

export function renderSpools(root: string, spools: SpoolInfo[]): string {
  if (spools.length === 0) return `no spools in ${root}\n`
  const rows = spools.map((s) => [
    s.topic,
    formatCount(s.messages),
    formatBytes(s.bytes),
    s.destinationUnreadable ? 'unreadable' : s.destination === null ? 'none recorded' : describeDestination(s.destination),
    damageCell(s),
    s.inUseBy === null ? '-' : `meta send (pid ${s.inUseBy})`,
    s.dir,
  ])
  let out = `${renderTable(['TOPIC', 'MESSAGES', 'SIZE', 'DESTINATION', 'DAMAGED', 'IN USE BY', 'DIRECTORY'], rows, {align: ['left', 'right', 'right', 'left', 'left', 'left', 'left']})}\n`
  for (const s of spools) {
    if (s.damaged.length > 0) {
      const shown = s.damaged.slice(0, RANGES_LISTED).map((d) => `bytes ${formatCount(d.from)}-${formatCount(d.to)} of ${d.segment} (${d.reason})`)
      const more = s.damaged.length > RANGES_LISTED ? `; and ${formatCount(s.damaged.length - RANGES_LISTED)} more (--json lists them all)` : ''
      out += `damaged ranges of ${s.dir}: ${shown.join('; ')}${more}\n`
    }
    if (s.quarantined.length > 0) out += `quarantined in ${s.dir}: ${s.quarantined.map((q) => `${q.path} (${formatBytes(q.bytes)})`).join(', ')}\n`
  }
  return out
}

/** `1 range (27 B)`, `54 B quarantined`, or `-`. */
function damageCell(s: SpoolInfo): string {
  const parts: string[] = []
  if (s.damaged.length > 0)
    parts.push(`${s.damaged.length} range${s.damaged.length === 1 ? '' : 's'} (${formatBytes(s.damaged.reduce((n, d) => n + d.bytes, 0))})`)
  if (s.quarantined.length > 0) parts.push(`${formatBytes(s.quarantined.reduce((n, q) => n + q.bytes, 0))} quarantined`)
  return parts.length === 0 ? '-' : parts.join(', ')
}

/** `meta spool drop --json`. */
export interface SpoolDropResult {
  executed: boolean
  spools: SpoolInfo[]
}

/** Delete spools (a dry run unless `execute`; asked on a terminal unless `yes`). */
export async function dropSpools(root: string, topics: string[], options: {execute: boolean; yes: boolean; json: boolean}): Promise<SpoolDropResult> {
  const note = (line: string) => {
    if (!options.json) process.stderr.write(`${line}\n`)
  }
  const spools = spoolInfos(root, topics)
  const missing = topics.filter((t) => !spools.some((s) => s.topic === t))
  if (missing.length > 0)
    throw new MetaError('NOT_FOUND', `no spool for topic${missing.length === 1 ? '' : 's'} ${missing.map((t) => `"${t}"`).join(', ')} in ${root}`)
  const busy = spools.find((s) => s.inUseBy !== null)
  if (busy !== undefined) throw new MetaError('DATA_DIR_LOCKED', `the spool of topic "${busy.topic}" is in use by process ${busy.inUseBy}: stop it first`)
  if (!options.json) process.stdout.write(renderSpools(root, spools))
  const count = spools.reduce((n, s) => n + s.messages, 0)
  const what = `${spools.length} spool${spools.length === 1 ? '' : 's'} (${formatCount(count)} unsent message${count === 1 ? '' : 's'})`
  if (!options.execute) {
    note(`dry run: nothing was deleted; add --execute to delete ${what}`)
    return {executed: false, spools}
  }
  if (spools.length === 0) return {executed: true, spools}
  if (!(await confirmOnTty(`Delete ${what}? Their messages are lost.`, {yes: options.yes}))) throw declined('dropping the spools')
  for (const s of spools) rmSync(s.dir, {recursive: true, force: true})
  note(`deleted ${what}`)
  return {executed: true, spools}
}

/** `meta spool send --json`. */
export interface SpoolSendResult {
  /** Messages acknowledged, per topic. */
  sent: Record<string, number>
  /** Messages still in the spools (after a give-up or an interrupt). */
  pending: number
  /** Damaged ranges skipped (their bytes kept in the spool's quarantine directory). */
  skipped: Array<DamagedRangeInfo & {topic: string; dir: string; quarantine: string | null}>
  /** Spools left alone: they are for another destination. */
  waiting: Array<{topic: string; dir: string; messages: number; destination: SpoolDestination | null}>
  error?: {code: string; message: string}
}

interface SpoolSendOptions {
  root: string
  topics: string[]
  /** Where -b/--zk (or the environment, a profile, the default) point. */
  target: {broker?: string; zk?: string; zkRoot?: string}
  /** -b or --zk was given on the command line: only spools for that destination are sent (all with `retarget`). */
  explicit: boolean
  retarget: boolean
  maxOutageMs?: number
  ackTimeoutMs?: number
  /** ` --spool DIR` when not the default directory (for hints). */
  spoolFlag: string
  notify: (line: string) => void
}

/**
 * Send what the spools hold (every spool, or those of `topics`), each to the destination it
 * records (or, with `explicit`, only those for the target; with `retarget`, all of them to
 * it), and wait for the acknowledgements.
 */
export async function sendSpools(options: SpoolSendOptions): Promise<SpoolSendResult> {
  const spools = spoolInfos(options.root, options.topics).filter((s) => s.messages > 0 || s.damaged.length > 0 || s.inUseBy !== null)
  const busy = spools.find((s) => s.inUseBy !== null)
  if (busy !== undefined)
    throw new MetaError('DATA_DIR_LOCKED', `the spool of topic "${busy.topic}" is in use by process ${busy.inUseBy}: it is being sent already`)
  const missing = options.topics.filter((t) => !spools.some((s) => s.topic === t))
  if (missing.length > 0)
    throw new MetaError('NOT_FOUND', `no spool for topic${missing.length === 1 ? '' : 's'} ${missing.map((t) => `"${t}"`).join(', ')} in ${options.root}`)
  const target = spoolDestination(options.target)!
  const result: SpoolSendResult = {sent: {}, pending: 0, skipped: [], waiting: []}
  // Spools that record no destination go with the target's group, which runs first: they are adopted by it.
  const groups: Array<{destination: SpoolDestination; topics: Set<string>}> = [{destination: target, topics: new Set()}]
  for (const s of spools) {
    const own = s.destination ?? target
    if (options.retarget || (!s.destinationUnreadable && sameDestination(own, target))) {
      groups[0]!.topics.add(s.topic)
      continue
    }
    if (options.explicit || s.destinationUnreadable) {
      result.waiting.push({topic: s.topic, dir: s.dir, messages: s.messages, destination: s.destination})
      options.notify(elsewhereLine(s.topic, s.dir, s.destination ?? undefined, {destination: target, spoolFlag: options.spoolFlag}))
      continue
    }
    let group = groups.find((g) => sameDestination(g.destination, own))
    if (group === undefined) groups.push((group = {destination: own, topics: new Set()}))
    group.topics.add(s.topic)
  }
  for (const group of groups) {
    if (group.topics.size === 0) continue
    try {
      await sendGroup(group.destination, [...group.topics], options, result)
    } catch (error) {
      const e = error as MetaError
      if (groups.filter((g) => g.topics.size > 0).length > 1)
        options.notify(`% cannot send the spools for ${describeDestination(group.destination)}: ${e.message}`)
      result.error ??= {code: e.code ?? 'ERROR', message: e.message}
      for (const s of spools) if (group.topics.has(s.topic)) result.pending += s.messages
    }
  }
  return result
}

/** Send the spools of `topics` kept for one destination. */
async function sendGroup(destination: SpoolDestination, topics: string[], options: SpoolSendOptions, result: SpoolSendResult): Promise<void> {
  const [{createTopology}, {createProducer}, {SpoolingProducer}, {noticeSpoolEvents}] = await Promise.all([
    import('../client/topology.js'),
    import('../client/producer.js'),
    import('../client/spool/spooling-producer.js'),
    import('./spool-notices.js'),
  ])
  const where = 'broker' in destination ? {broker: destination.broker} : {zk: destination.zk, zkRoot: destination.zkRoot}
  const topology = createTopology({...where, requestTimeoutMs: options.ackTimeoutMs})
  try {
    // A broker never reached fails at once, as `meta send` does, unless --max-outage.
    if (options.maxOutageMs === undefined) await topology.connection(topology.brokerIds()[0] ?? 0)
    const producer = createProducer({topology, sendTimeoutMs: options.ackTimeoutMs})
    const spooler = new SpoolingProducer({
      producer,
      spoolDir: options.root,
      maxBytes: SPOOL_MAX_BYTES_CEILING,
      maxOutageMs: options.maxOutageMs,
      destination,
      retarget: options.retarget,
    })
    // The spools of other destinations are other groups' (or were named above).
    noticeSpoolEvents(spooler, {notify: options.notify, destination, maxOutageMs: options.maxOutageMs, spoolFlag: options.spoolFlag, elsewhere: false})
    spooler.on('opened', (topic: string, dir: string, opened: SpoolOpened) => {
      for (const d of opened.damaged)
        result.skipped.push({
          topic,
          dir,
          segment: d.segment,
          from: d.from,
          to: d.to,
          bytes: damagedBytes(d),
          reason: d.reason,
          quarantine: d.quarantine ?? null,
        })
    })
    spooler.on('unavailable', (_topic: string, _dir: string, e: MetaError) => void (result.error ??= {code: e.code ?? 'ERROR', message: e.message}))
    spooler.on('error', () => {}) // flush() rejects with it
    const before = new Map<string, number>()
    for (const topic of topics) {
      spooler.open(topic) // takes its spools for this destination and starts sending them
      before.set(topic, spooler.pendingOf(topic))
    }
    let error: MetaError | undefined
    try {
      await spooler.flush()
    } catch (e) {
      error = e as MetaError
    }
    for (const topic of topics) result.sent[topic] = (result.sent[topic] ?? 0) + before.get(topic)! - spooler.pendingOf(topic)
    result.pending += spooler.stats.pending
    try {
      await spooler.close()
    } catch (e) {
      error ??= e as MetaError
    }
    await producer.close()
    if (error !== undefined) result.error ??= {code: error.code, message: error.message}
  } finally {
    await topology.close()
  }
}
