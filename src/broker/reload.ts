/**
 * Reloading the broker's server.ini while it runs (MetaQ's `metaServer.sh reload`; here also
 * `meta reload`, SIGHUP and `meta serve --watch-config`). See config/reload.ts for what is
 * applied and what waits for a restart.
 *
 * A file that does not parse, or that cannot be applied to the data this broker holds, is
 * refused whole (CONFIG_INVALID naming the file, line and key) and nothing changes:
 *   - lowering a topic's numPartitions below a partition that holds data (producers and
 *     consumers would stop seeing that data; close, drain and delete those partitions first);
 *   - changing the dataPath of a topic that has partitions (they would stay behind).
 * Raising numPartitions adds partitions at once: the `partitions` extension and the
 * ZooKeeper topic nodes report the new count, producers pick them up, groups rebalance.
 */
import {MetaError} from '../protocol/errors.js'
import type {ReloadReport} from '../protocol/commands/broker-admin.js'
import type {MessageStore} from '../storage/index.js'
import {
  applyOverrides,
  diffReload,
  loadServerIni,
  locateKey,
  parseServerIni,
  resolveTopic,
  type BrokerConfig,
  type ConfigChange,
  type ConfigOverrides,
  type ReloadDiff,
} from './config/index.js'
import {applyTopicOverlay, type TopicOverlay} from './topic-overlay.js'

/**
 * What to reload from: the broker's own file (default), another file, text (a slave applying
 * its master's server.ini), or the running file's config itself (a topic overlay changed online).
 */
export type ReloadSource = {path: string} | {text: string | Buffer; path?: string} | {config: BrokerConfig}

/** Read and check a reload; throws CONFIG_INVALID when the file is refused. */
export async function planReload(
  running: BrokerConfig,
  overrides: ConfigOverrides,
  store: MessageStore,
  source: ReloadSource | undefined,
  overlay: TopicOverlay = new Map(),
): Promise<{diff: ReloadDiff; report: ReloadReport; base: BrokerConfig}> {
  const {config: parsed, label, text} = await readSource(running, source)
  // The file (with the serve flags) is the base; the topic overlay goes on top of it (topic-overlay.ts).
  const base = applyOverrides(parsed, overrides)
  const next = applyTopicOverlay(base, overlay)
  const diff = diffReload(running, next)
  checkAgainstData(running, diff, store, label, text)
  return {
    diff,
    base,
    report: {
      source: label,
      applied: false,
      changed: diff.changes.length > 0 || running.checksum !== next.checksum,
      checksumBefore: running.checksum,
      checksumAfter: diff.config.checksum,
      topicsAdded: diff.topicsAdded,
      topicsRemoved: diff.topicsRemoved,
      changes: diff.changes,
      warnings: diff.config.warnings,
      ...(overlay.size > 0 ? {overlay: Object.fromEntries(overlay)} : {}),
    },
  }
}

async function readSource(running: BrokerConfig, source: ReloadSource | undefined): Promise<{config: BrokerConfig; label: string; text: string}> {
  if (source !== undefined && 'config' in source) return {config: source.config, label: source.config.source?.path ?? 'topic overlay', text: ''}
  if (source !== undefined && 'text' in source) {
    const config = parseServerIni(source.text, {path: source.path})
    return {config, label: config.source?.path ?? source.path ?? 'server.ini', text: String(source.text)}
  }
  const path = source?.path ?? running.source?.path
  if (path === undefined) {
    throw new MetaError('INVALID_ARGUMENT', 'this broker was started without a config file (meta serve -c FILE): there is no file to reload')
  }
  const config = await loadServerIni(path)
  return {config, label: config.source?.path ?? path, text: config.source?.bytes.toString('utf8') ?? ''}
}

/** Refuse what would hide or strand data this broker holds; annotate partition count changes. */
function checkAgainstData(running: BrokerConfig, diff: ReloadDiff, store: MessageStore, label: string, text: string): void {
  const withData = new Map<string, number[]>()
  for (const log of store.list()) withData.set(log.topic, [...(withData.get(log.topic) ?? []), log.partition])
  const names = new Set([...withData.keys(), ...running.topics.map((t) => t.pattern), ...diff.config.topics.map((t) => t.pattern)])
  for (const topic of names) {
    if (topic.includes('*')) continue
    const before = resolveTopic(running, topic)
    const after = resolveTopic(diff.config, topic)
    if (after === undefined) continue
    const partitions = withData.get(topic) ?? []
    const beyond = partitions.filter((p) => p >= after.numPartitions).sort((a, b) => a - b)
    if (beyond.length > 0) {
      const {section, line} = whereSet(diff.config, topic, 'numPartitions', text)
      const messages = beyond.reduce((sum, p) => sum + (store.get(topic, p)?.info().messageCount ?? 0), 0)
      throw refusal(
        label,
        line,
        `[${section}] numPartitions = ${after.numPartitions}: partition${beyond.length > 1 ? 's' : ''} ${beyond.join(', ')} of topic "${topic}" ${beyond.length > 1 ? 'hold' : 'holds'} data (${messages} messages); ` +
          'lowering numPartitions would hide it from producers and consumers. Close those partitions (meta partitions close), let consumers finish them, ' +
          'delete them offline (meta partitions delete), then lower numPartitions',
      )
    }
    if (before !== undefined && partitions.length > 0 && before.dataPath !== after.dataPath) {
      const {section, line} = whereSet(diff.config, topic, 'dataPath', text)
      throw refusal(
        label,
        line,
        `[${section}] dataPath = "${after.dataPath}": topic "${topic}" has partitions in "${before.dataPath}", which a reload cannot move; ` +
          'stop the broker, move the directories, and restart with the new dataPath',
      )
    }
    if (before !== undefined && before.numPartitions !== after.numPartitions) {
      noteCountChange(diff.changes, topic, before.numPartitions, after.numPartitions)
    }
  }
}

/** The section that sets `key` for `topic` (its own section, else [system]) and the line. */
function whereSet(config: BrokerConfig, topic: string, key: 'numPartitions' | 'dataPath', text: string): {section: string; line: number | undefined} {
  const own = config.topics.find((t) => t.pattern === topic)
  const section = own !== undefined && own.explicit[key] !== undefined ? `topic=${topic}` : 'system'
  return {section, line: locateKey(text, section, key)}
}

function refusal(label: string, line: number | undefined, message: string): MetaError {
  return new MetaError('CONFIG_INVALID', `${label}${line === undefined ? '' : `:${line}`}: ${message}; the running configuration is unchanged`, {
    details: {path: label, line},
  })
}

function noteCountChange(changes: ConfigChange[], topic: string, from: number, to: number): void {
  const range = (a: number, b: number) => (a === b ? `partition ${a}` : `partitions ${a}..${b}`)
  const note =
    to > from
      ? `topic "${topic}": ${range(from, to - 1)} added`
      : `topic "${topic}": ${range(to, from - 1)} no longer accepted (${to === from - 1 ? 'it holds' : 'they hold'} no data)`
  const change =
    changes.find((c) => c.section === `topic=${topic}` && c.key === 'numPartitions') ?? changes.find((c) => c.section === 'system' && c.key === 'numPartitions')
  if (change === undefined) return
  change.note = change.note === undefined ? note : `${change.note}; ${note}`
}
