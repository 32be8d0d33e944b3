/**
 * A ZooKeeper session that survives expiry: promise-returning operations over
 * node-zookeeper-client, and a fresh underlying client whenever the server expires the
 * session (the old client is unusable then). Registrants listen for 'session' (a new session
 * began: re-create ephemeral nodes, set watches again); 'expired' is emitted first.
 *
 * Watches are one-shot, as in ZooKeeper: the callers set them again when they fire.
 *
 * node-zookeeper-client is loaded by connect(), not when this module is: a command that
 * never talks to ZooKeeper does not pay for it at start (docs/benchmarks.md#start-up).
 *
 * ZooKeeper ACLs (docs/security.md#zookeeper): with `auth` (default: $META_ZK_AUTH),
 * `user:password`, the session authenticates with the digest scheme (again on every new
 * session) and every node it creates, parents included, gets the ACL "the creator's digest:
 * all; anyone: read". MetaQ's clients, which have no ZooKeeper credentials, still find brokers,
 * topics and offsets; nothing meta wrote can be changed or removed without the digest.
 */
import {EventEmitter} from 'node:events'
import type zookeeper from 'node-zookeeper-client'
import {MetaError} from '../protocol/errors.js'
import {silentLogger, type Logger} from '../log.js'

type ZookeeperModule = typeof zookeeper

/** ZooKeeper's create modes (node-zookeeper-client's CreateMode values). */
export const CreateMode = {PERSISTENT: 0, EPHEMERAL: 1, PERSISTENT_SEQUENTIAL: 2, EPHEMERAL_SEQUENTIAL: 3} as const
export type Watcher = (event: zookeeper.Event) => void

interface ZkSessionOptions {
  /** `host:port[,host:port…][/chroot]` */
  connect: string
  sessionTimeoutMs?: number
  connectTimeoutMs?: number
  /** Deadline of one operation (default 15000). */
  operationTimeoutMs?: number
  logger?: Logger
  /** ZooKeeper digest credentials `user:password` (default: $META_ZK_AUTH; empty: none). */
  auth?: string
}

/** The environment variable every meta process reads its ZooKeeper digest credentials from. */
const ZK_AUTH_ENV = 'META_ZK_AUTH'

/** `user:password`, or undefined for none; INVALID_ARGUMENT (never echoing the password) when malformed. */
function zkAuth(option: string | undefined): string | undefined {
  const auth = option ?? process.env[ZK_AUTH_ENV]
  if (auth === undefined || auth === '') return undefined
  const colon = auth.indexOf(':')
  if (colon <= 0 || colon === auth.length - 1) {
    throw new MetaError('INVALID_ARGUMENT', `invalid ZooKeeper credentials in $${ZK_AUTH_ENV}: expected "user:password" (digest), with neither empty`)
  }
  return auth
}

// ZooKeeper's error codes (node-zookeeper-client's Exception values).
const NO_NODE = -101
const NODE_EXISTS = -110
const NOT_EMPTY = -111
const BAD_VERSION = -103

function code(error: unknown): number | undefined {
  return typeof (error as {getCode?: () => number})?.getCode === 'function' ? (error as zookeeper.Exception).getCode() : undefined
}

function isNoNode(error: unknown): boolean {
  return code(error) === NO_NODE
}

function isNodeExists(error: unknown): boolean {
  return code(error) === NODE_EXISTS
}

export class ZkSession extends EventEmitter {
  private client: zookeeper.Client
  private closed = false
  private readonly log: Logger
  /** Digest credentials (see the module comment). */
  private readonly auth: string | undefined
  /** The ACL of the nodes this session creates. */
  private readonly acl: zookeeper.ACL[]

  private constructor(
    private readonly options: ZkSessionOptions,
    private readonly zookeeper: ZookeeperModule,
  ) {
    super()
    this.log = (options.logger ?? silentLogger).child('zk')
    this.auth = zkAuth(options.auth)
    const {ACL, Id, Permission} = zookeeper
    const anyone = new Id('world', 'anyone')
    // ('auth', ''): whichever ids the creating session authenticated as (CREATOR_ALL_ACL).
    this.acl = this.auth === undefined ? [new ACL(Permission.ALL, anyone)] : [new ACL(Permission.ALL, new Id('auth', '')), new ACL(Permission.READ, anyone)]
    this.client = this.newClient()
  }

  /** Connect; rejects with CLUSTER_ERROR naming the connect string if it cannot within the timeout. */
  static async connect(options: ZkSessionOptions): Promise<ZkSession> {
    const {default: zookeeper} = await import('node-zookeeper-client')
    const session = new ZkSession(options, zookeeper)
    try {
      await session.waitConnected(session.client)
    } catch (error) {
      session.close()
      throw error
    }
    return session
  }

  get connectString(): string {
    return this.options.connect
  }

  /** This session's id (hex), e.g. to compare with a node's ephemeralOwner. */
  get sessionId(): string {
    return this.client.getSessionId().toString('hex')
  }

  /** The underlying client (tests use it to expire the session). */
  get raw(): zookeeper.Client {
    return this.client
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.client.close()
  }

  /** Create a node (parents created as persistent). Resolves false if it already exists. */
  async create(path: string, data: string | Buffer, mode: number = CreateMode.PERSISTENT): Promise<boolean> {
    await this.ensureParent(path)
    try {
      await this.call<string>((cb) => this.client.create(path, toBuffer(data), this.acl, mode, cb))
      return true
    } catch (error) {
      if (isNodeExists(error)) return false
      throw error
    }
  }

  /**
   * Create or overwrite a node's data. An ephemeral node left by an earlier session (a crashed
   * process whose session has not expired yet) is replaced, so it becomes ours and does not
   * vanish when that session ends.
   */
  async put(path: string, data: string | Buffer, mode: number = CreateMode.PERSISTENT): Promise<void> {
    if (await this.create(path, data, mode)) return
    const ephemeral = mode === CreateMode.EPHEMERAL || mode === CreateMode.EPHEMERAL_SEQUENTIAL
    if (ephemeral) {
      const stat = await this.exists(path)
      if (stat !== undefined && stat.ephemeralOwner.toString('hex') !== this.sessionId && (await this.replace(path, data, mode, stat.version))) return
    }
    await this.setData(path, data)
  }

  /**
   * Remove the node (at `version`) and create it again with `data`, as one ZooKeeper multi:
   * a reader never sees it missing in between (a broker taking over the ephemeral node its
   * previous run left would otherwise look gone for a moment, and readers would switch to a
   * slave and back). False when the node changed or vanished meanwhile.
   */
  async replace(path: string, data: string | Buffer, mode: number, version: number): Promise<boolean> {
    try {
      await this.call((cb) => this.client.transaction().remove(path, version).create(path, toBuffer(data), this.acl, mode).commit(cb))
      return true
    } catch (error) {
      const failed = code(error)
      if (failed === NO_NODE || failed === BAD_VERSION || failed === NODE_EXISTS) return false
      throw error
    }
  }

  async setData(path: string, data: string | Buffer): Promise<void> {
    await this.call((cb) => this.client.setData(path, toBuffer(data), cb))
  }

  /** A node's data as UTF-8 (MetaQ's string serializer), or undefined if it does not exist. */
  async getString(path: string, watcher?: Watcher): Promise<string | undefined> {
    try {
      const data = await this.call<Buffer>((cb) => (watcher ? this.client.getData(path, watcher, cb) : this.client.getData(path, cb)))
      return data === undefined || data === null ? '' : data.toString('utf8')
    } catch (error) {
      if (isNoNode(error)) return undefined
      throw error
    }
  }

  /** Children (sorted), or [] when the node does not exist (a watcher is then set with exists). */
  async children(path: string, watcher?: Watcher): Promise<string[]> {
    for (;;) {
      try {
        const list = await this.call<string[]>((cb) => (watcher ? this.client.getChildren(path, watcher, cb) : this.client.getChildren(path, cb)))
        return [...list].sort()
      } catch (error) {
        if (!isNoNode(error)) throw error
        if (!watcher) return []
        // Watch for the node's creation. If it was created between the two calls, the exists
        // watch would fire only on a change of its data, never on a new child: read again.
        if ((await this.exists(path, watcher)) === undefined) return []
      }
    }
  }

  /** The node's stat, or undefined. */
  async exists(path: string, watcher?: Watcher): Promise<zookeeper.Stat | undefined> {
    const stat = await this.call<zookeeper.Stat>((cb) => (watcher ? this.client.exists(path, watcher, cb) : this.client.exists(path, cb)))
    return stat ?? undefined
  }

  /** Remove a node; a missing node is fine. */
  async remove(path: string): Promise<void> {
    try {
      await this.call((cb) => this.client.remove(path, cb))
    } catch (error) {
      if (!isNoNode(error)) throw error
    }
  }

  /** Remove a node if it has no children (false when it has, or got one meanwhile); a missing node is fine. */
  async removeIfEmpty(path: string): Promise<boolean> {
    if ((await this.children(path)).length > 0) return false
    try {
      await this.remove(path)
      return true
    } catch (error) {
      if (code(error) === NOT_EMPTY) return false
      throw error
    }
  }

  /** Remove a node and everything under it. */
  async removeTree(path: string): Promise<void> {
    for (const child of await this.children(path)) await this.removeTree(`${path}/${child}`)
    try {
      await this.remove(path)
    } catch (error) {
      if (code(error) === NOT_EMPTY) return this.removeTree(path) // a child appeared meanwhile
      throw error
    }
  }

  private async ensureParent(path: string): Promise<void> {
    const parent = path.slice(0, path.lastIndexOf('/'))
    if (parent === '' || (await this.exists(parent)) !== undefined) return
    await this.call((cb) => this.client.mkdirp(parent, this.acl, cb))
  }

  /**
   * One operation. It fails with CLUSTER_ERROR if no answer comes within the operation
   * timeout: an operation queued on a client whose session then expired is never answered.
   */
  private call<T = unknown>(run: (cb: (error: Error | zookeeper.Exception | null, result?: T) => void) => void): Promise<T> {
    const timeoutMs = this.options.operationTimeoutMs ?? 15_000
    if (this.closed) return Promise.reject(new MetaError('CLUSTER_ERROR', `the ZooKeeper session to ${this.options.connect} is closed`))
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new MetaError('CLUSTER_ERROR', `ZooKeeper at ${this.options.connect} did not answer within ${timeoutMs} ms`))
      }, timeoutMs)
      run((error, result) => {
        clearTimeout(timer)
        if (error) reject(error instanceof Error && !(error as unknown as zookeeper.Exception).getCode ? error : zkError(error))
        else resolve(result as T)
      })
    })
  }

  private newClient(): zookeeper.Client {
    const client = this.zookeeper.createClient(this.options.connect, {
      sessionTimeout: this.options.sessionTimeoutMs ?? 30_000,
      spinDelay: 200,
      retries: 3,
    })
    if (this.auth !== undefined) client.addAuthInfo('digest', Buffer.from(this.auth))
    client.on('expired', () => this.onExpired(client))
    client.on('disconnected', () => this.log.debug('disconnected from ZooKeeper'))
    client.connect()
    return client
  }

  private waitConnected(client: zookeeper.Client): Promise<void> {
    const timeoutMs = this.options.connectTimeoutMs ?? 30_000
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new MetaError('CLUSTER_ERROR', `cannot reach ZooKeeper at ${this.options.connect}: no session within ${timeoutMs} ms`))
      }, timeoutMs)
      client.once('connected', () => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  private onExpired(client: zookeeper.Client): void {
    if (this.closed || client !== this.client) return
    this.log.warn('ZooKeeper session expired; starting a new one', {connect: this.options.connect})
    this.emit('expired')
    client.close()
    this.client = this.newClient()
    const fresh = this.client
    // The new client keeps trying to connect: never give up on it (registrants would never
    // hear of a session again), but say so when it takes long.
    const slowMs = this.options.connectTimeoutMs ?? 30_000
    const slow = setTimeout(() => {
      this.log.warn('no new ZooKeeper session yet; still trying', {connect: this.options.connect, waitedMs: slowMs})
    }, slowMs)
    slow.unref()
    fresh.once('connected', () => {
      clearTimeout(slow)
      if (!this.closed && fresh === this.client) this.emit('session')
    })
  }
}

function toBuffer(data: string | Buffer): Buffer {
  return typeof data === 'string' ? Buffer.from(data, 'utf8') : data
}

function zkError(error: unknown): Error {
  const e = error as zookeeper.Exception
  const wrapped = new MetaError('CLUSTER_ERROR', `ZooKeeper ${e.getName?.() ?? 'error'}${e.getPath?.() ? ` at ${e.getPath()}` : ''}`, {cause: error})
  ;(wrapped as unknown as {getCode: () => number}).getCode = () => e.getCode()
  return wrapped
}
