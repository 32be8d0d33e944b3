/**
 * `meta spool list|send|drop`: what `meta send` left in its spools, sending it, discarding it.
 * The spools are the library's (client/spool); sending uses the same SpoolingProducer as
 * `meta send`.
 */
import {rmSync} from 'node:fs'
import {countPending, listSpools, SPOOL_MAX_BYTES_CEILING, type SpoolListing} from '../client/spool/index.js'
import {MetaError} from '../protocol/errors.js'
import {confirmOnTty, declined} from './admin/confirm.js'
import {formatBytes, formatCount} from './format.js'
import {renderTable} from './output.js'

export interface SpoolInfo {
  topic: string
  dir: string
  /** Unacknowledged messages; null while another process has the spool open. */
  messages: number | null
  bytes: number
  /** pid of the `meta send` using it, if one is. */
  inUseBy: number | null
}

/** Every spool under `root`, with its pending messages counted (a spool in use is not opened). */
export function spoolInfos(root: string, topics: string[] = []): SpoolInfo[] {
  const wanted = new Set(topics)
  return listSpools(root)
    .filter((s) => wanted.size === 0 || wanted.has(s.topic))
    .map((s) => infoOf(s))
    .filter((s) => s.messages !== 0 || s.inUseBy !== null)
}

function infoOf(s: SpoolListing): SpoolInfo {
  if (s.inUseBy !== undefined) return {topic: s.topic, dir: s.dir, messages: null, bytes: s.bytes, inUseBy: s.inUseBy}
  const counted = countPending(s.dir)
  return {topic: s.topic, dir: s.dir, messages: counted.records, bytes: counted.bytes, inUseBy: null}
}

export function renderSpools(root: string, spools: SpoolInfo[]): string {
  if (spools.length === 0) return `no spools in ${root}\n`
  const rows = spools.map((s) => [s.topic, s.messages === null ? '?' : formatCount(s.messages), formatBytes(s.bytes), s.inUseBy === null ? '-' : `meta send (pid ${s.inUseBy})`, s.dir])
  return `${renderTable(['TOPIC', 'MESSAGES', 'SIZE', 'IN USE BY', 'DIRECTORY'], rows, {align: ['left', 'right', 'right', 'left', 'left']})}\n`
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
  if (missing.length > 0) throw new MetaError('NOT_FOUND', `no spool for topic${missing.length === 1 ? '' : 's'} ${missing.map((t) => `"${t}"`).join(', ')} in ${root}`)
  const busy = spools.find((s) => s.inUseBy !== null)
  if (busy !== undefined) throw new MetaError('DATA_DIR_LOCKED', `the spool of topic "${busy.topic}" is in use by process ${busy.inUseBy}: stop it first`)
  if (!options.json) process.stdout.write(renderSpools(root, spools))
  const count = spools.reduce((n, s) => n + (s.messages ?? 0), 0)
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
  error?: {code: string; message: string}
}

interface SpoolSendOptions {
  root: string
  topics: string[]
  broker?: string
  zk?: string
  zkRoot?: string
  maxOutageMs?: number
  ackTimeoutMs?: number
  notify: (line: string) => void
}

/** Send what the spools hold (every spool, or those of `topics`) and wait for the acknowledgements. */
export async function sendSpools(options: SpoolSendOptions): Promise<SpoolSendResult> {
  const [{createTopology}, {createProducer}, {createSendSpooler}] = await Promise.all([
    import('../client/topology.js'),
    import('../client/producer.js'),
    import('./send-spool.js'),
  ])
  const spools = spoolInfos(options.root, options.topics)
  const busy = spools.find((s) => s.inUseBy !== null)
  if (busy !== undefined) throw new MetaError('DATA_DIR_LOCKED', `the spool of topic "${busy.topic}" is in use by process ${busy.inUseBy}: it is being sent already`)
  const missing = options.topics.filter((t) => !spools.some((s) => s.topic === t))
  if (missing.length > 0) throw new MetaError('NOT_FOUND', `no spool for topic${missing.length === 1 ? '' : 's'} ${missing.map((t) => `"${t}"`).join(', ')} in ${options.root}`)
  const topology = createTopology({broker: options.zk === undefined ? options.broker : undefined, zk: options.zk, zkRoot: options.zkRoot, requestTimeoutMs: options.ackTimeoutMs})
  try {
    // A broker never reached fails at once, as `meta send` does, unless --max-outage.
    if (options.maxOutageMs === undefined) await topology.connection(topology.brokerIds()[0] ?? 0)
    const producer = createProducer({topology, sendTimeoutMs: options.ackTimeoutMs})
    const spooler = createSendSpooler(producer, {dir: options.root, maxBytes: SPOOL_MAX_BYTES_CEILING, maxOutageMs: options.maxOutageMs, notify: options.notify}, undefined)
    spooler.on('error', () => {}) // flush() rejects with it
    const topics = [...new Set(spools.map((s) => s.topic))]
    const before = new Map<string, number>()
    for (const topic of topics) {
      spooler.open(topic) // takes its spools (a topic's own and those of processes gone) and starts sending them
      before.set(topic, spooler.pendingOf(topic))
    }
    let error: MetaError | undefined
    try {
      await spooler.flush()
    } catch (e) {
      error = e as MetaError
    }
    const sent: Record<string, number> = {}
    for (const topic of topics) sent[topic] = before.get(topic)! - spooler.pendingOf(topic)
    const pending = spooler.stats.pending
    await spooler.close()
    await producer.close()
    return {sent, pending, ...(error === undefined ? {} : {error: {code: error.code, message: error.message}})}
  } finally {
    await topology.close()
  }
}
