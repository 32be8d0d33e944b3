/**
 * A real ZooKeeper server (Debian's `zookeeper` package) for cluster tests: standalone, on a
 * free loopback port, with its data in a temp dir; stoppable and restartable on the same port
 * and data. Missing packages fail the test with the command that installs them (never a skip).
 */
import {existsSync} from 'node:fs'
import {mkdir, writeFile, readFile} from 'node:fs/promises'
import {connect} from 'node:net'
import {join} from 'node:path'
import zookeeper from 'node-zookeeper-client'
import {after, before} from 'node:test'
import {deadline, suiteScope, tmpDir, waitFor, withDeadline, type Cleanup} from './index.js'
import {probeFreePort} from './ports.js'
import {startWatched, type ServerProcess} from './watched.js'

const JARS = ['/usr/share/java/zookeeper.jar', '/usr/share/java/slf4j-log4j12.jar', '/usr/share/java/log4j-1.2.jar']

export interface TestZooKeeper {
  /** `127.0.0.1:<port>` */
  connect: string
  port: number
  /** Stop the server (SIGKILL). */
  stop(): Promise<void>
  /** Start it again on the same port and data directory. */
  start(): Promise<void>
  /** End a client's session from the server side (the client sees 'expired'). */
  expireSession(client: zookeeper.Client): Promise<void>
  /** A plain client for assertions, closed after the test. */
  client(): Promise<zookeeper.Client>
}

function fourLetter(port: number, word: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({port, host: '127.0.0.1'})
    let answer = ''
    // A server still starting may accept and then say nothing: give up on this attempt.
    socket.setTimeout(1000, () => socket.destroy())
    socket.on('connect', () => socket.write(word))
    socket.on('data', (d) => (answer += d.toString()))
    socket.on('error', () => resolve(''))
    socket.on('close', () => resolve(answer))
  })
}

export interface ZooKeeperOptions {
  /**
   * Longest session the server grants, in ms (ZooKeeper's default is 20 ticks: 10 s here). A
   * test that must tell "before the session expired" from a slow machine asks for more.
   */
  maxSessionTimeoutMs?: number
}

export async function startZooKeeper(t: Cleanup, options: ZooKeeperOptions = {}): Promise<TestZooKeeper> {
  const missing = JARS.filter((jar) => !existsSync(jar))
  if (missing.length > 0) {
    throw new Error(`ZooKeeper is not installed (missing ${missing.join(', ')}): run "apt-get install -y zookeeper" or "bash scripts/provision.sh"`)
  }
  const dir = await tmpDir(t, 'meta-zk-')
  let port = 0
  const dataDir = join(dir, 'data')
  await mkdir(dataDir, {recursive: true})
  const cfg = join(dir, 'zoo.cfg')
  const writeConfig = () =>
    writeFile(
      cfg,
      [
        'tickTime=500',
        'initLimit=10',
        'syncLimit=5',
        `dataDir=${join(dir, 'data')}`,
        `clientPort=${port}`,
        'clientPortAddress=127.0.0.1',
        'maxClientCnxns=0',
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr,stat,conf',
        'forceSync=no',
        // Sessions may be as short as 2 ticks (1 s), so tests can expire them quickly.
        'minSessionTimeout=1000',
        ...(options.maxSessionTimeoutMs === undefined ? [] : [`maxSessionTimeout=${options.maxSessionTimeoutMs}`]),
        '',
      ].join('\n'),
    )
  let server: ServerProcess | undefined
  const clients: zookeeper.Client[] = []
  const log = join(dir, 'zk.log')

  /**
   * Launch on `port` and wait until the server answering there is ours (`conf` names our data
   * directory): another test file may have been handed the same free port a moment earlier.
   * Resolves false when our server exited (the port was taken).
   */
  const launch = async (): Promise<boolean> => {
    const {openSync} = await import('node:fs')
    const out = openSync(log, 'a')
    server = startWatched(
      'java',
      [
        '-Xmx256m',
        '-Dzookeeper.root.logger=INFO,CONSOLE',
        '-cp',
        ['/etc/zookeeper/conf', ...JARS].join(':'),
        'org.apache.zookeeper.server.quorum.QuorumPeerMain',
        cfg,
      ],
      out,
    )
    const started = server
    let gone = false
    void started.exited.then(() => (gone = true))
    return waitFor(async () => (gone ? 'gone' : (await fourLetter(port, 'conf')).includes(dataDir) ? 'ours' : false), {
      what: `ZooKeeper on 127.0.0.1:${port}`,
      timeoutMs: 30_000,
      intervalMs: 50,
    }).then(
      async (state) => {
        if (state === 'ours') return true
        await started.stop()
        return false
      },
      async (error: Error) => {
        await started.stop()
        const tail = (await readFile(log, 'utf8').catch(() => '')).split('\n').slice(-20).join('\n')
        throw new Error(`${error.message}\n--- zk.log ---\n${tail}`)
      },
    )
  }

  /** First start: a fresh free port, again if another process got it first. */
  const startFresh = async () => {
    for (let attempt = 0; attempt < 5; attempt++) {
      port = await probeFreePort()
      await writeConfig()
      if (await launch()) return
    }
    throw new Error('could not start ZooKeeper on a free port after 5 attempts')
  }

  /** Restart on the same port and data (clients reconnect to it). */
  const start = async () => {
    if (!(await launch())) throw new Error(`ZooKeeper could not restart on port ${port}: taken meanwhile`)
  }

  // Always a hard stop: a ZooKeeper server keeps its sessions in its log either way.
  const stop = async () => {
    const running = server
    server = undefined
    await running?.stop()
  }

  /**
   * A client on `victim`'s session: 'expired' when the server has no such session; else it has
   * just taken the session over and is closing it (closeSession ends the session for good).
   */
  const sessionTwin = async (victim: zookeeper.Client): Promise<'expired' | {closed: Promise<void>}> => {
    const twin = zookeeper.createClient(`127.0.0.1:${port}`, {
      sessionTimeout: 5000,
      spinDelay: 100,
      retries: 0,
      sessionId: victim.getSessionId(),
      sessionPassword: victim.getSessionPassword(),
    } as zookeeper.Option)
    clients.push(twin)
    const state = await new Promise<'connected' | 'expired'>((resolve, reject) => {
      const cancel = deadline(15_000, () => reject(new Error(`no answer from ZooKeeper on 127.0.0.1:${port} within 15 s (scaled by the load)`)))
      twin.once('connected', () => {
        cancel()
        resolve('connected')
      })
      twin.once('expired', () => {
        cancel()
        resolve('expired')
      })
      twin.connect()
    })
    if (state === 'expired') {
      twin.close()
      return 'expired'
    }
    const closed = new Promise<void>((resolve) => twin.once('disconnected', () => resolve()))
    twin.close()
    return {closed: withDeadline(closed, 10_000, 'the twin session to close')}
  }

  const newClient = async (options: Record<string, unknown> = {}) => {
    const client = zookeeper.createClient(`127.0.0.1:${port}`, {sessionTimeout: 5000, spinDelay: 100, retries: 2, ...options})
    clients.push(client)
    await new Promise<void>((resolve, reject) => {
      const cancel = deadline(15_000, () => reject(new Error(`no ZooKeeper session from 127.0.0.1:${port} within 15 s (scaled by the load)`)))
      const done = () => {
        cancel()
        resolve()
      }
      client.once('connected', done)
      client.once('expired', done) // a twin of a session that is already gone
      client.connect()
    })
    return client
  }

  await startFresh()
  t.after(async () => {
    for (const c of clients) c.close()
    await stop()
  })
  return {
    connect: `127.0.0.1:${port}`,
    port,
    stop,
    start,
    client: () => newClient(),
    async expireSession(victim) {
      // The classic trick: a second client on the same session, closed, ends the session.
      // node-zookeeper-client reconnects a dropped client at once (next tick), and the server
      // gives the session to whichever connection asked last, so the victim used to win it
      // back before the twin's close landed (on a busy machine, every time). So the victim's
      // reconnect is held (its connection manager's connect() deferred) until a probe on the
      // same session hears it has expired; then it reconnects and hears the same.
      const expired = new Promise<void>((resolve) => victim.once('expired', () => resolve()))
      const manager = (victim as unknown as {connectionManager: {connect(): void}}).connectionManager
      const connect = manager.connect
      let held = false
      manager.connect = () => {
        held = true
      }
      try {
        await waitFor(
          async () => {
            const twin = await sessionTwin(victim)
            if (twin === 'expired') return true
            await twin.closed
            return false
          },
          {what: 'the server to end the ZooKeeper session', timeoutMs: 30_000, intervalMs: 50},
        )
      } finally {
        manager.connect = connect
        if (held) connect.call(manager)
      }
      await withDeadline(expired, 30_000, 'the client to hear that its ZooKeeper session expired')
    },
  }
}

const NO_NODE = -101

function isNoNode(err: unknown): boolean {
  return (err as {getCode?: () => number})?.getCode?.() === NO_NODE
}

/** A node's data as UTF-8 ('' for none), or undefined when it does not exist. */
export function zkRead(client: zookeeper.Client, path: string): Promise<string | undefined> {
  return new Promise((resolve, reject) =>
    client.getData(path, (err, data) => {
      if (err && isNoNode(err)) resolve(undefined)
      else if (err) reject(err)
      else resolve(data?.toString('utf8') ?? '')
    }),
  )
}

/** A node's children, sorted ([] when it does not exist). */
export function zkChildren(client: zookeeper.Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    client.getChildren(path, (err, list) => {
      if (err && isNoNode(err)) resolve([])
      else if (err) reject(err)
      else resolve([...list].sort())
    }),
  )
}

/** A node's stat, or undefined when it does not exist. */
export function zkStat(client: zookeeper.Client, path: string): Promise<zookeeper.Stat | undefined> {
  return new Promise((resolve, reject) => client.exists(path, (err, s) => (err ? reject(err) : resolve(s ?? undefined))))
}

/**
 * One ZooKeeper for the enclosing describe block (or file): started in `before`, stopped with
 * everything registered on its scope in `after`. `ready` receives it and a client of it.
 */
export function zooKeeperForSuite(ready: (zk: TestZooKeeper, client: zookeeper.Client) => void, options: ZooKeeperOptions = {}): void {
  const scope = suiteScope()
  before(async () => {
    const zk = await startZooKeeper(scope, options)
    ready(zk, await zk.client())
  })
  after(() => scope.run())
}
