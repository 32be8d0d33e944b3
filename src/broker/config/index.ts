/**
 * The broker's `server.ini`: MetaQ 1.4's file (docs/configuration.md), parsed into a typed,
 * validated {@link BrokerConfig}. Sections:
 *
 *   [system]           broker settings and per-topic defaults (+ meta's listenHost, groupSessionTimeoutMs)
 *   [zookeeper]        zk.* keys; a blank or absent zk.zkConnect means standalone mode
 *   [topic=<pattern>]  per-topic settings; omitted keys inherit [system]; `*` is a wildcard
 *
 * Keys are case-sensitive and spelled as in MetaQ. Numeric values may be integer expressions
 * (`1024*1024*1024`). Every error is a `CONFIG_INVALID` MetaError naming the file, line,
 * section, key and value and saying what was expected. Precedence: `meta serve` flags
 * ({@link applyOverrides}) > the file > defaults. With no topic section (or no file) any valid
 * topic name is accepted with the [system] values (zero-config mode).
 */
import {readSecuritySection, type SecurityConfig} from './security.js'
import {readFile} from 'node:fs/promises'
import {dirname, resolve} from 'node:path'
import {crc32} from 'node:zlib'
import {closest, distance} from 'fastest-levenshtein'
import {isMetaError, MetaError} from '../../protocol/errors.js'
import {parseFilter} from '../../protocol/filter-expression.js'
import {isValidTopicName, topicPatternMatches, validateGroupName, validateTopicPattern} from '../../protocol/names.js'
import {IniSyntaxError, quote, readIni, type IniSection} from './ini-reader.js'
import {
  checkOverrideValue,
  defaultSystemConfig,
  defaultZookeeperConfig,
  formatValue,
  GROUP_FILTER_PREFIX,
  FILTER_EXPRESSION_PREFIX,
  parseValue,
  SYSTEM_KEYS,
  TOPIC_FIELDS,
  TOPIC_KEYS,
  ZOOKEEPER_KEYS,
  type KeySpec,
} from './keys.js'
import {ValueError} from './values.js'
import type {BrokerConfig, ConfigOverrides, ResolvedTopic, SystemConfig, TopicConfig, TopicSettings, ZookeeperConfig} from './types.js'

export type * from './types.js'
export {defaultDataPath, SYSTEM_KEYS, TOPIC_KEYS, ZOOKEEPER_KEYS, GROUP_FILTER_PREFIX, FILTER_EXPRESSION_PREFIX, type KeySpec, type KeyUse} from './keys.js'
export {nextQuartzFireTime} from './quartz.js'
export {formatDeletePolicy} from './values.js'
export {formatValue} from './keys.js'
export {diffReload, locateKey, RELOADABLE_SYSTEM_FIELDS, type ConfigChange, type ReloadDiff} from './reload.js'
export {scheduleQuartz, type QuartzJob} from './quartz.js'

/** The label errors use for text that did not come from a named file. */
const DEFAULT_LABEL = 'server.ini'

/** Defaults for everything; no topic sections, so any topic is accepted. */
export function defaultBrokerConfig(): BrokerConfig {
  const config: BrokerConfig = {
    system: defaultSystemConfig(),
    zookeeper: defaultZookeeperConfig(),
    topics: [],
    acceptAnyTopic: true,
    checksum: 0,
    warnings: [],
  }
  config.checksum = crc32(Buffer.from(renderServerIni(config)))
  return config
}

/**
 * Parse and validate server.ini text. `options.path` names the file in errors, becomes
 * `source.path`, and is where relative paths in the file resolve from (default: the cwd).
 * @throws MetaError CONFIG_INVALID
 */
export function parseServerIni(text: string | Buffer, options: {path?: string} = {}): BrokerConfig {
  const label = options.path ?? DEFAULT_LABEL
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
  const baseDir = options.path === undefined ? process.cwd() : dirname(resolve(options.path))
  let sections: IniSection[]
  try {
    const decoded = typeof text === 'string' ? text : new TextDecoder('utf-8', {fatal: true}).decode(bytes)
    sections = readIni(decoded).sections
  } catch (error) {
    if (error instanceof IniSyntaxError) throw configError(`${label}:${error.line}: ${error.message}`, {path: label, line: error.line})
    if (error instanceof TypeError) throw configError(`${label}: expected utf-8 text`, {path: label}, error)
    throw error
  }
  const parser = new SectionParser(label, baseDir)
  for (const section of sections) parser.add(section)
  return parser.finish({path: options.path === undefined ? label : resolve(options.path), bytes: Buffer.from(bytes)})
}

/**
 * Read and parse a server.ini file.
 * @throws MetaError CONFIG_INVALID naming the file when it cannot be read or is invalid
 */
export async function loadServerIni(path: string): Promise<BrokerConfig> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : String(error)
    throw configError(`cannot read config file ${quote(path)}: ${reason}`, {path}, error)
  }
  return parseServerIni(bytes, {path})
}

/**
 * The config with `meta serve` flags applied over it (flags win over the file), validated as
 * the file's values are. Undefined values are ignored; strings are parsed as in the file
 * (relative paths against the cwd); `zkConnect: ''` switches to standalone. Topic sections
 * follow [system] for the keys they do not set; dataLogPath follows dataPath when they were
 * equal. `source` and its checksum are kept (`stats config` returns the file as read).
 * @throws MetaError CONFIG_INVALID naming the override
 */
export function applyOverrides(config: BrokerConfig, overrides: ConfigOverrides): BrokerConfig {
  const system: Record<string, unknown> = {...config.system}
  const zookeeper: Record<string, unknown> = {...config.zookeeper}
  for (const [field, value] of Object.entries(overrides)) {
    if (value === undefined) continue
    const zkSpec = field === 'zkConnect' || field === 'zkRoot' ? ZOOKEEPER_KEYS.find((s) => s.field === field) : undefined
    const spec = zkSpec ?? SYSTEM_KEYS.find((s) => s.field === field)
    if (spec === undefined) throw configError(`unknown override ${quote(field)}`, {field})
    let checked: unknown
    try {
      checked = checkOverrideValue(spec, value)
    } catch (error) {
      if (!(error instanceof ValueError)) throw error
      throw configError(`override ${field} = ${JSON.stringify(value)}: ${error.message}`, {field, value})
    }
    ;(zkSpec === undefined ? system : zookeeper)[field] = checked
  }
  if (overrides.dataPath !== undefined && overrides.dataLogPath === undefined && config.system.dataLogPath === config.system.dataPath) {
    system.dataLogPath = system.dataPath
  }
  const next: BrokerConfig = {
    ...config,
    system: system as unknown as SystemConfig,
    zookeeper: zookeeper as unknown as ZookeeperConfig,
    topics: config.topics.map((topic) => buildTopic(system as unknown as SystemConfig, topic.pattern, topic.explicit, topic.groupFilters)),
    warnings: [...config.warnings],
  }
  checkPartitionCounts(next, () => '', 'raise maxPartitions (meta serve --max-partitions) or lower numPartitions (--partitions)')
  if (next.source === undefined) next.checksum = crc32(Buffer.from(renderServerIni(next)))
  return next
}

/**
 * numPartitions (of [system] and of each topic section) within maxPartitions: a topic with
 * more partitions than the broker may serve could never be written whole, and a client reading
 * it would list millions of partitions that do not exist. `where` prefixes a section's name
 * (the file and line it is at); `remedy` ends the message.
 * @throws MetaError CONFIG_INVALID naming the section and both values
 */
function checkPartitionCounts(config: BrokerConfig, where: (section: string) => string, remedy: string): void {
  const limit = config.system.maxPartitions
  const sections: Array<[string, number]> = [
    ['system', config.system.numPartitions],
    ...config.topics.map((t): [string, number] => [`topic=${t.pattern}`, t.numPartitions]),
  ]
  for (const [section, count] of sections) {
    if (count > limit) {
      throw configError(
        `${where(section)}[${section}] numPartitions = ${count}: expected at most maxPartitions (${limit}), the partitions this broker serves in all; ${remedy}`,
        {section, numPartitions: count, maxPartitions: limit},
      )
    }
  }
}

/**
 * The effective settings of concrete topic `topic`: the first section whose pattern equals
 * it, else the first wildcard section that matches it (with the [system] values, as MetaQ
 * does), else the [system] values when no topic is configured (`configured: false`).
 * Undefined when the topic is not accepted or not a valid topic name.
 */
export function resolveTopic(config: BrokerConfig, topic: string): ResolvedTopic | undefined {
  if (!isValidTopicName(topic)) return undefined
  const resolved = (settings: TopicSettings, configured: boolean): ResolvedTopic => ({
    topic,
    ...pickTopicSettings(settings),
    maxSegmentBytes: config.system.maxSegmentBytes,
    configured,
  })
  const exact = config.topics.find((t) => t.pattern === topic)
  if (exact !== undefined) return resolved(exact, true)
  const wildcard = config.topics.find((t) => t.pattern.includes('*') && topicPatternMatches(t.pattern, topic))
  if (wildcard !== undefined) return resolved(config.system, true)
  return config.acceptAnyTopic ? resolved(config.system, false) : undefined
}

/**
 * The config as server.ini text: every [system] and [zookeeper] value, and each topic section
 * with the keys it sets itself. `parseServerIni(renderServerIni(c))` gives back `c`'s settings.
 */
export function renderServerIni(config: BrokerConfig): string {
  const lines: string[] = ['; server.ini rendered by meta from its effective configuration', '[system]']
  const system = config.system as unknown as Record<string, unknown>
  const line = (spec: KeySpec, value: unknown): void => {
    if (value !== undefined) lines.push(`${spec.key}=${formatValue(spec, value)}`)
  }
  for (const spec of SYSTEM_KEYS) if (spec.use !== 'extension') line(spec, system[spec.field])
  lines.push('; meta extensions (a MetaQ broker refuses unknown keys: drop these lines for MetaQ)')
  for (const spec of SYSTEM_KEYS) if (spec.use === 'extension') line(spec, system[spec.field])
  lines.push('', '[zookeeper]', '; a blank zk.zkConnect means standalone (no ZooKeeper)')
  for (const spec of ZOOKEEPER_KEYS) {
    line(spec, spec.field === 'zkConnect' ? (config.zookeeper.zkConnect ?? '') : config.zookeeper[spec.field])
  }
  for (const topic of config.topics) {
    lines.push('', `[topic=${topic.pattern}]`)
    const explicit = topic.explicit as Record<string, unknown>
    for (const spec of TOPIC_KEYS) line(spec, explicit[spec.field])
    for (const [group, filter] of Object.entries(topic.groupFilters)) lines.push(`${GROUP_FILTER_PREFIX}${group}=${filter}`)
  }
  return lines.join('\n') + '\n'
}

// ---------------------------------------------------------------------------------------------

const SECTION_KINDS = ['system', 'zookeeper', 'topic', 'security'] as const

function configError(message: string, details: Record<string, unknown>, cause?: unknown): MetaError {
  return new MetaError('CONFIG_INVALID', message, {details, cause})
}

function pickTopicSettings(source: TopicSettings): TopicSettings {
  const settings: Record<string, unknown> = {}
  for (const field of TOPIC_FIELDS) settings[field] = source[field]
  return settings as unknown as TopicSettings
}

function buildTopic(system: SystemConfig, pattern: string, explicit: Partial<TopicSettings>, groupFilters: Record<string, string>): TopicConfig {
  return {pattern, ...pickTopicSettings(system), ...explicit, groupFilters: {...groupFilters}, explicit: {...explicit}}
}

/** The startup line for a key that is set in the file but has no effect. */
function ignoredKeyWarning(spec: KeySpec): string {
  const section = ZOOKEEPER_KEYS.includes(spec as never) ? '[zookeeper]' : '[system]'
  return spec.use === 'pending'
    ? `${section} ${spec.key} is not used yet (pending: ${spec.note}); it is accepted and ignored until then`
    : `${section} ${spec.key} is ignored (accepted for compatibility with MetaQ): ${spec.note}`
}

/** A close valid name for a misspelt one (case-insensitive Levenshtein), if one is close enough to be a typo. */
function suggest(name: string, candidates: readonly string[]): string | undefined {
  if (candidates.length === 0) return undefined
  const lower = name.toLowerCase()
  const best = closest(
    lower,
    candidates.map((c) => c.toLowerCase()),
  )
  if (distance(lower, best) > Math.max(2, Math.floor(name.length / 3))) return undefined
  return candidates.find((c) => c.toLowerCase() === best)
}

/** Collects the sections of one file, then builds the config. */
class SectionParser {
  private readonly seen = new Map<string, number>()
  private readonly systemValues: Record<string, unknown> = {}
  private readonly zookeeperValues: Record<string, unknown> = {}
  private readonly topics: {pattern: string; explicit: Record<string, unknown>; groupFilters: Record<string, string>}[] = []
  private readonly ignoredKeys: KeySpec[] = []
  private readonly warnings: string[] = []
  private security: SecurityConfig | undefined

  constructor(
    private readonly label: string,
    private readonly baseDir: string,
  ) {}

  add(section: IniSection): void {
    const first = this.seen.get(section.name)
    const where = `${this.label}:${section.line}`
    if (first !== undefined) {
      throw configError(`${where}: duplicate section [${section.name}] (first at line ${first})`, {path: this.label, line: section.line})
    }
    this.seen.set(section.name, section.line)
    if (section.name === 'system') {
      this.readEntries(section, SYSTEM_KEYS, this.systemValues)
    } else if (section.name === 'zookeeper') {
      this.readEntries(section, ZOOKEEPER_KEYS, this.zookeeperValues)
    } else if (section.name === 'security') {
      this.security = readSecuritySection(section, this.label, this.baseDir)
    } else if (section.name.startsWith('topic=')) {
      this.addTopic(section, section.name.slice('topic='.length))
    } else {
      const [head, ...rest] = section.name.split(/[=:]/)
      const kind = suggest(head.trim(), SECTION_KINDS)
      const hint =
        kind === undefined
          ? ': expected [system], [zookeeper] or [topic=<name>]'
          : `; did you mean [${kind === 'topic' ? `topic=${rest.join('=').trim() || '<name>'}` : kind}]?`
      throw configError(`${where}: unknown section [${section.name}]${hint}`, {path: this.label, line: section.line, section: section.name})
    }
  }

  finish(source: {path: string; bytes: Buffer}): BrokerConfig {
    const system = {...defaultSystemConfig(), ...this.systemValues} as SystemConfig
    if (this.systemValues.dataLogPath === undefined) system.dataLogPath = system.dataPath
    const zookeeper = {...defaultZookeeperConfig(), ...this.zookeeperValues} as ZookeeperConfig
    const topics = this.topics.map((t) => buildTopic(system, t.pattern, t.explicit as Partial<TopicSettings>, t.groupFilters))
    this.warnings.unshift(...this.ignoredKeys.map(ignoredKeyWarning))
    const config: BrokerConfig = {
      system,
      zookeeper,
      topics,
      acceptAnyTopic: topics.length === 0,
      source,
      checksum: crc32(source.bytes),
      warnings: this.warnings,
      ...(this.security ? {security: this.security} : {}),
    }
    checkPartitionCounts(config, (section) => `${this.label}:${this.seen.get(section) ?? 1}: `, 'raise maxPartitions or lower numPartitions')
    return config
  }

  private addTopic(section: IniSection, pattern: string): void {
    try {
      validateTopicPattern(pattern)
    } catch (error) {
      if (!isMetaError(error)) throw error
      throw configError(
        `${this.label}:${section.line}: [${section.name}]: ${error.message}`,
        {path: this.label, line: section.line, section: section.name},
        error,
      )
    }
    const explicit: Record<string, unknown> = {}
    const groupFilters: Record<string, string> = {}
    this.readEntries(section, TOPIC_KEYS, explicit, groupFilters)
    this.topics.push({pattern, explicit, groupFilters})
    const filters = Object.entries(groupFilters).filter(([, filter]) => !filter.startsWith(FILTER_EXPRESSION_PREFIX))
    if (filters.length > 0) {
      const list = filters.map(([group, filter]) => `${GROUP_FILTER_PREFIX}${group}=${filter}`).join(', ')
      this.warnings.push(`[${section.name}] ${list}: server-side consumer filters are java classes that meta cannot run; these groups get every message`)
    }
    const ignored = Object.keys(explicit)
    if (pattern.includes('*') && ignored.length > 0) {
      const keys = TOPIC_KEYS.filter((s) => ignored.includes(s.field)).map((s) => s.key)
      this.warnings.push(
        `[${section.name}] ${keys.join(', ')}: topics matched by a wildcard section get the [system] values (as in MetaQ), so these are not used`,
      )
    }
  }

  private readEntries(section: IniSection, specs: readonly KeySpec[], into: Record<string, unknown>, groupFilters?: Record<string, string>): void {
    const lines = new Map<string, number>()
    for (const entry of section.entries) {
      const where = `${this.label}:${entry.line}`
      const details = {path: this.label, line: entry.line, section: section.name, key: entry.key, value: entry.value}
      const first = lines.get(entry.key)
      if (first !== undefined) throw configError(`${where}: [${section.name}] key ${quote(entry.key)} appears twice (first at line ${first})`, details)
      lines.set(entry.key, entry.line)
      if (groupFilters !== undefined && entry.key.startsWith(GROUP_FILTER_PREFIX)) {
        this.readGroupFilter(section, entry.key, entry.value, where, details, groupFilters)
        continue
      }
      const spec = specs.find((s) => s.key === entry.key)
      if (spec === undefined) throw configError(`${where}: ${this.unknownKeyMessage(section.name, entry.key, specs)}`, details)
      try {
        const value = parseValue(spec, entry.value, this.baseDir)
        if (value !== undefined) into[spec.field] = value
      } catch (error) {
        if (!(error instanceof ValueError)) throw error
        throw configError(`${where}: [${section.name}] ${entry.key} = ${quote(entry.value)}: ${error.message}`, details)
      }
      if ((spec.use === 'compat' || spec.use === 'pending') && !this.ignoredKeys.includes(spec)) this.ignoredKeys.push(spec)
    }
  }

  private readGroupFilter(
    section: IniSection,
    key: string,
    value: string,
    where: string,
    details: Record<string, unknown>,
    groupFilters: Record<string, string>,
  ): void {
    const group = key.slice(GROUP_FILTER_PREFIX.length)
    try {
      validateGroupName(group)
    } catch (error) {
      if (!isMetaError(error)) throw error
      throw configError(`${where}: [${section.name}] ${key}: ${error.message}`, details, error)
    }
    if (value.startsWith(FILTER_EXPRESSION_PREFIX)) {
      try {
        parseFilter(value.slice(FILTER_EXPRESSION_PREFIX.length))
      } catch (error) {
        if (!isMetaError(error)) throw error
        throw configError(`${where}: [${section.name}] ${key}: ${error.message}`, details, error)
      }
    } else if (!/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/.test(value)) {
      throw configError(
        `${where}: [${section.name}] ${key} = ${quote(value)}: expected a java class name such as "com.example.MyFilter" or a filter expression such as "expr:TagA || TagB"`,
        details,
      )
    }
    groupFilters[group] = value
  }

  private unknownKeyMessage(sectionName: string, key: string, specs: readonly KeySpec[]): string {
    const section = `[${sectionName}]`
    if (specs !== SYSTEM_KEYS && SYSTEM_KEYS.some((s) => s.key === key)) {
      return `unknown key ${quote(key)} in ${section}; ${quote(key)} belongs in [system]`
    }
    if (specs !== ZOOKEEPER_KEYS && ZOOKEEPER_KEYS.some((s) => s.key === key)) {
      return `unknown key ${quote(key)} in ${section}; ${quote(key)} belongs in [zookeeper]`
    }
    const best = suggest(
      key,
      specs.map((s) => s.key),
    )
    return `unknown key ${quote(key)} in ${section}${best === undefined ? '' : `; did you mean ${quote(best)}?`}`
  }
}
