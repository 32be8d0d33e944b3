/**
 * The typed broker configuration: what `server.ini` (docs/configuration.md) means, with units in
 * the field names. The INI key each field comes from is noted where it differs from the field name.
 */
import type {SecurityConfig} from './security.js'

/**
 * What retention does with a read-only segment older than `maxReservedMs`
 * (docs/configuration.md#retention).
 */
export interface DeletePolicy {
  /** `delete,<N>` → 'delete'; `archive,<N>` → 'archive' (rename to `.arc`); `archive,<N>,true` → 'archive-zip'. */
  action: 'delete' | 'archive' | 'archive-zip'
  /** How old (by file modification time) a read-only segment must be before it is removed, in ms. */
  maxReservedMs: number
}

export interface SystemConfig {
  /** 0..1023; also the 10-bit worker id in message ids. MetaQ requires it; meta defaults it to 0. */
  brokerId: number
  /** Host published in ZooKeeper (`meta://host:port`); undefined = the listen address (the broker resolves it). IPv6 without brackets. */
  hostName?: string
  serverPort: number
  /**
   * Port of the HTTP server (gateway, /metrics, dashboard; src/http), 0 = any free port.
   * Undefined (the default) = no HTTP server: MetaQ's default 8120 is not taken, so brokers on
   * one host never collide; `meta serve --http` overrides it.
   */
  dashboardHttpPort?: number
  numPartitions: number
  /** Messages between forced fsyncs; <= 0 = group commit (docs/protocol.md#flush-policy). */
  unflushThreshold: number
  /** Key `unflushInterval`. */
  unflushIntervalMs: number
  /** Key `maxSegmentSize`; < 2^31. */
  maxSegmentBytes: number
  /** Key `maxTransferSize`: cap on bytes returned per get. */
  maxTransferBytes: number
  /** Absolute. Default {@link defaultDataPath}. */
  dataPath: string
  /** Absolute; transaction journal root. Default = dataPath. */
  dataLogPath: string
  /** Accepted for compatibility; meta cannot load Java classes. */
  appClassPath?: string
  /** Accepted for compatibility (default 10 × cpus); unused by meta. */
  getProcessThreadCount: number
  /** Accepted for compatibility (default 10 × cpus); unused by meta. */
  putProcessThreadCount: number
  deletePolicy: DeletePolicy
  /** Quartz cron expression (6 or 7 fields, seconds first), validated. */
  deleteWhen: string
  /** Accepted for compatibility; unused by meta. */
  quartzThreadCount: number
  maxCheckpoints: number
  /** Key `checkpointInterval`. */
  checkpointIntervalMs: number
  maxTxTimeoutTimerCapacity: number
  /** Key `maxTxTimeoutInSeconds`. */
  maxTxTimeoutSeconds: number
  /** 0 = OS decides; 1 = fsync the journal at prepare/commit/rollback; 2 = fsync once per second. */
  flushTxLogAtCommit: 0 | 1 | 2
  acceptPublish: boolean
  acceptSubscribe: boolean
  stat: boolean
  updateConsumerOffsets: boolean
  loadMessageStoresInParallel: boolean
  /** meta extension: address the broker binds (MetaQ binds all interfaces). */
  listenHost: string
  /** meta extension (src/broker/tls.ts): a TLS port beside serverPort (0 = any free port), its PEM certificate and key. */
  tlsPort?: number
  tlsCert?: string
  tlsKey?: string
  /** meta extension: PEM of the CA whose client certificates the TLS port requires (mutual TLS). */
  tlsCa?: string
  /** meta extension: listen on the TLS port only (no plain serverPort). */
  tlsOnly: boolean
  /** meta extension: standalone consumer-group session timeout. */
  groupSessionTimeoutMs: number
  /**
   * meta extension (per topic too): retention's size bound. When a partition holds more than
   * this many bytes, its oldest sealed segments are removed (with the topic's deletePolicy
   * action) until it holds at most this many; checked when a segment rolls and at every
   * deleteWhen run. 0 = no bound.
   */
  maxPartitionBytes: number
  /**
   * meta extension: bytes one connection may have queued (answers not yet taken by the socket)
   * or in flight (reads at their maxSize, puts at their body size) before the broker stops
   * reading its requests.
   */
  connectionMaxPendingBytes: number
  /** meta extension: a frame started on a connection must complete within this long, else it is closed; 0 = no limit. */
  connectionFrameTimeoutMs: number
  /** meta extension: a connection with no request for this long (and none in flight) is closed; 0 = never. */
  connectionIdleTimeoutMs: number
  /**
   * meta extension: on a broker with access control whose anonymous connections have no right,
   * a connection not logged in this long after it opened is closed; 0 = never.
   */
  connectionAuthTimeoutMs: number
  /** meta extension: connections one client address may hold at once (an IPv6 address: its /64); more are refused. */
  maxConnectionsPerAddress: number
  /** meta extension: with access control, connections not logged in one client address may hold at once; more are refused. */
  maxUnauthenticatedConnectionsPerAddress: number
  /** meta extension: transactions one connection may hold open at once; a BEGIN past it is refused. */
  maxOpenTransactionsPerConnection: number
  /** meta extension: with access control, transactions one principal (a user; all anonymous connections together) may hold open at once. */
  maxOpenTransactionsPerPrincipal: number
  /** Synchronous replication: this broker is a sync slave (MetaQ's gregor): serves `sync`, refuses puts, no ZooKeeper. */
  syncSlave: boolean
  /** Synchronous replication: `host:port` of this broker's sync slave (MetaQ samsa's `slave`); '' = not a sync master. */
  syncSlaveAddress: string
  /**
   * Synchronous replication: this master takes its sync slave from ZooKeeper (the slave that
   * announces itself for its broker id, replication/sync-announce.ts) and refuses puts while it
   * has none caught up. Always on for a broker promoted from a sync slave.
   */
  syncSlaveFromZk: boolean
  /** Key `sendToSlaveTimeoutInMills`: how long a put waits for the sync slave's answer. */
  sendToSlaveTimeoutMs: number
  /** Consecutive failed syncs after which a sync master leaves ZooKeeper until a test sync succeeds. */
  slaveContinuousFailureThreshold: number
  /** Key `checkSlaveIntervalInMills`: period of the test syncs (and reconnects) while the slave fails. */
  checkSlaveIntervalMs: number
  /** A promoted slave: rewrite consumer groups' committed offsets for this broker id to its own positions before registering (recover-offset.ts). */
  recoverOffset: boolean
  /**
   * meta extension: a put to a topic with no partition on this broker creates it (when the
   * topic is accepted: any name in zero-config mode, else one matching a [topic=…] section,
   * `[topic=*]` matching every name). False: only topics named exactly in a section, or that
   * already have a partition here, get new partitions; others are refused TOPIC_NOT_ACCEPTED.
   */
  autoCreateTopics: boolean
  /** meta extension: partitions this broker serves at most; a put that would create one more is refused PARTITION_LIMIT. */
  maxPartitions: number
  /** An asynchronous slave in ZooKeeper promotes itself when its master's node stays gone for failoverGraceMs (failover.ts). */
  failover: boolean
  /** How long the master's `ids/<id>/master` node must stay gone before a failover slave promotes itself. */
  failoverGraceMs: number
  /**
   * The master's lease on its broker id (zk-lease.ts): 0 = half of zk.zkSessionTimeoutMs; else
   * at least 100 ms and at most half the session timeout. A sync slave takes over this long
   * after its master's link broke and the master node was replaced (link-failover.ts).
   */
  failoverLeaseMs: number
  /**
   * Sync slaves a master taking them from ZooKeeper needs to acknowledge puts (Kafka's
   * min.insync.replicas − 1): 1 = refuse puts while none is connected and up to date; 0 =
   * accept them on this broker alone meanwhile.
   */
  minSyncSlaves: number
}

export interface ZookeeperConfig {
  /** Key `zk.zkConnect`; undefined (absent or blank) = standalone mode. */
  zkConnect?: string
  /** Key `zk.zkRoot`; normalised: leading `/`, no trailing `/`. */
  zkRoot: string
  zkEnable: boolean
  zkSessionTimeoutMs: number
  zkConnectionTimeoutMs: number
  zkSyncTimeMs: number
}

/** The per-topic settings a `[topic=…]` section may set; the rest come from `[system]`. */
export interface TopicSettings {
  numPartitions: number
  unflushThreshold: number
  /** Key `unflushInterval`. */
  unflushIntervalMs: number
  /** Absolute; a relative path in the file resolves against the file's directory. */
  dataPath: string
  deletePolicy: DeletePolicy
  deleteWhen: string
  acceptPublish: boolean
  acceptSubscribe: boolean
  stat: boolean
  /** meta extension: see {@link SystemConfig.maxPartitionBytes}. */
  maxPartitionBytes: number
}

/** One `[topic=<pattern>]` section; omitted keys inherit `[system]`. */
export interface TopicConfig extends TopicSettings {
  /** The section's name after `topic=`; may contain `*`. */
  pattern: string
  /** `group.<name>=<java class>`: recorded, never run (meta cannot load Java classes). */
  groupFilters: Record<string, string>
  /**
   * The settings written in the section itself. The other fields of this object are
   * inherited from `[system]` and follow it when `[system]` changes ({@link applyOverrides}).
   */
  explicit: Partial<TopicSettings>
}

export interface BrokerConfig {
  system: SystemConfig
  zookeeper: ZookeeperConfig
  /** In file order. */
  topics: TopicConfig[]
  /** True when `topics` is empty: any valid topic name is accepted with `[system]` values (zero-config mode). */
  acceptAnyTopic: boolean
  /** The text that was parsed, as bytes (what `stats config` returns). Absent for a config built without a file. */
  source?: {path: string; bytes: Buffer}
  /** CRC32 (unmasked, as Apache commons `checksumCRC32`) of `source.bytes`, or of the rendered config when there is no source. */
  checksum: number
  /** Info-level notes for the operator (keys accepted but ignored, filters not run). */
  warnings: string[]
  /** server.ini's [security] section, when present (security.ts). */
  security?: SecurityConfig
}

/** The effective settings of one concrete topic ({@link resolveTopic}). */
export interface ResolvedTopic extends TopicSettings {
  topic: string
  maxSegmentBytes: number
  /** False when the topic was accepted only because no topic is configured (acceptAnyTopic). */
  configured: boolean
}

/** What `meta serve` flags may override: any [system] field, plus the two ZooKeeper settings. */
export type ConfigOverrides = Partial<SystemConfig> & {zkConnect?: string; zkRoot?: string}
