/**
 * Where spools live: one directory per topic under a spool root, by default
 * `$META_STATE_DIR/spool`, else `$XDG_STATE_HOME/meta/spool`, else `~/.local/state/meta/spool`.
 * A process that needs the spool of a topic while another live process holds it uses a spool
 * of its own beside it, `<topic>+<pid>` ('+' is not allowed in topic names); the next writer
 * of the topic takes over such a spool once its process is gone.
 */
import {existsSync, readdirSync, rmSync} from 'node:fs'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {Spool} from './spool.js'
import {readDestinationFile, sameDestination, type SpoolDestination} from './destination.js'
import {DESTINATION_FILE, parseSegmentName, QUARANTINE_DIR} from './format.js'
import {heldBy} from './lock.js'
import {inspectSpool, type SpoolInspection} from './recover.js'

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

/** The spool a process uses while another live process holds the topic's own (or it is another destination's). */
export function processSpoolDir(root: string, topic: string, pid = process.pid): string {
  return join(root, `${topic}+${pid}`)
}

/** The topic a spool directory name belongs to (`orders` and `orders+1234` both hold orders). */
function topicOfSpoolName(name: string): string {
  const plus = name.indexOf('+')
  return plus < 0 ? name : name.slice(0, plus)
}

/** A spool an earlier run left for a topic, and the destination it records (undefined: none, or unreadable). */
interface LeftoverSpool {
  dir: string
  destination: SpoolDestination | undefined
  /** The destination file exists but cannot be read. */
  unreadable: boolean
}

/**
 * The spools of a topic with records in them that no live process holds, its own first: what
 * an earlier run left behind, whatever its destination (the caller picks). Cheap when there
 * are none (one directory listing).
 */
export function leftoverSpools(root: string, topic: string): LeftoverSpool[] {
  let names: string[]
  try {
    names = readdirSync(root)
  } catch {
    return []
  }
  const out: LeftoverSpool[] = []
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
    if (heldBy(dir) !== undefined) continue
    let destination: SpoolDestination | undefined
    let unreadable = false
    try {
      destination = readDestinationFile(join(dir, DESTINATION_FILE))
    } catch {
      unreadable = true
    }
    const spool = {dir, destination, unreadable}
    if (name === topic) out.unshift(spool)
    else out.push(spool)
  }
  return out
}

/** Whether a leftover spool may be sent to `destination`: its own, none recorded (adopted), or any with `retarget`. */
export function sendsTo(spool: LeftoverSpool, destination: SpoolDestination | undefined, retarget: boolean): boolean {
  if (retarget || destination === undefined) return true
  if (spool.unreadable) return false
  return spool.destination === undefined || sameDestination(spool.destination, destination)
}

export interface SpoolListing extends SpoolInspection {
  topic: string
}

/**
 * The spools under a root, read without their locks (a spool in use is counted as far as it
 * is written): those with segments, and those that only keep quarantined damage.
 */
export function listSpools(root: string): SpoolListing[] {
  if (!existsSync(root)) return []
  const out: SpoolListing[] = []
  for (const name of readdirSync(root).sort()) {
    const dir = join(root, name)
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch {
      continue // not a directory
    }
    if (!names.some((n) => parseSegmentName(n) !== undefined) && !names.includes(QUARANTINE_DIR)) continue
    out.push({topic: topicOfSpoolName(name), ...inspectSpool(dir)})
  }
  return out
}

/**
 * Move the records of another spool left behind to the end of `into`, then delete them (a
 * crash in between sends them twice); its quarantine stays. On a write that fails, what was
 * written is taken from the other spool and the rest stays there. Returns what opening it
 * found, or undefined when it could not be opened (a live process took it meanwhile).
 */
export function mergeSpool(into: Spool, dir: string): Spool['opened'] | undefined {
  let other: Spool
  try {
    other = Spool.open(dir)
  } catch {
    return undefined
  }
  const opened = other.opened
  let whole = true
  for (let records = other.read(other.position); records.length > 0 && whole; records = other.read(records.at(-1)!.end)) {
    const ends = records.map((record) => {
      into.append({partition: record.partition, attribute: record.attribute, payload: record.payload})
      return into.end
    })
    whole = into.flush()
    records.forEach((record, i) => {
      if (ends[i]! <= into.written) other.ack(record.position, record.end)
    })
  }
  if (!whole) into.discardHeld()
  try {
    other.close() // empty now: its files go, and its directory unless it keeps a quarantine
  } catch {}
  if (whole && !existsSync(join(dir, QUARANTINE_DIR))) rmSync(dir, {recursive: true, force: true})
  return opened
}
