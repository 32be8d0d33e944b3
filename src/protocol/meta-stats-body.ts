/**
 * The bodies of meta's own stats items (docs/protocol.md#stats), beyond MetaQ's:
 * `meta-capabilities` (what a broker supports), `meta-sync` (synchronous replication) and
 * `meta-connections` (client connections). Encoded by the broker and parsed by the client with
 * the same tables, as stats-body.ts does for MetaQ's items.
 */
import {pairs, statsLines, statsMap, type StatsLine} from './stats-body.js'

/** The stats item a meta broker answers with its capabilities. */
export const CAPABILITIES_ITEM = 'meta-capabilities'

/** What a broker supports beyond MetaQ 1.4 (`stats meta-capabilities`). */
export interface BrokerCapabilities {
  /** A meta broker (it answers `stats meta-capabilities`). */
  meta: boolean
  version?: string
  longPoll: boolean
  groups: boolean
  /** The broker's id, when it says (meta brokers do). */
  brokerId?: number
  /** Largest payload the broker accepts in one put. */
  maxMessageBytes?: number
  /** Serves `put-batch` (many messages of one partition per frame). */
  batchPut?: boolean
  /** Serves transactions, the transactional `put-batch` form and `tx-commit`/`tx-list`/`tx-decide`. */
  transactions?: boolean
  /** A synchronous slave that serves `sync-batch` (sync-batch.ts). */
  syncBatch?: boolean
  /** A synchronous slave that obeys `sync-cut` (sync-cut.ts): its master heals a divergent tail. */
  syncCut?: boolean
  /** A synchronous slave that takes its master's topic overlay (`sync-overlay`, sync-overlay.ts). */
  syncOverlay?: boolean
  /** Serves `replicate` and `slave-status` (asynchronous replication, docs/protocol.md). */
  replicate?: boolean
  /** Serves the filtered get (a filter expression as get's 9th token, docs/protocol.md). */
  filter?: boolean
  /** Serves `topic-admin` (topics created, changed and deleted online). */
  topicAdmin?: boolean
}

/** What a broker that does not answer `stats meta-capabilities` (MetaQ) supports: nothing more. */
export const NO_CAPABILITIES: BrokerCapabilities = Object.freeze({meta: false, longPoll: false, groups: false})

export function encodeCapabilities(caps: Required<Omit<BrokerCapabilities, 'meta'>>): StatsLine[] {
  return [
    ['meta_version', caps.version],
    ['broker_id', caps.brokerId],
    ['max_message_bytes', caps.maxMessageBytes],
    ['long_poll', caps.longPoll],
    ['groups', caps.groups],
    ['batch_put', caps.batchPut],
    ['transactions', caps.transactions],
    ['sync_batch', caps.syncBatch],
    ['sync_cut', caps.syncCut],
    ['sync_overlay', caps.syncOverlay],
    ['replicate', caps.replicate],
    ['filter', caps.filter],
    ['topic_admin', caps.topicAdmin],
  ]
}

/** The capabilities in a `stats meta-capabilities` body (NO_CAPABILITIES without meta_version). */
export function parseCapabilities(body: string): BrokerCapabilities {
  const values = statsMap(body)
  if (!values.has('meta_version')) return NO_CAPABILITIES
  return {
    meta: true,
    version: values.get('meta_version'),
    longPoll: values.get('long_poll') === 'true',
    groups: values.get('groups') === 'true',
    brokerId: values.has('broker_id') ? Number(values.get('broker_id')) : undefined,
    maxMessageBytes: values.has('max_message_bytes') ? Number(values.get('max_message_bytes')) : undefined,
    batchPut: values.get('batch_put') === 'true',
    transactions: values.get('transactions') === 'true',
    syncBatch: values.get('sync_batch') === 'true',
    syncCut: values.get('sync_cut') === 'true',
    syncOverlay: values.get('sync_overlay') === 'true',
    replicate: values.get('replicate') === 'true',
    filter: values.get('filter') === 'true',
    topicAdmin: values.get('topic_admin') === 'true',
  }
}

// ---------------------------------------------------------------------------------------
// meta-sync

/** The stats item with a broker's synchronous replication state. */
export const SYNC_ITEM = 'meta-sync'

/** Synchronous replication as a broker reports it (`stats meta-sync`). */
export type SyncStats =
  | {role: 'none' | 'slave'}
  | {
      role: 'master'
      slaveAddress: string
      slaveConnected: boolean
      /** `sync-batch` (a meta slave) or `sync` (MetaQ's form); `unknown` until connected. */
      form: 'sync-batch' | 'sync' | 'unknown'
      consecutiveFailures: number
      /** Out of ZooKeeper after slaveContinuousFailureThreshold failures, until a test sync succeeds. */
      leftZooKeeper: boolean
      partitionsCatchingUp: number
      partitionsDiverged: number
    }

export function encodeSyncStats(s: SyncStats): StatsLine[] {
  if (s.role !== 'master') return [['role', s.role]]
  return [
    ['role', s.role],
    ['slave_address', s.slaveAddress],
    ['slave_connected', s.slaveConnected],
    ['form', s.form],
    ['consecutive_failures', s.consecutiveFailures],
    ['left_zookeeper', s.leftZooKeeper],
    ['partitions_catching_up', s.partitionsCatchingUp],
    ['partitions_diverged', s.partitionsDiverged],
  ]
}

export function parseSyncStats(body: string): SyncStats {
  const v = statsMap(body)
  const role = v.get('role')
  if (role !== 'master') return {role: role === 'slave' ? 'slave' : 'none'}
  const form = v.get('form')
  return {
    role,
    slaveAddress: v.get('slave_address') ?? '',
    slaveConnected: v.get('slave_connected') === 'true',
    form: form === 'sync-batch' || form === 'sync' ? form : 'unknown',
    consecutiveFailures: Number(v.get('consecutive_failures')),
    leftZooKeeper: v.get('left_zookeeper') === 'true',
    partitionsCatchingUp: Number(v.get('partitions_catching_up')),
    partitionsDiverged: Number(v.get('partitions_diverged')),
  }
}

// ---------------------------------------------------------------------------------------
// meta-connections

/** The stats item listing a meta broker's client connections. */
export const CONNECTIONS_ITEM = 'meta-connections'

/** One client connection of a meta broker (`stats meta-connections`). */
export interface ConnectionStats {
  /** The client's `host:port`. */
  remote: string
  id: number
  /** Requests read and not yet answered. */
  inFlight: number
  /** Answers not yet taken by the socket plus requests in flight, in bytes. */
  pendingBytes: number
  /** False while the broker does not read from it (at its memory bound, or closing). */
  reading: boolean
  idleMs: number
}

export function encodeConnectionsStats(connections: readonly ConnectionStats[]): StatsLine[] {
  return connections.map((c) => [c.remote, 'id', c.id, 'in_flight', c.inFlight, 'pending_bytes', c.pendingBytes, 'reading', c.reading, 'idle_ms', c.idleMs])
}

export function parseConnectionsStats(body: string): ConnectionStats[] {
  return statsLines(body).map((tokens) => {
    const v = pairs(tokens.slice(1))
    return {
      remote: tokens[0],
      id: Number(v.id),
      inFlight: Number(v.in_flight),
      pendingBytes: Number(v.pending_bytes),
      reading: v.reading === 'true',
      idleMs: Number(v.idle_ms),
    }
  })
}
