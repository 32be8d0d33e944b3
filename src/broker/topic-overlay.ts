/**
 * The topic overlay: what `meta topic create|alter` set on a running broker, kept on top of
 * its server.ini so it survives a restart and a reload:
 *
 *   <dataPath>/__meta_state/topic-overlay.json
 *   {"version": 1, "topics": {"orders": {"numPartitions": "8", "unflushThreshold": "100"}}}
 *
 * Values are server.ini text and are validated by the server.ini parser itself (the same
 * errors as a `[topic=…]` line). Applying the overlay gives each topic a `[topic=<name>]`
 * section whose keys are the file's section (if any) with the overlay's keys over it: the
 * overlay wins key by key, also over a reloaded server.ini. A versioned state file, written as
 * closed-partitions.json is (durable/state-file.ts: temp file, fdatasync, rename, directory fsync).
 */
import {join} from 'node:path'
import {isMetaError, MetaError} from '../protocol/errors.js'
import {STATE_DIR_NAME, TOPIC_OVERLAY_FILE_NAME} from '../storage/layout.js'
import {readState, writeState} from '../storage/closed-partitions.js'
import {parseStateText, StateFileError, type StateFormat} from '../durable/state-file.js'
import {formatValue, parseServerIni, TOPIC_KEYS, type BrokerConfig, type TopicConfig, type TopicSettings} from './config/index.js'

/** Topic → server.ini `[topic=…]` key → value text. */
export type TopicOverlay = Map<string, Record<string, string>>

const OVERLAY_FORMAT: StateFormat<TopicOverlay> = {
  version: 1,
  shape: '"topics": {…}',
  parse(document) {
    const topics = document.topics
    if (typeof topics !== 'object' || topics === null) throw new Error('expected {"version": 1, "topics": {…}}')
    const overlay: TopicOverlay = new Map()
    for (const [topic, settings] of Object.entries(topics)) {
      if (typeof settings !== 'object' || settings === null || !Object.values(settings).every((v) => typeof v === 'string')) {
        throw new Error(`topic "${topic}": expected an object of server.ini keys and string values`)
      }
      overlay.set(topic, {...(settings as Record<string, string>)})
    }
    return overlay
  },
}

function topicOverlayPath(dataPath: string): string {
  return join(dataPath, STATE_DIR_NAME, TOPIC_OVERLAY_FILE_NAME)
}

/**
 * meta's stats item answering the overlay in force, as the file holds it (raw JSON, no
 * STATS/END wrapper, like `config`): an asynchronous slave applies it with its master's
 * server.ini. Served by every broker that lists `topic_admin true` in meta-capabilities.
 */
export const TOPIC_OVERLAY_ITEM = 'meta-topic-overlay'

/** Read the overlay; empty when there is none. Throws STORAGE_CORRUPT naming the file when it is not ours. */
export function loadTopicOverlay(dataPath: string): TopicOverlay {
  return readState(topicOverlayPath(dataPath), OVERLAY_FORMAT, 'a topic overlay file', 'removing drops the topics created online') ?? new Map()
}

/** The overlay in `text` (the file's JSON, as a master sends it); `bad(why)` is thrown when it is not one. */
export function parseTopicOverlay(text: string, bad: (why: string) => Error): TopicOverlay {
  try {
    return parseStateText('topic overlay', text, OVERLAY_FORMAT).value
  } catch (error) {
    if (error instanceof StateFileError) throw bad(error.why)
    throw error
  }
}

/** The overlay as the file holds it (topics sorted): `{"version": 1, "topics": {…}}`. */
export function topicOverlayJson(overlay: TopicOverlay): {version: number; topics: Record<string, Record<string, string>>} {
  return {version: OVERLAY_FORMAT.version, ...overlayBody(overlay)}
}

function overlayBody(overlay: TopicOverlay): {topics: Record<string, Record<string, string>>} {
  const topics: Record<string, Record<string, string>> = {}
  for (const topic of [...overlay.keys()].sort()) topics[topic] = overlay.get(topic)!
  return {topics}
}

/** Replace the overlay file (atomically and durably). */
export async function saveTopicOverlay(dataPath: string, overlay: TopicOverlay): Promise<void> {
  await writeState(topicOverlayPath(dataPath), OVERLAY_FORMAT, overlayBody(overlay))
}

/**
 * The typed settings of one overlay section, parsed by the server.ini parser (so the keys,
 * ranges and messages are server.ini's). Relative paths resolve against `configPath`'s
 * directory. Throws CONFIG_INVALID naming the key, the value and what was expected.
 */
export function parseTopicSettings(topic: string, settings: Record<string, string>, configPath?: string): Partial<TopicSettings> {
  const lines = Object.entries(settings).map(([key, value]) => `${key}=${value}`)
  for (const line of lines) {
    if (/[\r\n]/.test(line)) throw new MetaError('CONFIG_INVALID', `setting ${JSON.stringify(line)}: expected key=value on one line`)
  }
  try {
    const parsed = parseServerIni(`[topic=${topic}]\n${lines.join('\n')}\n`, {path: configPath})
    return {...parsed.topics[0]!.explicit}
  } catch (error) {
    if (!isMetaError(error, 'CONFIG_INVALID')) throw error
    // Drop the "<file>:<line>: " prefix: the text was built here, not read from that file.
    throw new MetaError('CONFIG_INVALID', error.message.replace(/^.*?:\d+: /, ''), {cause: error})
  }
}

/**
 * `config` with the overlay on top: each overlay topic gets a `[topic=<name>]` section holding
 * the file's keys with the overlay's over them. `acceptAnyTopic` stays the file's (an overlay
 * section does not turn off zero-config mode). Throws CONFIG_INVALID for a value the parser refuses.
 */
export function applyTopicOverlay(config: BrokerConfig, overlay: TopicOverlay): BrokerConfig {
  if (overlay.size === 0) return config
  const topics = config.topics.map((t) => ({...t}))
  for (const [topic, settings] of overlay) {
    const explicit = parseTopicSettings(topic, settings, config.source?.path)
    const index = topics.findIndex((t) => t.pattern === topic)
    const merged = {...(index >= 0 ? topics[index]!.explicit : {}), ...explicit}
    const section = topicSection(config, topic, merged, index >= 0 ? topics[index]!.groupFilters : {})
    if (index >= 0) topics[index] = section
    else topics.push(section)
  }
  return {...config, topics, warnings: [...config.warnings]}
}

/** A topic's settings as server.ini text (key → value), for replies and `meta topic export`. */
export function settingsText(settings: Partial<TopicSettings>): Record<string, string> {
  const text: Record<string, string> = {}
  const values = settings as Record<string, unknown>
  for (const spec of TOPIC_KEYS) if (values[spec.field] !== undefined) text[spec.key] = formatValue(spec, values[spec.field])
  return text
}

function topicSection(config: BrokerConfig, pattern: string, explicit: Partial<TopicSettings>, groupFilters: Record<string, string>): TopicConfig {
  const system = config.system as unknown as Record<string, unknown>
  const inherited: Record<string, unknown> = {}
  for (const spec of TOPIC_KEYS) inherited[spec.field] = system[spec.field]
  return {pattern, ...(inherited as unknown as TopicSettings), ...explicit, groupFilters: {...groupFilters}, explicit: {...explicit}}
}
