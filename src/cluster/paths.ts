/**
 * Every ZooKeeper path and value format MetaQ 1.4 uses (docs/protocol.md#zookeeper), in one place,
 * shared by broker and client. `<root>` is zk.zkRoot (default `/meta`).
 *
 *   <root>/brokers/ids/<id>                              persistent  meta://host:port (for pre-1.4 clients)
 *   <root>/brokers/ids/<id>/master                       ephemeral   meta://host:port
 *   <root>/brokers/ids/<id>/slave<k>                     ephemeral   meta://host:port
 *   <root>/brokers/ids/<id>/master_tls                   ephemeral   meta+tls://host:tlsPort (meta extension)
 *   <root>/brokers/ids/<id>/slave<k>_tls                 ephemeral   meta+tls://host:tlsPort (meta extension)
 *   <root>/brokers/ids/<id>/master_config_checksum       ephemeral   decimal CRC32 of server.ini
 *   <root>/brokers/topics/<topic>/<id>-<role>            ephemeral   numPartitions (legacy)
 *   <root>/brokers/topics-pub/<topic>/<id>-<role>        ephemeral   {"numParts":N,"broker":"<id>-<role>"}
 *   <root>/brokers/topics-sub/<topic>/<id>-<role>        ephemeral   same JSON
 *   <root>/consumers/<group>/ids/<consumerId>            ephemeral   topics, comma-joined
 *   <root>/consumers/<group>/owners/<topic>/<id>-<p>     ephemeral   owner consumerId
 *   <root>/consumers/<group>/offsets/<topic>/<id>-<p>    persistent  "<msgId>-<offset>"
 *
 * `<role>` is `m` for a master and `s<slaveId>` for a slave. A broker with a TLS port writes
 * `master_tls` beside `master` (a slave `slave<k>_tls` beside `slave<k>`), which keeps
 * `meta://host:port` for MetaQ's clients (under tlsOnly, where there is no plain port,
 * `master` and `slave<k>` hold the `meta+tls://` URL too).
 */

export const DEFAULT_ZK_ROOT = '/meta'
export const MASTER_ROLE = 'm'

export class ZkPaths {
  readonly root: string

  constructor(root = DEFAULT_ZK_ROOT) {
    this.root = normalizeRoot(root)
  }

  brokerIds(): string {
    return `${this.root}/brokers/ids`
  }
  broker(id: number): string {
    return `${this.brokerIds()}/${id}`
  }
  master(id: number): string {
    return `${this.broker(id)}/master`
  }
  /** meta extension: the master's TLS endpoint. */
  masterTls(id: number): string {
    return `${this.broker(id)}/master_tls`
  }
  /** An asynchronous slave's node. */
  slave(id: number, slaveId: number): string {
    return `${this.broker(id)}/slave${slaveId}`
  }
  /** meta extension: an asynchronous slave's TLS endpoint. */
  slaveTls(id: number, slaveId: number): string {
    return `${this.slave(id, slaveId)}_tls`
  }
  configChecksum(id: number): string {
    return `${this.broker(id)}/master_config_checksum`
  }
  topics(): string {
    return `${this.root}/brokers/topics`
  }
  topic(topic: string): string {
    return `${this.topics()}/${topic}`
  }
  topicBroker(topic: string, id: number, role = MASTER_ROLE): string {
    return `${this.topic(topic)}/${id}-${role}`
  }
  topicsPub(): string {
    return `${this.root}/brokers/topics-pub`
  }
  topicPub(topic: string): string {
    return `${this.topicsPub()}/${topic}`
  }
  topicPubBroker(topic: string, id: number, role = MASTER_ROLE): string {
    return `${this.topicPub(topic)}/${id}-${role}`
  }
  topicsSub(): string {
    return `${this.root}/brokers/topics-sub`
  }
  topicSub(topic: string): string {
    return `${this.topicsSub()}/${topic}`
  }
  topicSubBroker(topic: string, id: number, role = MASTER_ROLE): string {
    return `${this.topicSub(topic)}/${id}-${role}`
  }
  consumers(): string {
    return `${this.root}/consumers`
  }
  group(group: string): string {
    return `${this.consumers()}/${group}`
  }
  consumerIds(group: string): string {
    return `${this.group(group)}/ids`
  }
  consumerId(group: string, consumerId: string): string {
    return `${this.consumerIds(group)}/${consumerId}`
  }
  owners(group: string, topic: string): string {
    return `${this.group(group)}/owners/${topic}`
  }
  owner(group: string, topic: string, brokerId: number, partition: number): string {
    return `${this.owners(group, topic)}/${brokerId}-${partition}`
  }
  offsetsOf(group: string): string {
    return `${this.group(group)}/offsets`
  }
  offsets(group: string, topic: string): string {
    return `${this.offsetsOf(group)}/${topic}`
  }
  offset(group: string, topic: string, brokerId: number, partition: number): string {
    return `${this.offsets(group, topic)}/${brokerId}-${partition}`
  }
}

/** Leading '/', no trailing '/' (MetaQ's normalisation). */
function normalizeRoot(root: string): string {
  const trimmed = root.trim().replace(/\/+$/, '')
  return trimmed.startsWith('/') ? trimmed : `/${trimmed}`
}

/** The JSON of a topics-pub / topics-sub node. */
interface TopicBrokerInfo {
  numParts: number
  broker: string
}

export function encodeTopicBroker(numParts: number, brokerId: number, role = MASTER_ROLE): string {
  return JSON.stringify({numParts, broker: `${brokerId}-${role}`} satisfies TopicBrokerInfo)
}

/** `"3-m"` → {brokerId: 3, role: 'm'}; `"3-s1"` → role 's1'; undefined if it is neither. */
export function parseBrokerRole(child: string): {brokerId: number; role: string} | undefined {
  const match = /^(\d+)-(m|s\d+)$/.exec(child)
  return match ? {brokerId: Number(match[1]), role: match[2]} : undefined
}

/** `"0-3"` → {brokerId: 0, partition: 3}. */
export function parseBrokerPartition(child: string): {brokerId: number; partition: number} | undefined {
  const match = /^(\d+)-(\d+)$/.exec(child)
  return match ? {brokerId: Number(match[1]), partition: Number(match[2])} : undefined
}

/** MetaQ's offset node value `"<msgId>-<offset>"`, split at the LAST '-' (msgIds may be negative). */
export function encodeZkOffset(msgId: string, offset: number): string {
  return `${msgId}-${offset}`
}

export function parseZkOffset(value: string): {msgId: string; offset: number} | undefined {
  const text = value.trim()
  const dash = text.lastIndexOf('-')
  // Pre-1.4 clients wrote the bare offset.
  if (dash <= 0) return /^\d+$/.test(text) ? {msgId: '-1', offset: Number(text)} : undefined
  const msgId = text.slice(0, dash)
  const offset = Number(text.slice(dash + 1))
  if (!/^-?\d+$/.test(msgId) || !Number.isSafeInteger(offset)) return undefined
  return {msgId, offset}
}

/** `meta://host:port` → {host, port}; `meta+tls://host:port` → {host, port, tls: true}. */
export function parseBrokerUrl(url: string): {host: string; port: number; tls?: boolean} | undefined {
  const match = /^meta(\+tls)?:\/\/(\[[^\]]+\]|[^:/]+):(\d+)\/?$/.exec(url.trim())
  if (!match) return undefined
  const address = {host: match[2].replace(/^\[|\]$/g, ''), port: Number(match[3])}
  return match[1] === undefined ? address : {...address, tls: true}
}
