/**
 * Where spools live: one directory per topic under a spool root, by default
 * `$META_STATE_DIR/spool`, else `$XDG_STATE_HOME/meta/spool`, else `~/.local/state/meta/spool`.
 * A process that needs the spool of a topic while another live process holds it uses a spool
 * of its own beside it, `<topic>+<pid>` ('+' is not allowed in topic names); the next writer
 * of the topic takes over such a spool once its process is gone.
 */
import {existsSync, readdirSync, readFileSync, rmSync, statSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {isAlive, lockOwner, Spool} from './spool.js'
import {parseSegmentName, POSITION_FILE} from './format.js'

/** The state directory of meta (spools, registries). */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.META_STATE_DIR) return env.META_STATE_DIR
  if (env.XDG_STATE_HOME) return join(env.XDG_STATE_HOME, 'meta')
  return join(homedir(), '.local', 'state', 'meta')
}

export function defaultSpoolRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(stateDir(env), 'spool')
}

/** The spool directory of a topic (topic names are safe file names: [A-Za-z0-9_.-]). */
export function topicSpoolDir(root: string, topic: string): string {
  return join(root, topic)
}

/** The spool a process uses while another live process holds the topic's own. */
export function processSpoolDir(root: string, topic: string, pid = process.pid): string {
  return join(root, `${topic}+${pid}`)
}

/** The topic a spool directory name belongs to (`orders` and `orders+1234` both hold orders). */
function topicOfSpoolName(name: string): string {
  const plus = name.indexOf('+')
  return plus < 0 ? name : name.slice(0, plus)
}

/**
 * The spools of a topic with records in them that no live process holds, its own first: what
 * an earlier run left behind. Cheap when there are none (one directory listing).
 */
export function leftoverSpoolDirs(root: string, topic: string): string[] {
  let names: string[]
  try {
    names = readdirSync(root)
  } catch {
    return []
  }
  const out: string[] = []
  for (const name of names.sort()) {
    if (name !== topic && !name.startsWith(`${topic}+`)) continue
    const dir = join(root, name)
    let files: string[]
    try {
      files = readdirSync(dir)
    } catch {
      continue
    }
    if (!files.some((f) => parseSegmentName(f) !== undefined)) continue
    const owner = lockOwner(dir)
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) continue
    if (name === topic) out.unshift(dir)
    else out.push(dir)
  }
  return out
}

export interface SpoolListing {
  topic: string
  dir: string
  /** Bytes in segment files past the acknowledged position (an upper bound of what is pending). */
  bytes: number
  /** A live process has it open. */
  inUseBy: number | undefined
}

/** The spools under a root, without opening them (a spool in use is listed too). */
export function listSpools(root: string): SpoolListing[] {
  if (!existsSync(root)) return []
  const out: SpoolListing[] = []
  for (const name of readdirSync(root).sort()) {
    const dir = join(root, name)
    const topic = topicOfSpoolName(name)
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch {
      continue // not a directory
    }
    const starts = names.map((n) => ({name: n, start: parseSegmentName(n)})).filter((s) => s.start !== undefined)
    if (starts.length === 0) continue
    let position = 0
    try {
      position = Number(readFileSync(join(dir, POSITION_FILE), 'utf8').trim()) || 0
    } catch {}
    let bytes = 0
    for (const {name, start} of starts) {
      const size = statSync(join(dir, name)).size
      bytes += Math.max(0, Math.min(size, start! + size - position))
    }
    const owner = lockOwner(dir)
    out.push({topic, dir, bytes, inUseBy: owner !== undefined && owner !== process.pid && isAlive(owner) ? owner : undefined})
  }
  return out
}

/** Count the pending records of a spool (opens it: fails when another process has it). */
export function countPending(dir: string): {records: number; bytes: number} {
  const spool = Spool.open(dir)
  try {
    return {records: spool.pending, bytes: spool.pendingBytes}
  } finally {
    spool.close()
  }
}

/** Move the records of another spool left behind to the end of `into`, then delete it (a crash in between sends them twice). */
export function mergeSpool(into: Spool, dir: string): void {
  let other: Spool
  try {
    other = Spool.open(dir)
  } catch {
    return // taken by a live process meanwhile
  }
  for (let records = other.read(other.position); records.length > 0; records = other.read(records.at(-1)!.end)) {
    for (const record of records) into.append({partition: record.partition, attribute: record.attribute, payload: record.payload})
  }
  into.flush()
  other.close()
  rmSync(dir, {recursive: true, force: true})
}
