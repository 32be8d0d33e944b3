/**
 * What a config reload changes (MetaQ's `metaServer.sh reload`, docs/configuration.md#reload):
 * given the running config and a newly parsed one, the config to run with and the list of
 * differences.
 *
 * Applied at once: every `[topic=…]` section (added, removed, changed) and the `[system]`
 * keys that topics inherit (numPartitions, the flush policy, retention, acceptPublish,
 * acceptSubscribe, stat, maxPartitionBytes), and autoCreateTopics and maxPartitions (checked
 * at each partition's creation). Everything else (the port, dataPath, brokerId,
 * segment size, `[zookeeper]`, …) is listed as needing a restart and keeps its running value.
 * The new file's bytes and checksum become the config's (what `stats config` returns and
 * `master_config_checksum` publishes), as in MetaQ.
 */
import type {ReloadChange} from '../../protocol/commands/broker-admin.js'
import {readIni} from './ini-reader.js'
import {formatValue, SYSTEM_KEYS, TOPIC_FIELDS, TOPIC_KEYS, ZOOKEEPER_KEYS, type KeySpec} from './keys.js'
import type {BrokerConfig, SystemConfig, TopicConfig, TopicSettings} from './types.js'

/** [system] fields a reload applies: the per-topic defaults, except dataPath (data would stay behind), the bounds on topic creation, the limits per address (for new connections and at the next sweep) and on open transactions (from the next BEGIN). */
export const RELOADABLE_SYSTEM_FIELDS: readonly (keyof SystemConfig)[] = [
  ...TOPIC_FIELDS.filter((field) => field !== 'dataPath'),
  'autoCreateTopics',
  'maxPartitions',
  'connectionAuthTimeoutMs',
  'maxConnectionsPerAddress',
  'maxUnauthenticatedConnectionsPerAddress',
  'maxOpenTransactionsPerConnection',
  'maxOpenTransactionsPerPrincipal',
]

/** One difference between the running config and the file (the wire report's type, protocol/commands/broker-admin.ts). */
export type ConfigChange = ReloadChange

export interface ReloadDiff {
  /** The config to run with. */
  config: BrokerConfig
  changes: ConfigChange[]
  /** Topic sections (patterns) added and removed. */
  topicsAdded: string[]
  topicsRemoved: string[]
}

/** The config to run after reloading `next` over `running`, and what differs. */
export function diffReload(running: BrokerConfig, next: BrokerConfig): ReloadDiff {
  const system: SystemConfig = {...running.system}
  for (const field of RELOADABLE_SYSTEM_FIELDS) (system as unknown as Record<string, unknown>)[field] = next.system[field]
  const topics = next.topics.map((t) => rebuildTopic(system, t))
  const config: BrokerConfig = {
    system,
    zookeeper: running.zookeeper,
    topics,
    acceptAnyTopic: next.acceptAnyTopic,
    source: next.source,
    checksum: next.checksum,
    warnings: next.warnings,
  }
  const changes: ConfigChange[] = []
  for (const spec of SYSTEM_KEYS) {
    const change = compare('system', spec, running.system[spec.field], next.system[spec.field])
    if (change === undefined) continue
    const applied = (RELOADABLE_SYSTEM_FIELDS as readonly string[]).includes(spec.field)
    changes.push(applied ? change : {...change, applied: false, note: 'takes effect after a restart'})
  }
  for (const spec of ZOOKEEPER_KEYS) {
    const change = compare('zookeeper', spec, running.zookeeper[spec.field], next.zookeeper[spec.field])
    if (change !== undefined) changes.push({...change, applied: false, note: 'takes effect after a restart'})
  }
  const before = new Map(running.topics.map((t) => [t.pattern, t]))
  const after = new Map(topics.map((t) => [t.pattern, t]))
  const topicsAdded = topics.filter((t) => !before.has(t.pattern)).map((t) => t.pattern)
  const topicsRemoved = running.topics.filter((t) => !after.has(t.pattern)).map((t) => t.pattern)
  for (const pattern of topicsAdded) {
    const t = after.get(pattern)!
    changes.push({section: `topic=${pattern}`, key: '(section)', before: null, after: 'added', applied: true, note: describeNewTopic(t)})
  }
  for (const pattern of topicsRemoved) {
    changes.push({
      section: `topic=${pattern}`,
      key: '(section)',
      before: 'present',
      after: null,
      applied: true,
      note: pattern.includes('*')
        ? 'topics it matched are no longer accepted unless another section matches them; their data stays readable'
        : 'puts are refused unless another section matches it; its data stays and stays readable',
    })
  }
  for (const [pattern, t] of after) {
    const old = before.get(pattern)
    if (old === undefined) continue
    for (const spec of TOPIC_KEYS) {
      const change = compare(`topic=${pattern}`, spec, old[spec.field as keyof TopicSettings], t[spec.field as keyof TopicSettings])
      if (change !== undefined) changes.push(change)
    }
    const filters = (x: TopicConfig) => JSON.stringify(Object.entries(x.groupFilters).sort())
    if (filters(old) !== filters(t)) {
      changes.push({
        section: `topic=${pattern}`,
        key: 'group.*',
        before: filters(old),
        after: filters(t),
        applied: true,
        note: 'expr: filters apply to the next get; java class filters are recorded, not run',
      })
    }
  }
  return {config, changes, topicsAdded, topicsRemoved}
}

/**
 * The line of `key` in `[section]` of server.ini text (for error messages about a value that
 * parsed but cannot be applied), or of the section header when the key is not written there.
 */
export function locateKey(text: string, section: string, key: string): number | undefined {
  try {
    const found = readIni(text).sections.find((s) => s.name === section)
    return found?.entries.find((e) => e.key === key)?.line ?? found?.line
  } catch {
    // The text parsed once already; a second failure only loses the line number.
    return undefined
  }
}

function rebuildTopic(system: SystemConfig, topic: TopicConfig): TopicConfig {
  const inherited: Record<string, unknown> = {}
  for (const field of TOPIC_FIELDS) inherited[field] = system[field]
  return {
    ...(inherited as unknown as TopicSettings),
    ...topic.explicit,
    pattern: topic.pattern,
    groupFilters: {...topic.groupFilters},
    explicit: {...topic.explicit},
  }
}

function compare(section: string, spec: KeySpec, before: unknown, after: unknown): ConfigChange | undefined {
  const a = before === undefined ? null : formatValue(spec, before)
  const b = after === undefined ? null : formatValue(spec, after)
  if (a === b) return undefined
  return {section, key: spec.key, before: a, after: b, applied: true}
}

function describeNewTopic(t: TopicConfig): string {
  if (t.pattern.includes('*')) return 'matching topics are accepted (with the [system] values)'
  return `${t.numPartitions} partition${t.numPartitions === 1 ? '' : 's'}; accepted from now on`
}
