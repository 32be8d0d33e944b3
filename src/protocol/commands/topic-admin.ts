/**
 * Topic administration — a meta extension (docs/protocol.md), listed as `topic_admin true` in
 * `stats meta-capabilities`:
 *
 *   topic-admin <action> <topic> <bodyLength> <opaque>\r\n<body>
 *       action  `create`, `alter`, `delete` or `show` (topic `-`: every topic in the overlay)
 *       body    JSON TopicAdminRequest: `settings` (server.ini `[topic=…]` key → value text,
 *               validated as server.ini validates them) and, for delete, `execute` (false: a
 *               dry run that only says what would be removed)
 *   → 200 + JSON TopicAdminReply; 400 INVALID_ARGUMENT/CONFIG_INVALID naming the value and
 *     what was expected; 404 NOT_FOUND for a topic the broker does not have; 403
 *     SLAVE_READ_ONLY for create, alter and delete on a slave (it follows its master's topics)
 *
 * What is created or changed online is kept by the broker as an overlay of its server.ini
 * (broker/topic-overlay.ts). MetaQ brokers do not know this command.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {badToken, lengthField, nameField, opaqueField, tokenCount} from '../tokens.js'

export const TOPIC_ADMIN_ACTIONS = ['create', 'alter', 'delete', 'show'] as const
export type TopicAdminAction = (typeof TOPIC_ADMIN_ACTIONS)[number]

/** The topic token of a `show` of the whole overlay. */
export const ALL_TOPICS_TOKEN = '-'

/** Longest topic-admin body the broker reads (bytes): settings are a few short keys. */
export const TOPIC_ADMIN_MAX_BODY_BYTES = 64 * 1024

export interface TopicAdminCommand {
  readonly type: 'topic-admin'
  action: TopicAdminAction
  topic: string
  opaque: number
  /** JSON TopicAdminRequest. */
  body: Buffer
}

export interface TopicAdminRequest {
  /** server.ini `[topic=…]` keys (`numPartitions`, `unflushThreshold`, …) → value as written in server.ini. */
  settings?: Record<string, string>
  /** delete: remove (true) or only report (false, the default). */
  execute?: boolean
}

/** The reply to `topic-admin`. */
export interface TopicAdminReply {
  action: TopicAdminAction
  topic: string
  brokerId: number
  /** False for a dry run (delete without execute, show). */
  applied: boolean
  /** The topic's overlay section afterwards (server.ini key → value text); null when it has none. */
  overlay: Record<string, string> | null
  /** Every overlay section afterwards (show of `-`), by topic. */
  overlays?: Record<string, Record<string, string>>
  /** show of `-`: the broker's effective configuration as a server.ini, the overlay folded in. */
  serverIni?: string
  /** The topic's effective settings afterwards (server.ini key → value text); null once deleted. */
  effective: Record<string, string> | null
  /** delete: what is (or would be) removed. */
  removed?: {
    /** The topic's partition count (numPartitions), whether or not each partition has files. */
    partitionCount: number
    /** The partitions with files on this broker. */
    partitions: number[]
    messages: number
    bytes: number
    closedPartitions: number[]
    groups: string[]
    /** Cluster mode: groups whose offsets for the topic on this broker were (or would be) removed from ZooKeeper. */
    zkGroups?: string[]
  }
  /** Notes for the operator (a topic still configured in server.ini, partitions added, …). */
  notes: string[]
}

const EMPTY = Buffer.alloc(0)

export function parseTopicAdmin(tokens: string[]): {frame: TopicAdminCommand; bodyLength: number} {
  tokenCount('topic-admin', tokens, [5])
  const action = tokens[1] as TopicAdminAction
  if (!TOPIC_ADMIN_ACTIONS.includes(action)) throw badToken('topic-admin', 'action', tokens[1], TOPIC_ADMIN_ACTIONS.join(', '))
  const bodyLength = lengthField('topic-admin', 'length', tokens[3])
  if (bodyLength > TOPIC_ADMIN_MAX_BODY_BYTES) throw badToken('topic-admin', 'length', tokens[3], `at most ${TOPIC_ADMIN_MAX_BODY_BYTES} bytes`)
  return {
    frame: {type: 'topic-admin', action, topic: nameField('topic-admin', 'topic', tokens[2]), opaque: opaqueField('topic-admin', tokens[4]), body: EMPTY},
    bodyLength,
  }
}

export function encodeTopicAdmin(out: OutputBuffer, action: TopicAdminAction, topic: string, request: TopicAdminRequest, opaque: number): void {
  const body = Buffer.from(JSON.stringify(request), 'utf8')
  out.writeAscii(`topic-admin ${action} ${topic} ${body.length} ${opaque}\r\n`)
  out.writeBytes(body)
}
