/**
 * Topic and group names: what a name may contain.
 *
 * A name travels as one token of MetaQ's space-separated text protocol, becomes a directory name
 * (`<dataPath>/<topic>-<partition>`), a ZooKeeper node (`<root>/brokers/topics/<topic>`,
 * `<root>/consumers/<group>`) and a key in offset stores. So a name is printable ASCII
 * (0x21..0x7e): no space, no control character, nothing that could leave a directory (`/`, `\`, a
 * name that is `.` or contains `..`). MetaQ itself only forbids spaces
 * (docs/configuration.md#names); these rules are stricter only where a looser name would be unsafe
 * on disk or in ZooKeeper.
 *
 * `*` is a wildcard that only a `[topic=<pattern>]` section of server.ini may use
 * ({@link validateTopicPattern}); a real topic never contains it.
 */
import {MetaError} from './errors.js'

/**
 * Longest topic name. 249 (Kafka's limit, for the same reason) rather than 255: the partition
 * directory is `<topic>-<partition>`, and a file name may have at most 255 bytes.
 */
export const MAX_TOPIC_NAME_LENGTH = 249
/** Longest consumer-group name. */
export const MAX_GROUP_NAME_LENGTH = 255

type NameKind = 'topic' | 'group' | 'topic pattern'

/** Why `name` is not acceptable, or undefined when it is. */
function nameProblem(name: string, kind: NameKind, maxLength: number, allowStar: boolean): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'expected a non-empty name'
  if (name.length > maxLength) return `expected at most ${maxLength} characters, got ${name.length}`
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i)
    if (c === 0x20) return 'must not contain a space'
    if (c < 0x20 || c === 0x7f) return `must not contain control character ${describeCode(c)}`
    if (c > 0x7e) return `must be printable ascii, got ${describeCode(c)}`
    if (c === 0x2f) return 'must not contain "/"'
    if (c === 0x5c) return 'must not contain a backslash'
    if (c === 0x2a && !allowStar) {
      return kind === 'topic' ? 'must not contain "*" (a wildcard is only valid in a [topic=…] section)' : 'must not contain "*"'
    }
  }
  if (name === '.') return 'must not be "."'
  if (name.includes('..')) return 'must not contain ".."'
  return undefined
}

function describeCode(code: number): string {
  return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`
}

function fail(kind: NameKind, name: string, problem: string): never {
  throw new MetaError('INVALID_ARGUMENT', `invalid ${kind} ${JSON.stringify(name)}: ${problem}`, {
    details: {[kind === 'topic pattern' ? 'pattern' : kind]: name},
  })
}

/**
 * Throws `INVALID_ARGUMENT` unless `name` is a usable topic name: 1..249 printable ASCII
 * characters, none of space, `/`, `\` or `*`, and neither `.` nor containing `..`.
 */
export function validateTopicName(name: string): void {
  const problem = nameProblem(name, 'topic', MAX_TOPIC_NAME_LENGTH, false)
  if (problem !== undefined) fail('topic', name, problem)
}

/** Whether {@link validateTopicName} would accept `name`. */
export function isValidTopicName(name: string): boolean {
  return nameProblem(name, 'topic', MAX_TOPIC_NAME_LENGTH, false) === undefined
}

/**
 * Throws `INVALID_ARGUMENT` unless `pattern` is a usable `[topic=<pattern>]` section name: a
 * topic name in which `*` (any run of characters, possibly empty) is also allowed.
 */
export function validateTopicPattern(pattern: string): void {
  const problem = nameProblem(pattern, 'topic pattern', MAX_TOPIC_NAME_LENGTH, true)
  if (problem !== undefined) fail('topic pattern', pattern, problem)
}

/**
 * Throws `INVALID_ARGUMENT` unless `name` is a usable consumer-group name: 1..255 printable
 * ASCII characters, none of space, `/`, `\` or `*`, and neither `.` nor containing `..`.
 */
export function validateGroupName(name: string): void {
  const problem = nameProblem(name, 'group', MAX_GROUP_NAME_LENGTH, false)
  if (problem !== undefined) fail('group', name, problem)
}

/** Whether {@link validateGroupName} would accept `name`. */
export function isValidGroupName(name: string): boolean {
  return nameProblem(name, 'group', MAX_GROUP_NAME_LENGTH, false) === undefined
}

/** Whether topic pattern `pattern` (`*` = any run of characters) matches the whole of `topic`. */
export function topicPatternMatches(pattern: string, topic: string): boolean {
  if (!pattern.includes('*')) return pattern === topic
  const parts = pattern.split('*')
  const first = parts[0]
  const last = parts[parts.length - 1]
  if (topic.length < first.length + last.length) return false
  if (!topic.startsWith(first) || !topic.endsWith(last)) return false
  // Greedy left-to-right placement of the middle literals is exact for `*`-only globs.
  let position = first.length
  const end = topic.length - last.length
  for (let i = 1; i < parts.length - 1; i++) {
    const index = topic.indexOf(parts[i], position)
    if (index < 0 || index + parts[i].length > end) return false
    position = index + parts[i].length
  }
  return true
}
