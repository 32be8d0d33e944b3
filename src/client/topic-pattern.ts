/**
 * Topic patterns: a consumer over every topic whose name matches a glob (`logs-*`, `*` for any
 * run of characters, as in server.ini's `[topic=…]` sections) or a regular expression (whole
 * name), and the topics that exist now — registered for consumers in ZooKeeper, or held by a
 * standalone broker (`stats topics`).
 *
 *   const pattern = compileTopicPattern({glob: 'logs-*'})
 *   const topics = await matchingTopics(topology, pattern)
 */
import {MetaError} from '../protocol/errors.js'
import {topicPatternMatches} from '../protocol/names.js'
import {AdminClient} from './admin.js'
import {ClusterTopology} from './cluster-topology.js'
import type {Topology} from './topology.js'

/** Longest pattern accepted (characters): a topic name is at most 255. */
export const TOPIC_PATTERN_MAX_CHARS = 1024

export interface TopicPattern {
  /** As given: the glob, or `/regex/`. */
  readonly text: string
  matches(topic: string): boolean
}

/** A glob (`*` = any run of characters) or a regular expression that must match the whole name. Throws INVALID_ARGUMENT naming it. */
export function compileTopicPattern(spec: {glob: string} | {regex: string}): TopicPattern {
  const text = 'glob' in spec ? spec.glob : spec.regex
  if (text.length === 0 || text.length > TOPIC_PATTERN_MAX_CHARS) {
    throw MetaError.invalidArgument(`topic pattern "${text.slice(0, 64)}": expected 1 to ${TOPIC_PATTERN_MAX_CHARS} characters`)
  }
  if ('glob' in spec) {
    if (/[\s,]/.test(text)) throw MetaError.invalidArgument(`topic pattern "${text}": expected a glob without spaces or commas, e.g. "logs-*"`)
    return {text, matches: (topic) => topicPatternMatches(text, topic)}
  }
  let regex: RegExp
  try {
    regex = new RegExp(`^(?:${text})$`, 'u')
  } catch (error) {
    throw MetaError.invalidArgument(`--topic-pattern "${text}": expected a regular expression (${(error as Error).message})`)
  }
  return {text: `/${text}/`, matches: (topic) => regex.test(topic)}
}

/** The topics that exist and match one of `patterns`, sorted. */
export async function matchingTopics(topology: Topology, patterns: readonly TopicPattern[]): Promise<string[]> {
  const topics = await existingTopics(topology)
  return topics.filter((t) => patterns.some((p) => p.matches(t))).sort()
}

/** Every topic: registered for consumers in ZooKeeper, or held by the standalone broker. */
export async function existingTopics(topology: Topology): Promise<string[]> {
  if (topology instanceof ClusterTopology) {
    const session = await topology.session()
    return session.children(topology.paths.topicsSub())
  }
  const conn = await topology.connection(topology.brokerIds()[0] ?? 0)
  return (await new AdminClient(conn).topics()).map((t) => t.topic)
}
