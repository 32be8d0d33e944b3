/**
 * Where a spool's messages were meant to go: a standalone broker (its `host:port`) or a
 * cluster (its ZooKeeper connect string and root). A spool records the destination it was
 * written for in its `destination` file (format.ts) and is sent only there, so that messages
 * meant for one broker never land on another that the next command happens to name.
 *
 * Destinations are compared as normalised text, not by resolving names: `localhost` is
 * 127.0.0.1, a missing port is the default one, host names are lower case, and a ZooKeeper
 * ensemble is the same whatever the order of its hosts.
 */
import {readFileSync} from 'node:fs'
import {formatBrokerAddress, parseBrokerAddress} from '../address.js'
import {DEFAULT_ZK_ROOT} from '../../cluster/paths.js'
import {MetaError} from '../../protocol/errors.js'

export type SpoolDestination = {broker: string} | {zk: string; zkRoot: string}

const DEFAULT_ZK_PORT = 2181

/** The destination of a connection target, normalised; undefined when it names none. */
export function spoolDestination(target: {broker?: string; zk?: string; zkRoot?: string}): SpoolDestination | undefined {
  if (target.zk !== undefined) return {zk: normaliseConnectString(target.zk), zkRoot: normaliseRoot(target.zkRoot ?? DEFAULT_ZK_ROOT)}
  if (target.broker === undefined) return undefined
  const address = parseBrokerAddress(target.broker)
  const host = address.host.toLowerCase()
  return {broker: formatBrokerAddress({...address, host: host === 'localhost' ? '127.0.0.1' : host})}
}

export function sameDestination(a: SpoolDestination, b: SpoolDestination): boolean {
  return 'broker' in a ? 'broker' in b && a.broker === b.broker : 'zk' in b && a.zk === b.zk && a.zkRoot === b.zkRoot
}

/** `broker 127.0.0.1:8123` or `ZooKeeper zk1:2181 (root /meta)`, for messages and tables. */
export function describeDestination(d: SpoolDestination): string {
  return 'broker' in d ? `broker ${d.broker}` : `ZooKeeper ${d.zk} (root ${d.zkRoot})`
}

/** The flags that send to it: `-b 127.0.0.1:8123` or `--zk zk1:2181 --zk-root /meta`. */
export function destinationFlags(d: SpoolDestination): string {
  return 'broker' in d ? `-b ${d.broker}` : `--zk ${d.zk}${d.zkRoot === DEFAULT_ZK_ROOT ? '' : ` --zk-root ${d.zkRoot}`}`
}

/** The file's text: one line of JSON. */
export function encodeDestination(d: SpoolDestination): string {
  return `${JSON.stringify(d)}\n`
}

/**
 * The destination a `destination` file records: undefined when there is no file (a spool
 * written before spools recorded one); throws STORAGE_CORRUPT for one that cannot be read.
 */
export function readDestinationFile(path: string): SpoolDestination | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  const d = parsed as Record<string, unknown> | undefined
  if (d !== undefined && d !== null && typeof d.broker === 'string') return {broker: d.broker}
  if (d !== undefined && d !== null && typeof d.zk === 'string' && typeof d.zkRoot === 'string') return {zk: d.zk, zkRoot: d.zkRoot}
  throw new MetaError('STORAGE_CORRUPT', `${path}: expected {"broker":"host:port"} or {"zk":"…","zkRoot":"…"}, found ${JSON.stringify(text.slice(0, 80))}`)
}

/** `B:2181,a:2181/chroot` → `a:2181,b:2181/chroot`. */
function normaliseConnectString(text: string): string {
  const trimmed = text.trim()
  const slash = trimmed.indexOf('/')
  const hosts = slash < 0 ? trimmed : trimmed.slice(0, slash)
  const chroot = slash < 0 ? '' : normaliseRoot(trimmed.slice(slash))
  const list = hosts
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '')
    .map((h) => (/:\d+$/.test(h) && !/^\[[^\]]*\]$/.test(h) ? h : `${h}:${DEFAULT_ZK_PORT}`))
    .map((h) => (h.startsWith('localhost:') ? `127.0.0.1${h.slice('localhost'.length)}` : h))
    .sort()
  return `${list.join(',')}${chroot === '/' ? '' : chroot}`
}

function normaliseRoot(root: string): string {
  const r = `/${root.trim().replace(/^\/+|\/+$/g, '')}`
  return r
}
