/**
 * A master finds its synchronous slave through ZooKeeper (meta extension;
 * README.md#synchronous-replication-metaqs-samsa-master-and-gregor-slave, docs/invariants.md#puts
 * rule 5c).
 *
 * The node: `<root>/meta_sync_slave/<brokerId>`, ephemeral, owned by the sync slave's session,
 * JSON `{"url":"meta://host:port","inSyncWith":"meta://host:port"|"","leaseMs":N}` (`leaseMs`:
 * the length of the lease of the master named in `inSyncWith`, zk-lease.ts, when it has one). It lives outside
 * MetaQ's `brokers/` and `consumers/` trees, which are all MetaQ's clients and tools read
 * (a child of `brokers/ids/<id>` would be listed by MetaQ's PHP consumer as a broker role),
 * so no MetaQ client can mistake it for anything. Being one ephemeral node per broker id, it
 * also gives MetaQ's one master ↔ one sync slave: ZooKeeper lets one slave create it; a
 * second one that announces itself finds it held, logs a warning naming the holder, and waits
 * (it takes the node if the first one's session ends).
 *
 * - The sync slave ({@link SyncSlaveAnnouncer}) announces itself only after it has made its
 *   log a prefix of the current master's (cut a divergent tail: `prepare`), and again (cut
 *   again first) whenever the master registered for its id changes.
 * - The master ({@link SyncSlaveWatch}, `syncSlaveFromZk`, and always a broker promoted from a
 *   sync slave) watches the node and connects to whoever it names with the existing
 *   SyncLink/SyncMaster; when its catch-up of that slave is done it writes its own URL into
 *   `inSyncWith` BEFORE it acknowledges any put again.
 * - Failover eligibility: a sync slave promotes itself only while it holds the node and the
 *   node says it is in sync with the master that disappeared. So a broker that has not been
 *   brought up to date (a restarted former master still cutting its tail, a second slave
 *   waiting for the node) never takes the id: every acknowledged message is on the winner.
 */
import {lookup} from 'node:dns/promises'
import type {Logger} from '../../log.js'
import {parseBrokerUrl, type ZkPaths} from '../../cluster/paths.js'
import {CreateMode, type ZkSession} from '../../cluster/zk-session.js'

/** The data of the announce node. */
interface SyncAnnouncement {
  /** The sync slave's `meta://host:port`. */
  url: string
  /** The master that brought it up to date (its URL), '' until one did. */
  inSyncWith: string
  /** That master's lease on its broker id (ms), when it holds one: how long a takeover waits (link-failover.ts). */
  leaseMs?: number
}

/** `<root>/meta_sync_slave/<brokerId>`. */
function syncSlavePath(paths: ZkPaths, brokerId: number): string {
  return `${paths.root}/meta_sync_slave/${brokerId}`
}

function encodeAnnouncement(a: SyncAnnouncement): string {
  return JSON.stringify(a.leaseMs === undefined ? {url: a.url, inSyncWith: a.inSyncWith} : {url: a.url, inSyncWith: a.inSyncWith, leaseMs: a.leaseMs})
}

/** The node's data, or undefined when it is not an announcement. */
function parseAnnouncement(text: string | undefined): SyncAnnouncement | undefined {
  if (text === undefined) return undefined
  try {
    const value = JSON.parse(text) as Partial<SyncAnnouncement>
    if (typeof value.url !== 'string') return undefined
    const leaseMs = Number.isSafeInteger(value.leaseMs) && value.leaseMs! > 0 ? value.leaseMs : undefined
    return {url: value.url, inSyncWith: typeof value.inSyncWith === 'string' ? value.inSyncWith : '', leaseMs}
  } catch {
    return undefined
  }
}

const RETRY_FIRST_MS = 200
const RETRY_MAX_MS = 5_000

interface AnnouncerOptions {
  session: ZkSession
  paths: ZkPaths
  brokerId: number
  /** This slave's `meta://host:port`. */
  url: string
  log: Logger
  /** Make the local log a prefix of `master`'s (cut divergent tails); rejects to be retried. */
  prepare(master: string): Promise<void>
}

/** The sync slave's side: announce itself for its broker id once its log fits the master's. */
export class SyncSlaveAnnouncer {
  private master: string | undefined
  /** The master the node was created for (undefined: not announced). */
  private announcedFor: string | undefined
  private queue: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  private attempt = 0
  private warnedHolder = ''

  constructor(private readonly options: AnnouncerOptions) {
    options.session.on('session', () => {
      // A new session: the ephemeral node is gone; announce again (after checking the log).
      this.announcedFor = undefined
      this.kick()
    })
  }

  private get path(): string {
    return syncSlavePath(this.options.paths, this.options.brokerId)
  }

  /** The master registered for this broker id (its URL), undefined while none is. */
  masterChanged(master: string | undefined): void {
    if (master === this.options.url) return // our own stale node: not a master to follow
    this.master = master
    this.kick()
  }

  /**
   * May this slave take over from `master` (the URL that just left)? Only while it holds the
   * node and `master` brought it up to date.
   */
  async inSyncWith(master: string): Promise<boolean> {
    return (await this.ownAnnouncement(master)) !== undefined
  }

  /**
   * The lease `master` holds on its id (ms), as it published it when it marked this slave up
   * to date; undefined when this slave may not take over from it (see inSyncWith) or it
   * published none.
   */
  async masterLeaseMs(master: string): Promise<number | undefined> {
    return (await this.ownAnnouncement(master))?.leaseMs
  }

  /** This slave's node, when it holds it and `master` brought it up to date. */
  private async ownAnnouncement(master: string): Promise<SyncAnnouncement | undefined> {
    const stat = await this.options.session.exists(this.path)
    if (stat === undefined || stat.ephemeralOwner.toString('hex') !== this.options.session.sessionId) return undefined
    const node = parseAnnouncement(await this.options.session.getString(this.path))
    return node !== undefined && node.url === this.options.url && node.inSyncWith === master ? node : undefined
  }

  /** Promoted (or stopping): remove the node and announce no more. */
  async withdraw(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.serial(() => this.removeOwn())
  }

  private kick(): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.serial(() => this.step()).catch((error: Error) => {
      if (this.stopped) return
      this.attempt += 1
      const delayMs = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.min(10, this.attempt - 1))
      this.options.log.warn('sync slave: cannot announce itself to the master yet; retrying', {
        master: this.master ?? 'none',
        retryInMs: delayMs,
        error: error.message,
      })
      this.timer = setTimeout(() => this.kick(), delayMs)
      this.timer.unref()
    })
  }

  private async step(): Promise<void> {
    const master = this.master
    if (this.stopped || master === undefined || this.announcedFor === master) return
    const {session, url, log, brokerId} = this.options
    if (this.announcedFor !== undefined) {
      // Another master: leave until the log is checked against it.
      await this.removeOwn()
      this.announcedFor = undefined
    }
    await this.options.prepare(master)
    if (this.stopped || this.master !== master) return
    const created = await session.create(this.path, encodeAnnouncement({url, inSyncWith: ''}), CreateMode.EPHEMERAL)
    if (!created) {
      const stat = await session.exists(this.path, () => this.kick())
      if (stat !== undefined && stat.ephemeralOwner.toString('hex') === session.sessionId) {
        await session.setData(this.path, encodeAnnouncement({url, inSyncWith: ''}))
      } else if (stat !== undefined) {
        const holder = parseAnnouncement(await session.getString(this.path))?.url ?? 'unknown'
        if (holder !== this.warnedHolder) {
          log.warn('another sync slave is announced for this broker id: a master has one sync slave; this broker waits until that one leaves', {
            brokerId,
            holder,
            node: this.path,
          })
          this.warnedHolder = holder
        }
        return // the exists watch kicks again when it goes
      } else {
        throw new Error('the announce node vanished while being created')
      }
    }
    this.announcedFor = master
    this.attempt = 0
    this.warnedHolder = ''
    log.info('announced as the sync slave of the master in ZooKeeper', {brokerId, master, node: this.path})
  }

  private async removeOwn(): Promise<void> {
    const {session} = this.options
    const stat = await session.exists(this.path)
    if (stat !== undefined && stat.ephemeralOwner.toString('hex') === session.sessionId) await session.remove(this.path)
  }

  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work)
    this.queue = next.catch(() => undefined)
    return next
  }
}

interface WatchOptions {
  session: ZkSession
  paths: ZkPaths
  brokerId: number
  /** This master's `meta://host:port`. */
  url: string
  log: Logger
  /**
   * syncSlaveFromZk: the announced slave's `host:port` (undefined: none) whenever it changes;
   * absent for a master with a configured slave (syncSlaveAddress), which only marks it.
   */
  onSlave?(address: string | undefined): void
  /** Is the slave at `host:port` the one this master forwards to, and up to date now? */
  isReadySlave(address: string): Promise<boolean>
  /** This master's lease on its id (ms), published in the node for a takeover (none: no lease). */
  leaseMs?(): number | undefined
}

/**
 * Whether two `host:port` addresses name one endpoint: the same text, or the same port and a
 * common address once both hosts are resolved (`localhost:8124` and `127.0.0.1:8124`), so a
 * master given its slave's address in other words than the slave publishes still marks it.
 */
export async function sameEndpoint(a: string | undefined, b: string | undefined): Promise<boolean> {
  if (a === undefined || b === undefined) return false
  if (a === b) return true
  const split = (address: string): [string, string] => {
    const colon = address.lastIndexOf(':')
    return [address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), address.slice(colon + 1)]
  }
  const [hostA, portA] = split(a)
  const [hostB, portB] = split(b)
  if (portA !== portB) return false
  try {
    const [ipsA, ipsB] = await Promise.all([lookup(hostA, {all: true}), lookup(hostB, {all: true})])
    return ipsA.some((x) => ipsB.some((y) => x.address === y.address))
  } catch {
    return false // a host that does not resolve names no endpoint we know
  }
}

/** `meta://host:port` → `host:port` as SyncLink names an address (no brackets). */
function linkAddress(url: string): string | undefined {
  const address = parseBrokerUrl(url)
  return address === undefined ? undefined : `${address.host}:${address.port}`
}

/**
 * The master's side: follow the announce node of its broker id (syncSlaveFromZk) and record in
 * it that the slave is up to date (any sync master in ZooKeeper whose slave is announced).
 */
export class SyncSlaveWatch {
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  private current: string | undefined

  constructor(private readonly options: WatchOptions) {
    options.session.on('session', () => this.read())
  }

  private get path(): string {
    return syncSlavePath(this.options.paths, this.options.brokerId)
  }

  start(): void {
    this.read()
  }

  /**
   * Record in the node that this master brought the slave at `address` up to date (called
   * after each catch-up, before puts are acknowledged again). When the node names another
   * slave (or none): an error for a master following the node (its link starts over), nothing
   * for a master with a configured slave (a sync slave outside ZooKeeper has no node).
   */
  async markInSync(address: string): Promise<void> {
    const {session, url} = this.options
    const node = parseAnnouncement(await session.getString(this.path))
    if (node === undefined || !(await sameEndpoint(linkAddress(node.url), address))) {
      if (this.options.onSlave !== undefined) throw new Error(`the sync slave announced in ZooKeeper is no longer ${address}`)
      return
    }
    const leaseMs = this.options.leaseMs?.()
    if (node.inSyncWith === url && node.leaseMs === leaseMs) return
    await session.setData(this.path, encodeAnnouncement({url: node.url, inSyncWith: url, leaseMs}))
    this.options.log.info('recorded in ZooKeeper that the sync slave is up to date (it may take over from this master)', {slave: node.url, node: this.path})
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
  }

  private read(): void {
    if (this.stopped) return
    const {session, log} = this.options
    const watcher = (): void => this.read()
    session
      .exists(this.path, watcher)
      .then(async (stat) => (stat === undefined ? undefined : parseAnnouncement(await session.getString(this.path))))
      .then(
        (node) => {
          if (this.stopped) return
          const slave = node === undefined || node.url === this.options.url ? undefined : linkAddress(node.url)
          if (slave !== this.current && this.options.onSlave !== undefined) {
            if (slave === undefined) log.warn('no sync slave announced in ZooKeeper: puts are refused until one is up to date', {node: this.path})
            else log.info('sync slave announced in ZooKeeper', {slave: node?.url, node: this.path})
            this.current = slave
            this.options.onSlave(slave)
          }
          // Announced again (e.g. after its session ended) while this master keeps it up to date.
          if (slave !== undefined && (node?.inSyncWith !== this.options.url || node.leaseMs !== this.options.leaseMs?.())) {
            this.options
              .isReadySlave(slave)
              .then((ready) => (ready && !this.stopped ? this.markInSync(slave) : undefined))
              .catch((error: Error) => log.warn('cannot record the sync slave as up to date', {error: error.message}))
          }
        },
        (error: Error) => {
          if (this.stopped) return
          log.warn('cannot read the sync slave node; retrying', {node: this.path, error: error.message})
          this.timer = setTimeout(() => this.read(), 1000)
          this.timer.unref()
        },
      )
  }
}
