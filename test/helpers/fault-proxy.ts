/**
 * A faulty network link on demand: a loopback TCP proxy in front of one server port, through
 * which one party reaches it (a broker its ZooKeeper, a slave its master, a client its broker,
 * one ZooKeeper server another's quorum and election ports). Each proxy can, in both directions:
 *
 * - partition the link: `blackhole` passes no byte on the open connections while closing none
 *   (a pulled cable: both sides go silent; what was sent arrives after `heal`, as TCP
 *   retransmission would deliver it); `drop` closes every connection. Either way a new
 *   connection is refused (reset) while the link is cut: a connection accepted and then left
 *   silent would look established to the party, which no partition does;
 * - slow it: every chunk is delayed by `delayMs` (order kept);
 * - make it lossy: each chunk closes its connection (both ends) with probability `lossRate`.
 *
 * Faults combine (slow and lossy at once); `heal` lifts them all. Real sockets, no protocol
 * knowledge. The chance of a lossy close comes from `random` (a seeded generator in the
 * nemesis, so a run can be replayed).
 */
import {connect, createServer, type Server, type Socket} from 'node:net'
import type {Cleanup} from './index.js'

export type PartitionMode = 'blackhole' | 'drop'

export interface FaultState {
  partitioned: PartitionMode | false
  delayMs: number
  lossRate: number
}

export interface FaultProxy {
  /** The loopback port to give the party instead of the server's. */
  readonly port: number
  /** Where the proxy forwards new connections (settable: a server that restarts on a new port). */
  target: number
  partition(mode?: PartitionMode): void
  slow(delayMs: number): void
  lossy(lossRate: number): void
  heal(): void
  state(): FaultState
  /** Connections currently relayed. */
  connections(): number
  close(): Promise<void>
}

interface Pair {
  client: Socket
  upstream: Socket | undefined
  /** Chunks waiting for their due time (slow) or for the heal (blackhole), per direction. */
  queues: {up: Array<[number, Buffer]>; down: Array<[number, Buffer]>}
}

const MAX_DELAY_MS = 60_000

export async function faultProxy(t: Cleanup, target: number, options: {random?: () => number; host?: string} = {}): Promise<FaultProxy> {
  const random = options.random ?? Math.random
  const host = options.host ?? '127.0.0.1'
  const state: FaultState = {partitioned: false, delayMs: 0, lossRate: 0}
  const pairs = new Set<Pair>()
  let currentTarget = target
  let closed = false

  const destroy = (pair: Pair): void => {
    pairs.delete(pair)
    pair.client.destroy()
    pair.upstream?.destroy()
  }

  /** Pass every chunk whose time has come, unless the link is black-holed. */
  const pump = (pair: Pair): void => {
    if (state.partitioned !== false || pair.upstream === undefined) return
    const now = Date.now()
    for (const [queue, to] of [
      [pair.queues.up, pair.upstream],
      [pair.queues.down, pair.client],
    ] as const) {
      while (queue.length > 0 && queue[0]![0] <= now) {
        const [, chunk] = queue.shift()!
        if (state.lossRate > 0 && random() < state.lossRate) {
          destroy(pair)
          return
        }
        if (!to.destroyed) to.write(chunk)
      }
      if (queue.length > 0) schedule(pair, queue[0]![0] - now)
    }
  }
  const timers = new Set<NodeJS.Timeout>()
  const schedule = (pair: Pair, ms: number): void => {
    const timer = setTimeout(
      () => {
        timers.delete(timer)
        pump(pair)
      },
      Math.max(0, ms),
    )
    timers.add(timer)
  }

  const enqueue = (pair: Pair, direction: 'up' | 'down', chunk: Buffer): void => {
    const queue = pair.queues[direction]
    const last = queue.length > 0 ? queue[queue.length - 1]![0] : 0
    // A chunk never overtakes an earlier one, also when the delay shrinks meanwhile.
    const due = Math.max(last, Date.now() + state.delayMs)
    queue.push([due, chunk])
    if (state.delayMs === 0 && queue.length === 1) pump(pair)
    else if (queue.length === 1) schedule(pair, due - Date.now())
  }

  const openUpstream = (pair: Pair): void => {
    const upstream = connect(currentTarget, host)
    pair.upstream = upstream
    upstream.on('error', () => destroy(pair)).on('close', () => destroy(pair))
    upstream.on('data', (chunk: Buffer) => enqueue(pair, 'down', chunk))
    pump(pair)
  }

  const server: Server = createServer((client) => {
    if (closed || state.partitioned !== false) {
      client.on('error', () => undefined)
      client.resetAndDestroy()
      return
    }
    const pair: Pair = {client, upstream: undefined, queues: {up: [], down: []}}
    pairs.add(pair)
    client.on('error', () => destroy(pair)).on('close', () => destroy(pair))
    client.on('data', (chunk: Buffer) => enqueue(pair, 'up', chunk))
    openUpstream(pair)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const port = (server.address() as {port: number}).port

  const proxy: FaultProxy = {
    port,
    get target() {
      return currentTarget
    },
    set target(value: number) {
      currentTarget = value
    },
    partition(mode = 'blackhole') {
      state.partitioned = mode
      if (mode === 'drop') for (const pair of [...pairs]) destroy(pair)
    },
    slow(delayMs) {
      if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
        throw new RangeError(`delay ${delayMs} ms: expected 0..${MAX_DELAY_MS}`)
      }
      state.delayMs = delayMs
    },
    lossy(lossRate) {
      if (!(lossRate >= 0 && lossRate <= 1)) throw new RangeError(`loss rate ${lossRate}: expected 0..1`)
      state.lossRate = lossRate
    },
    heal() {
      state.partitioned = false
      state.delayMs = 0
      state.lossRate = 0
      for (const pair of [...pairs]) {
        if (pair.upstream === undefined) openUpstream(pair)
        else pump(pair)
      }
    },
    state: () => ({...state}),
    connections: () => pairs.size,
    async close() {
      if (closed) return
      closed = true
      for (const timer of timers) clearTimeout(timer)
      for (const pair of [...pairs]) destroy(pair)
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
  t.after(() => proxy.close())
  return proxy
}

/** Several proxies that fail together: every link between two parties (both directions, several ports). */
export interface FaultLink {
  readonly proxies: readonly FaultProxy[]
  partition(mode?: PartitionMode): void
  slow(delayMs: number): void
  lossy(lossRate: number): void
  heal(): void
}

export function faultLink(proxies: readonly FaultProxy[]): FaultLink {
  return {
    proxies,
    partition: (mode) => proxies.forEach((p) => p.partition(mode)),
    slow: (ms) => proxies.forEach((p) => p.slow(ms)),
    lossy: (rate) => proxies.forEach((p) => p.lossy(rate)),
    heal: () => proxies.forEach((p) => p.heal()),
  }
}
