/**
 * A 3-node ZooKeeper ensemble (Debian's `zookeeper` package, QuorumPeerMain) on loopback, for
 * cluster tests and the nemesis: each node stoppable (kill -9) and restartable on its ports
 * and data; the leader found by `srvr`. Ports are probed free (probeFreePort) and the whole
 * start retried when a node could not bind.
 *
 * With `faults: true`, every link between two ZooKeeper servers goes through fault proxies
 * (fault-proxy.ts): each server's own zoo.cfg names its peers' quorum and election ports by
 * the proxy of that pair, so `isolate(i)` cuts node i from the other two (both directions)
 * while clients still reach it. Clients reach the ensemble directly (`connect`) or through
 * a route of their own (`route()`: one proxy per server, cut as one link: a broker cut from
 * ZooKeeper).
 */
import {existsSync, openSync} from 'node:fs'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {connect as tcpConnect} from 'node:net'
import {join} from 'node:path'
import zookeeper from 'node-zookeeper-client'
import {deadline, tmpDir, waitFor, type Cleanup} from './index.js'
import {faultLink, faultProxy, type FaultLink, type FaultProxy} from './fault-proxy.js'
import {probeFreePort} from './ports.js'
import {startWatched, type ServerProcess} from './watched.js'

const JARS = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-log4j12.jar', '/usr/share/java/log4j-1.2.jar']

export type ZkMode = 'leader' | 'follower' | 'standalone' | 'down'

export interface ZkNode {
  /** 1-based, ZooKeeper's server id (myid). */
  id: number
  clientPort: number
  /** kill -9. */
  stop(): Promise<void>
  /** Start again on the same ports and data. */
  start(): Promise<void>
  running(): boolean
  /** Its role now ('down' when it does not answer, or answers that it serves no requests). */
  mode(): Promise<ZkMode>
}

export interface ZkRoute extends FaultLink {
  /** The connect string through this route's proxies. */
  connect: string
}

export interface ZkEnsemble {
  /** `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` */
  connect: string
  nodes: ZkNode[]
  /** The node that is leader now (waits until one is). */
  leader(timeoutMs?: number): Promise<ZkNode>
  /**
   * Waits until a quorum serves requests (a leader and a follower), formed without the nodes in
   * `excluding` (servers just cut off, which take a few ticks to notice they lead no one).
   */
  waitForQuorum(options?: {timeoutMs?: number; excluding?: number[]}): Promise<void>
  /** Cut node `id` from the other servers (both directions); needs `faults`. */
  isolate(id: number, mode?: 'blackhole' | 'drop'): void
  /** The link between two servers (both directions, quorum and election ports); needs `faults`. */
  peerLink(a: number, b: number): FaultLink
  /** Heal every server-to-server link. */
  healPeers(): void
  /** A client route of its own: one proxy per server, faulted as one link. */
  route(t?: Cleanup): Promise<ZkRoute>
  client(): Promise<zookeeper.Client>
}

export interface ZkEnsembleOptions {
  /** Put every server-to-server link through fault proxies. */
  faults?: boolean
  /** ms (default 500: sessions from 1 s, as the single-server helper). */
  tickTime?: number
  /** The proxies' lossy-close chance generator (seeded in the nemesis). */
  random?: () => number
}

function fourLetter(port: number, word: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = tcpConnect({port, host: '127.0.0.1'})
    let answer = ''
    socket.setTimeout(1000, () => socket.destroy())
    socket.on('connect', () => socket.write(word))
    socket.on('data', (d) => (answer += d.toString()))
    socket.on('error', () => resolve(''))
    socket.on('close', () => resolve(answer))
  })
}

/** Mode from `srvr`: a node without a quorum answers "not currently serving requests". */
async function modeOf(port: number): Promise<ZkMode> {
  const answer = await fourLetter(port, 'srvr')
  const match = /Mode: (\w+)/.exec(answer)
  return match ? (match[1] as ZkMode) : 'down'
}

const SERVERS = 3

export async function startZkEnsemble(t: Cleanup, options: ZkEnsembleOptions = {}): Promise<ZkEnsemble> {
  const missing = JARS.filter((jar) => !existsSync(jar))
  if (missing.length > 0) {
    throw new Error(`ZooKeeper is not installed (missing ${missing.join(', ')}): run "apt-get install -y zookeeper" or "bash scripts/provision.sh"`)
  }
  let lastError: Error | undefined
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      return await tryStart(t, options)
    } catch (error) {
      lastError = error as Error
      if (!/could not bind|exited/.test(lastError.message)) throw lastError
    }
  }
  throw lastError!
}

async function tryStart(t: Cleanup, options: ZkEnsembleOptions): Promise<ZkEnsemble> {
  const dir = await tmpDir(t, 'meta-zk-ensemble-')
  const tick = options.tickTime ?? 500
  const ports: Array<{client: number; quorum: number; election: number}> = []
  for (let i = 0; i < SERVERS; i++) ports.push({client: await probeFreePort(), quorum: await probeFreePort(), election: await probeFreePort()})
  // proxies[from][to]: what server `from` dials to reach server `to`'s quorum and election ports.
  const proxies: Array<Array<{quorum: FaultProxy; election: FaultProxy} | undefined>> = []
  for (let from = 0; from < SERVERS; from++) {
    proxies.push([])
    for (let to = 0; to < SERVERS; to++) {
      proxies[from]!.push(
        options.faults && from !== to
          ? {
              quorum: await faultProxy(t, ports[to]!.quorum, {random: options.random}),
              election: await faultProxy(t, ports[to]!.election, {random: options.random}),
            }
          : undefined,
      )
    }
  }
  const clients: zookeeper.Client[] = []
  const nodes: ZkNode[] = []
  for (let i = 0; i < SERVERS; i++) {
    const nodeDir = join(dir, `zk${i + 1}`)
    const dataDir = join(nodeDir, 'data')
    await mkdir(dataDir, {recursive: true})
    await writeFile(join(dataDir, 'myid'), `${i + 1}\n`)
    const servers = ports.map((p, j) => {
      const via = proxies[i]![j]
      return `server.${j + 1}=127.0.0.1:${via ? via.quorum.port : p.quorum}:${via ? via.election.port : p.election}`
    })
    const cfg = join(nodeDir, 'zoo.cfg')
    await writeFile(
      cfg,
      [
        `tickTime=${tick}`,
        // A follower gives its leader syncLimit ticks (5 s): less flaps on a loaded machine.
        'initLimit=20',
        'syncLimit=10',
        `dataDir=${dataDir}`,
        `clientPort=${ports[i]!.client}`,
        'clientPortAddress=127.0.0.1',
        'maxClientCnxns=0',
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr,stat,conf',
        'forceSync=no',
        'minSessionTimeout=1000',
        'reconfigEnabled=false',
        'standaloneEnabled=false',
        // Each server binds its own quorum and election ports (its line names a proxy's ports
        // in the others' configs, never in its own).
        'quorumListenOnAllIPs=false',
        ...servers,
        '',
      ].join('\n'),
    )
    const log = join(nodeDir, 'zk.log')
    let server: ServerProcess | undefined
    let exitedEarly = false
    const start = async (): Promise<void> => {
      const out = openSync(log, 'a')
      const started = startWatched(
        'java',
        [
          '-Xmx192m',
          '-XX:+UseSerialGC',
          '-Dzookeeper.root.logger=INFO,CONSOLE',
          '-cp',
          ['/etc/zookeeper/conf', ...JARS].join(':'),
          'org.apache.zookeeper.server.quorum.QuorumPeerMain',
          cfg,
        ],
        out,
      )
      server = started
      exitedEarly = false
      void started.exited.then(() => {
        if (server === started) {
          exitedEarly = true
          server = undefined
        }
      })
      // Up when it answers on its client port with our data directory (not another test's server).
      await waitFor(
        async () => {
          if (exitedEarly) throw new Error(`ZooKeeper ${i + 1} exited (could not bind?)`)
          return (await fourLetter(ports[i]!.client, 'conf')).includes(dataDir)
        },
        {what: `ZooKeeper ${i + 1} on 127.0.0.1:${ports[i]!.client}`, timeoutMs: 30_000, intervalMs: 50},
      ).catch(async (error: Error) => {
        const tail = (await readFile(log, 'utf8').catch(() => ''))
          .split('\n')
          .filter((l) => /ERROR|Exception|bind/i.test(l))
          .slice(-8)
          .join('\n')
        throw new Error(`${error.message}${/BindException|Address already in use/.test(tail) ? ' (could not bind)' : ''}\n${tail}`)
      })
    }
    const stop = async (): Promise<void> => {
      const running = server
      server = undefined
      await running?.stop()
    }
    nodes.push({
      id: i + 1,
      clientPort: ports[i]!.client,
      start,
      stop,
      running: () => server !== undefined,
      mode: () => modeOf(ports[i]!.client),
    })
    t.after(stop)
  }
  // Start all three at once, so the election has everyone early.
  try {
    await Promise.all(nodes.map((n) => n.start()))
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()))
    throw error
  }
  const connect = ports.map((p) => `127.0.0.1:${p.client}`).join(',')

  const leader = async (timeoutMs = 30_000): Promise<ZkNode> =>
    waitFor(
      async () => {
        for (const node of nodes) if (node.running() && (await node.mode()) === 'leader') return node
        return undefined
      },
      {what: 'a ZooKeeper leader', timeoutMs, intervalMs: 50},
    )

  const ensemble: ZkEnsemble = {
    connect,
    nodes,
    leader,
    async waitForQuorum({timeoutMs = 30_000, excluding = []} = {}) {
      await waitFor(
        async () => {
          const modes = await Promise.all(nodes.filter((n) => !excluding.includes(n.id)).map((n) => n.mode()))
          return modes.filter((m) => m === 'leader' || m === 'follower').length >= 2 && modes.includes('leader')
        },
        {what: 'a ZooKeeper quorum', timeoutMs, intervalMs: 50},
      )
    },
    peerLink(a, b) {
      const forward = proxies[a - 1]![b - 1]
      const back = proxies[b - 1]![a - 1]
      if (!forward || !back) throw new Error('peerLink needs startZkEnsemble(t, {faults: true}) and two different servers')
      return faultLink([forward.quorum, forward.election, back.quorum, back.election])
    },
    isolate(id, mode = 'blackhole') {
      for (let other = 1; other <= SERVERS; other++) if (other !== id) ensemble.peerLink(id, other).partition(mode)
    },
    healPeers() {
      for (const row of proxies) for (const pair of row) if (pair) (pair.quorum.heal(), pair.election.heal())
    },
    async route(scope = t) {
      const routeProxies = await Promise.all(ports.map((p) => faultProxy(scope, p.client, {random: options.random})))
      return Object.assign(faultLink(routeProxies), {connect: routeProxies.map((p) => `127.0.0.1:${p.port}`).join(',')})
    },
    async client() {
      const client = zookeeper.createClient(connect, {sessionTimeout: 5000, spinDelay: 100, retries: 2})
      clients.push(client)
      await new Promise<void>((resolve, reject) => {
        const cancel = deadline(30_000, () => reject(new Error(`no ZooKeeper session from ${connect} within 30 s (scaled by the load)`)))
        client.once('connected', () => {
          cancel()
          resolve()
        })
        client.connect()
      })
      return client
    },
  }
  t.after(() => {
    for (const c of clients) c.close()
  })
  await ensemble.waitForQuorum({timeoutMs: 60_000})
  return ensemble
}
