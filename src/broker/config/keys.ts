/**
 * Every server.ini key meta knows, per section, with its typed field, value kind, range and default
 * (docs/configuration.md). This table drives parsing, override validation, rendering and the
 * reference in docs/configuration.md (a test checks the doc lists every key).
 */
import {availableParallelism, homedir} from 'node:os'
import {join, resolve} from 'node:path'
import {quartzCronProblem} from './quartz.js'
import type {SystemConfig, TopicSettings, ZookeeperConfig} from './types.js'
import {
  checkDeletePolicy,
  checkIntegerRange,
  formatDeletePolicy,
  INT_MAX,
  INT_MIN,
  normalizeZkPath,
  parseBoolean,
  parseDeletePolicy,
  parseAddress,
  parseHost,
  parseInteger,
  parseZkConnect,
  ValueError,
} from './values.js'

/** Default maxPartitions: partitions one broker serves at most (docs/configuration.md gives the memory per partition). */
const DEFAULT_MAX_PARTITIONS = 20_000
/** The largest maxPartitions accepted. */
const MAX_PARTITIONS_CEILING = 1_000_000

type ValueKind = 'int' | 'bool' | 'path' | 'string' | 'host' | 'address' | 'deletePolicy' | 'cron' | 'zkConnect' | 'zkRoot'

/**
 * What meta does with a key: acts on it (`used`), accepts it only so MetaQ files load and
 * ignores it (`compat`), accepts it and will act on it once an open issue lands (`pending`),
 * or added it (`extension`, acted on). `compat` and `pending` keys set in a file are logged
 * once at startup with their `note`; a test checks that every `used` and `extension` key is
 * read outside the config module.
 */
export type KeyUse = 'used' | 'compat' | 'pending' | 'extension'

export interface KeySpec<F extends string = string> {
  /** The INI key, exactly as MetaQ spells it. */
  key: string
  /** The typed config field it sets. */
  field: F
  kind: ValueKind
  min?: number
  max?: number
  use: KeyUse
  /** For `compat` and `pending` keys: why it has no effect (and what meta does instead), or which issue implements it. */
  note?: string
}

type SystemField = keyof SystemConfig
type ZookeeperField = keyof ZookeeperConfig

const int = <F extends string>(key: string, field: F, min: number, max = INT_MAX, use: KeyUse = 'used'): KeySpec<F> => ({
  key,
  field,
  kind: 'int',
  min,
  max,
  use,
})
const of = <F extends string>(key: string, field: F, kind: ValueKind, use: KeyUse = 'used'): KeySpec<F> => ({key, field, kind, use})
/** A key that is accepted and has no effect, with why. */
const ignored = <F extends string>(spec: KeySpec<F>, use: 'compat' | 'pending', note: string): KeySpec<F> => ({...spec, use, note})

export const SYSTEM_KEYS: readonly KeySpec<SystemField>[] = [
  int('brokerId', 'brokerId', 0, 1023),
  of('hostName', 'hostName', 'host'),
  int('serverPort', 'serverPort', 0, 65535),
  int('dashboardHttpPort', 'dashboardHttpPort', 0, 65535),
  int('numPartitions', 'numPartitions', 1, MAX_PARTITIONS_CEILING),
  int('unflushThreshold', 'unflushThreshold', INT_MIN),
  int('unflushInterval', 'unflushIntervalMs', 1),
  int('maxSegmentSize', 'maxSegmentBytes', 1),
  // A fetch slice must hold at least one 20-byte record header and a useful payload; under 1 KiB
  // ordinary messages could never be fetched (a get returns at most maxTransferSize bytes), so
  // refuse it outright.
  int('maxTransferSize', 'maxTransferBytes', 1024),
  of('dataPath', 'dataPath', 'path'),
  of('dataLogPath', 'dataLogPath', 'path'),
  ignored(of('appClassPath', 'appClassPath', 'path'), 'compat', 'meta cannot load java classes (server-side consumer filters)'),
  ignored(int('getProcessThreadCount', 'getProcessThreadCount', 1), 'compat', 'meta has no thread pool for get/offset'),
  ignored(int('putProcessThreadCount', 'putProcessThreadCount', 1), 'compat', 'meta has no thread pool for put/transaction'),
  of('deletePolicy', 'deletePolicy', 'deletePolicy'),
  of('deleteWhen', 'deleteWhen', 'cron'),
  ignored(int('quartzThreadCount', 'quartzThreadCount', 1), 'compat', 'retention runs in the broker process, one partition at a time'),
  int('maxCheckpoints', 'maxCheckpoints', 1),
  int('checkpointInterval', 'checkpointIntervalMs', 1),
  int('maxTxTimeoutTimerCapacity', 'maxTxTimeoutTimerCapacity', 1),
  int('maxTxTimeoutInSeconds', 'maxTxTimeoutSeconds', 1),
  int('flushTxLogAtCommit', 'flushTxLogAtCommit', 0, 2),
  of('acceptPublish', 'acceptPublish', 'bool'),
  of('acceptSubscribe', 'acceptSubscribe', 'bool'),
  of('stat', 'stat', 'bool'),
  ignored(
    of('updateConsumerOffsets', 'updateConsumerOffsets', 'bool'),
    'compat',
    'meta always answers a get past the end of the log with 301 and the end offset, what true does in MetaQ',
  ),
  ignored(
    of('loadMessageStoresInParallel', 'loadMessageStoresInParallel', 'bool'),
    'compat',
    'meta always opens and recovers partitions in parallel (16 at a time), what true does in MetaQ',
  ),
  of('listenHost', 'listenHost', 'host', 'extension'),
  // TLS (src/broker/tls.ts): a second port beside serverPort, or instead of it.
  int('tlsPort', 'tlsPort', 0, 65535, 'extension'),
  of('tlsCert', 'tlsCert', 'path', 'extension'),
  of('tlsKey', 'tlsKey', 'path', 'extension'),
  of('tlsCa', 'tlsCa', 'path', 'extension'),
  of('tlsOnly', 'tlsOnly', 'bool', 'extension'),
  int('groupSessionTimeoutMs', 'groupSessionTimeoutMs', 100, INT_MAX, 'extension'),
  int('maxPartitionBytes', 'maxPartitionBytes', 0, Number.MAX_SAFE_INTEGER, 'extension'),
  int('connectionMaxPendingBytes', 'connectionMaxPendingBytes', 64 * 1024, INT_MAX, 'extension'),
  int('connectionFrameTimeoutMs', 'connectionFrameTimeoutMs', 0, INT_MAX, 'extension'),
  int('connectionIdleTimeoutMs', 'connectionIdleTimeoutMs', 0, INT_MAX, 'extension'),
  int('connectionAuthTimeoutMs', 'connectionAuthTimeoutMs', 0, INT_MAX, 'extension'),
  // Connections per client address (broker/listener.ts AddressCounts).
  int('maxConnectionsPerAddress', 'maxConnectionsPerAddress', 1, 1_000_000, 'extension'),
  // Open transactions per connection and per principal (broker/tx/manager.ts).
  int('maxOpenTransactionsPerConnection', 'maxOpenTransactionsPerConnection', 1, 1_000_000, 'extension'),
  int('maxOpenTransactionsPerPrincipal', 'maxOpenTransactionsPerPrincipal', 1, 1_000_000, 'extension'),
  int('maxUnauthenticatedConnectionsPerAddress', 'maxUnauthenticatedConnectionsPerAddress', 1, 1_000_000, 'extension'),
  // Synchronous replication (MetaQ's samsa master / gregor slave, set by -F property files
  // there; broker/replication/sync-*.ts). The timeouts keep samsa_master.properties' names.
  of('syncSlave', 'syncSlave', 'bool', 'extension'),
  of('syncSlaveAddress', 'syncSlaveAddress', 'address', 'extension'),
  of('syncSlaveFromZk', 'syncSlaveFromZk', 'bool', 'extension'),
  int('sendToSlaveTimeoutInMills', 'sendToSlaveTimeoutMs', 1, INT_MAX, 'extension'),
  int('slaveContinuousFailureThreshold', 'slaveContinuousFailureThreshold', 1, INT_MAX, 'extension'),
  int('checkSlaveIntervalInMills', 'checkSlaveIntervalMs', 1, INT_MAX, 'extension'),
  of('recoverOffset', 'recoverOffset', 'bool', 'extension'),
  // Bounded topic creation (broker/topics.ts creationRefusal): a fuzzer or a typo cannot make partitions without end.
  of('autoCreateTopics', 'autoCreateTopics', 'bool', 'extension'),
  int('maxPartitions', 'maxPartitions', 1, MAX_PARTITIONS_CEILING, 'extension'),
  // Failover of an asynchronous slave registered in ZooKeeper (broker/replication/failover.ts).
  of('failover', 'failover', 'bool', 'extension'),
  int('failoverGraceMs', 'failoverGraceMs', 0, INT_MAX, 'extension'),
  int('failoverLeaseMs', 'failoverLeaseMs', 0, INT_MAX, 'extension'),
  int('minSyncSlaves', 'minSyncSlaves', 0, 1, 'extension'),
]

export const ZOOKEEPER_KEYS: readonly KeySpec<ZookeeperField>[] = [
  of('zk.zkConnect', 'zkConnect', 'zkConnect'),
  of('zk.zkRoot', 'zkRoot', 'zkRoot'),
  of('zk.zkEnable', 'zkEnable', 'bool'),
  int('zk.zkSessionTimeoutMs', 'zkSessionTimeoutMs', 1),
  int('zk.zkConnectionTimeoutMs', 'zkConnectionTimeoutMs', 1),
  ignored(
    int('zk.zkSyncTimeMs', 'zkSyncTimeMs', 0),
    'compat',
    'on stop meta leaves ZooKeeper first and then drains its connections instead of sleeping this long',
  ),
]

/** The keys a `[topic=…]` section may set (besides `group.<name>`): the same specs as `[system]`'s. */
export const TOPIC_FIELDS: readonly (keyof TopicSettings)[] = [
  'numPartitions',
  'unflushThreshold',
  'unflushIntervalMs',
  'dataPath',
  'deletePolicy',
  'deleteWhen',
  'acceptPublish',
  'acceptSubscribe',
  'stat',
  'maxPartitionBytes',
]
export const TOPIC_KEYS = SYSTEM_KEYS.filter((spec) => (TOPIC_FIELDS as readonly string[]).includes(spec.field)) as readonly KeySpec<keyof TopicSettings>[]

/** `group.<consumer group>=<java class>` in a topic section. */
export const GROUP_FILTER_PREFIX = 'group.'
/** The start of a `group.<name>` value that is a filter expression the broker runs (anything else is a java class name: recorded, not run). */
export const FILTER_EXPRESSION_PREFIX = 'expr:'

/** `$META_DATA_DIR` if set, else `~/meta` (MetaQ's `${user.home}/meta`). */
export function defaultDataPath(): string {
  const fromEnv = process.env.META_DATA_DIR
  return fromEnv !== undefined && fromEnv.trim() !== '' ? resolve(fromEnv) : join(homedir(), 'meta')
}

export function defaultSystemConfig(): SystemConfig {
  const dataPath = defaultDataPath()
  const threads = 10 * availableParallelism()
  return {
    brokerId: 0,
    serverPort: 8123,
    numPartitions: 1,
    unflushThreshold: 1000,
    unflushIntervalMs: 10_000,
    maxSegmentBytes: 1024 * 1024 * 1024,
    maxTransferBytes: 1024 * 1024,
    dataPath,
    dataLogPath: dataPath,
    getProcessThreadCount: threads,
    putProcessThreadCount: threads,
    deletePolicy: {action: 'delete', maxReservedMs: 168 * 3_600_000},
    deleteWhen: '0 0 6,18 * * ?',
    quartzThreadCount: 5,
    maxCheckpoints: 3,
    checkpointIntervalMs: 3_600_000,
    maxTxTimeoutTimerCapacity: 30_000,
    maxTxTimeoutSeconds: 60,
    flushTxLogAtCommit: 1,
    acceptPublish: true,
    acceptSubscribe: true,
    stat: false,
    updateConsumerOffsets: false,
    loadMessageStoresInParallel: false,
    listenHost: '127.0.0.1',
    tlsOnly: false,
    groupSessionTimeoutMs: 30_000,
    maxPartitionBytes: 0,
    connectionMaxPendingBytes: 16 * 1024 * 1024,
    connectionFrameTimeoutMs: 60_000,
    connectionIdleTimeoutMs: 600_000,
    connectionAuthTimeoutMs: 10_000,
    maxConnectionsPerAddress: 4096,
    maxUnauthenticatedConnectionsPerAddress: 1024,
    maxOpenTransactionsPerConnection: 2000,
    maxOpenTransactionsPerPrincipal: 10_000,
    syncSlave: false,
    syncSlaveAddress: '',
    syncSlaveFromZk: false,
    sendToSlaveTimeoutMs: 2000,
    slaveContinuousFailureThreshold: 100,
    checkSlaveIntervalMs: 100,
    recoverOffset: false,
    autoCreateTopics: true,
    maxPartitions: DEFAULT_MAX_PARTITIONS,
    failover: false,
    failoverGraceMs: 10_000,
    failoverLeaseMs: 0,
    minSyncSlaves: 1,
  }
}

export function defaultZookeeperConfig(): ZookeeperConfig {
  return {
    zkRoot: '/meta',
    zkEnable: true,
    zkSessionTimeoutMs: 30_000,
    zkConnectionTimeoutMs: 30_000,
    zkSyncTimeMs: 5000,
  }
}

/** Kinds whose blank value means "use the default" (MetaQ's StringUtils.isBlank checks). */
const BLANK_MEANS_DEFAULT: ReadonlySet<ValueKind> = new Set(['path', 'string', 'host', 'address', 'zkConnect', 'zkRoot'])

/**
 * The typed value of `text` for `spec`, or undefined when a blank value means the default.
 * Relative paths resolve against `baseDir`. Throws {@link ValueError}.
 */
export function parseValue(spec: KeySpec, text: string, baseDir: string): unknown {
  const value = text.trim()
  if (value === '' && BLANK_MEANS_DEFAULT.has(spec.kind)) return undefined
  switch (spec.kind) {
    case 'int':
      return parseInteger(value, spec.min ?? INT_MIN, spec.max ?? INT_MAX)
    case 'bool':
      return parseBoolean(value)
    case 'path':
      return resolve(baseDir, value)
    case 'string':
      return value
    case 'host':
      return parseHost(value)
    case 'address':
      return parseAddress(value)
    case 'deletePolicy':
      return parseDeletePolicy(value)
    case 'cron':
      return checkedCron(value)
    case 'zkConnect':
      return parseZkConnect(value)
    case 'zkRoot':
      return normalizeZkPath(value)
  }
}

function checkedCron(value: string): string {
  const problem = quartzCronProblem(value)
  if (problem !== undefined) throw new ValueError(`expected a quartz cron expression (${problem})`)
  return value.split(/\s+/).join(' ')
}

/**
 * The validated form of a value set programmatically (a `meta serve` flag). Strings are
 * accepted for every kind and parsed as in the file; relative paths resolve against the cwd.
 */
export function checkOverrideValue(spec: KeySpec, value: unknown): unknown {
  if (typeof value === 'string') {
    const parsed = parseValue(spec, value, process.cwd())
    if (parsed === undefined && spec.kind !== 'zkConnect') throw new ValueError('expected a non-blank value')
    return parsed
  }
  switch (spec.kind) {
    case 'int':
      if (typeof value !== 'number') throw new ValueError('expected an integer')
      checkIntegerRange(value, spec.min ?? INT_MIN, spec.max ?? INT_MAX)
      return value
    case 'bool':
      if (typeof value !== 'boolean') throw new ValueError('expected true or false')
      return value
    case 'deletePolicy':
      checkDeletePolicy(value as never)
      return {...(value as object)}
    default:
      throw new ValueError('expected a string')
  }
}

/** The server.ini text of a typed value. */
export function formatValue(spec: KeySpec, value: unknown): string {
  if (spec.kind === 'deletePolicy') return formatDeletePolicy(value as never)
  return String(value)
}
