/**
 * Reading the cluster as MetaQ's clients do (docs/protocol.md#producers,
 * docs/protocol.md#load-balancing): which brokers exist, which partitions producers may write and
 * consumers read. Each reader can set a one-shot watch.
 */
import {parseBrokerRole, parseBrokerUrl, MASTER_ROLE, type ZkPaths} from './paths.js'
import type {Watcher, ZkSession} from './zk-session.js'

interface ClusterPartition {
  brokerId: number
  partition: number
}

/** `ids/<id>/master` of every registered broker, by id. */
export async function readBrokers(session: ZkSession, paths: ZkPaths, watcher?: Watcher): Promise<Map<number, string>> {
  const brokers = new Map<number, string>()
  for (const child of await session.children(paths.brokerIds(), watcher)) {
    if (!/^\d+$/.test(child)) continue
    const url = await session.getString(paths.master(Number(child)))
    if (url !== undefined && parseBrokerUrl(url) !== undefined) brokers.set(Number(child), url)
  }
  return brokers
}

/**
 * Where to read each registered broker id (docs/protocol.md#load-balancing): its master's URL, or,
 * when no master is registered, one of its asynchronous slaves' (`ids/<id>/slave<k>`, the lowest
 * k), with the URLs of all its slaves and their TLS endpoints (`slave<k>_tls`). The watcher fires
 * when brokers come or go, a master node appears or disappears, or a slave joins or leaves (it may
 * fire more than once per read: make it idempotent).
 */
export async function readReadableBrokers(session: ZkSession, paths: ZkPaths, watcher?: Watcher): Promise<Map<number, ReadableBroker>> {
  const brokers = new Map<number, ReadableBroker>()
  for (const child of await session.children(paths.brokerIds(), watcher)) {
    if (!/^\d+$/.test(child)) continue
    const id = Number(child)
    if (watcher) await session.exists(paths.master(id), watcher)
    const url = await session.getString(paths.master(id))
    const slaveUrls: string[] = []
    const slaveTls = new Map<string, string>()
    const slaves = (await session.children(paths.broker(id), watcher))
      .map((name) => /^slave(\d+)$/.exec(name))
      .filter((m): m is RegExpExecArray => m !== null)
      .sort((a, b) => Number(a[1]) - Number(b[1]))
    for (const m of slaves) {
      const slaveUrl = await session.getString(`${paths.broker(id)}/${m[0]}`)
      if (slaveUrl === undefined || parseBrokerUrl(slaveUrl) === undefined) continue
      slaveUrls.push(slaveUrl)
      const tlsUrl = await session.getString(paths.slaveTls(id, Number(m[1])))
      if (tlsUrl !== undefined && parseBrokerUrl(tlsUrl)?.tls === true) slaveTls.set(slaveUrl, tlsUrl)
    }
    if (url !== undefined && parseBrokerUrl(url) !== undefined) brokers.set(id, {url, slave: false, slaveUrls, slaveTls})
    else if (slaveUrls.length > 0) brokers.set(id, {url: slaveUrls[0], slave: true, slaveUrls, slaveTls})
  }
  return brokers
}

/** A broker id as consumers read it: `url` is the master's, or (slave true) a slave's when no master is registered. */
interface ReadableBroker {
  url: string
  slave: boolean
  /** Every registered slave's URL, by slave id. */
  slaveUrls: string[]
  /** A slave's TLS endpoint (`slave<k>_tls`) by its URL, for the slaves that registered one. */
  slaveTls: Map<string, string>
}

/** Every asynchronous slave registered (`ids/<id>/slave<k>`), of one broker id or all, sorted by id then slave id. */
export async function readSlaves(session: ZkSession, paths: ZkPaths, brokerId?: number): Promise<Array<{brokerId: number; slaveId: number; url: string}>> {
  const ids = brokerId !== undefined ? [brokerId] : (await session.children(paths.brokerIds())).filter((c) => /^\d+$/.test(c)).map(Number)
  const slaves: Array<{brokerId: number; slaveId: number; url: string}> = []
  for (const id of ids) {
    for (const name of await session.children(paths.broker(id))) {
      const m = /^slave(\d+)$/.exec(name)
      if (m === null) continue
      const url = await session.getString(`${paths.broker(id)}/${name}`)
      if (url !== undefined && parseBrokerUrl(url) !== undefined) slaves.push({brokerId: id, slaveId: Number(m[1]), url})
    }
  }
  return slaves.sort((a, b) => a.brokerId - b.brokerId || a.slaveId - b.slaveId)
}

/** Master URL of one broker, or undefined when it is not registered. */
export async function readMasterUrl(session: ZkSession, paths: ZkPaths, brokerId: number, watcher?: Watcher): Promise<string | undefined> {
  if (watcher) await session.exists(paths.master(brokerId), watcher)
  return session.getString(paths.master(brokerId))
}

/**
 * Producer partitions: for each `-m` child of `topics-pub/<topic>`, `brokerId-0 …
 * brokerId-(numParts-1)` from its JSON, sorted numerically by (broker id, partition). The
 * watcher fires when a broker joins or leaves the topic and also when one changes its
 * partition count (a reload), so it may fire more than once per read: make it idempotent.
 */
export async function readPublishPartitions(session: ZkSession, paths: ZkPaths, topic: string, watcher?: Watcher): Promise<ClusterPartition[]> {
  const partitions: ClusterPartition[] = []
  for (const child of await session.children(paths.topicPub(topic), watcher)) {
    const role = parseBrokerRole(child)
    if (role === undefined || role.role !== MASTER_ROLE) continue
    const numParts = parseNumParts(await session.getString(`${paths.topicPub(topic)}/${child}`, watcher))
    for (let p = 0; p < numParts; p++) partitions.push({brokerId: role.brokerId, partition: p})
  }
  return partitions.sort((a, b) => a.brokerId - b.brokerId || a.partition - b.partition)
}

/**
 * Consumer partitions: the union over `topics-sub/<topic>` children (masters and slaves,
 * deduplicated by broker id) of `brokerId-i`, sorted as strings (so `0-10` < `0-2`). The
 * watcher also fires on a partition count change (see readPublishPartitions).
 */
export async function readSubscribePartitions(session: ZkSession, paths: ZkPaths, topic: string, watcher?: Watcher): Promise<ClusterPartition[]> {
  const byKey = new Map<string, ClusterPartition>()
  for (const child of await session.children(paths.topicSub(topic), watcher)) {
    const role = parseBrokerRole(child)
    if (role === undefined) continue
    const numParts = parseNumParts(await session.getString(`${paths.topicSub(topic)}/${child}`, watcher))
    for (let p = 0; p < numParts; p++) byKey.set(`${role.brokerId}-${p}`, {brokerId: role.brokerId, partition: p})
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p)
}

/** Every topic registered by any broker. */
export async function readTopics(session: ZkSession, paths: ZkPaths): Promise<string[]> {
  const names = new Set([...(await session.children(paths.topicsPub())), ...(await session.children(paths.topicsSub()))])
  return [...names].sort()
}

function parseNumParts(json: string | undefined): number {
  if (json === undefined) return 0
  try {
    const value = JSON.parse(json) as {numParts?: unknown}
    return Number.isInteger(value.numParts) && (value.numParts as number) > 0 ? (value.numParts as number) : 0
  } catch {
    return 0 // not MetaQ's JSON: ignore this broker's entry rather than fail the topic
  }
}
