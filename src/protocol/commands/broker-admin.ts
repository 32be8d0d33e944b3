/**
 * Broker administration — meta extensions (docs/protocol.md), the wire form of MetaQ's JMX
 * operations `reload`, `closePartitions` and `openPartitions`
 * (docs/protocol.md#broker-administration):
 *
 *   config-reload <mode> <opaque>\r\n
 *       mode `apply`: re-read the broker's server.ini and apply it; `check`: only say what
 *       would change. → 200 + JSON ReloadReport; 400 + the error (file, line, key) when the
 *       file is refused (nothing changes); 500 when there is no file to read
 *   partitions-close <topic> <start> <end> <opaque>\r\n
 *   partitions-open <topic> <start> <end> <opaque>\r\n
 *       partitions start..end of the topic (both -1: every partition, resp. every closed one)
 *       → 200 + JSON PartitionsStateReply; 400 for a topic the broker does not accept or a
 *       range outside its partitions
 *
 * MetaQ brokers do not know these commands (a MetaQ client never sends them).
 */
import type {OutputBuffer} from '../output-buffer.js'
import {badToken, intField, nameField, opaqueField, tokenCount} from '../tokens.js'
import {arrayOf, booleanOf, integerOf, member, nullableStringOf, optional, parseJsonBody, recordOf, stringOf, type JsonField} from '../json-body.js'

export const RELOAD_MODES = ['apply', 'check'] as const
export type ReloadMode = (typeof RELOAD_MODES)[number]

export interface ConfigReloadCommand {
  readonly type: 'config-reload'
  mode: ReloadMode
  opaque: number
}

export interface PartitionsStateCommand {
  readonly type: 'partitions-close' | 'partitions-open'
  topic: string
  /** -1 with end -1: the whole topic. */
  start: number
  end: number
  opaque: number
}

/** One difference a reload found between the running config and the file (broker/config/reload.ts). */
export interface ReloadChange {
  /** `system`, `zookeeper` or `topic=<pattern>`. */
  section: string
  /** The INI key (`numPartitions`), or `(section)` when a whole topic section was added or removed. */
  key: string
  /** server.ini text of the value before and after; null when absent. */
  before: string | null
  after: string | null
  /** False: the running broker keeps `before` until it restarts. */
  applied: boolean
  /** What it means for the running broker (partitions added, data kept, …). */
  note?: string
}

/** The reply to `config-reload`. */
export interface ReloadReport {
  /** The file read (absolute path), or a label for text given directly. */
  source: string
  /** False for `check`. */
  applied: boolean
  /** False when the file says what the broker already runs with. */
  changed: boolean
  checksumBefore: number
  checksumAfter: number
  topicsAdded: string[]
  topicsRemoved: string[]
  changes: ReloadChange[]
  /** Operator notes (ignored keys, filters), as logged at startup. */
  warnings: string[]
  /** The topic overlay kept on top of the file (topics created or changed online), by topic: server.ini key → value. */
  overlay?: Record<string, Record<string, string>>
}

/** The reply to `partitions-close` / `partitions-open`. */
export interface PartitionsStateReply {
  topic: string
  brokerId: number
  /** Partitions whose state this request changed. */
  changed: number[]
  /** Every closed partition of the topic afterwards. */
  closed: number[]
}

export function parseConfigReload(tokens: string[]): {frame: ConfigReloadCommand; bodyLength: number} {
  tokenCount('config-reload', tokens, [3])
  const mode = tokens[1] as ReloadMode
  if (!RELOAD_MODES.includes(mode)) throw badToken('config-reload', 'mode', tokens[1], RELOAD_MODES.join(' or '))
  return {frame: {type: 'config-reload', mode, opaque: opaqueField('config-reload', tokens[2])}, bodyLength: 0}
}

export function encodeConfigReload(out: OutputBuffer, mode: ReloadMode, opaque: number): void {
  out.writeAscii(`config-reload ${mode} ${opaque}\r\n`)
}

function parsePartitionsState(type: PartitionsStateCommand['type']) {
  return (tokens: string[]): {frame: PartitionsStateCommand; bodyLength: number} => {
    tokenCount(type, tokens, [5])
    return {
      frame: {
        type,
        topic: nameField(type, 'topic', tokens[1]),
        start: intField(type, 'start', tokens[2]),
        end: intField(type, 'end', tokens[3]),
        opaque: opaqueField(type, tokens[4]),
      },
      bodyLength: 0,
    }
  }
}

export const parsePartitionsClose = parsePartitionsState('partitions-close')
export const parsePartitionsOpen = parsePartitionsState('partitions-open')

export function encodePartitionsState(out: OutputBuffer, cmd: Omit<PartitionsStateCommand, 'opaque'>, opaque: number): void {
  out.writeAscii(`${cmd.type} ${cmd.topic} ${cmd.start} ${cmd.end} ${opaque}\r\n`)
}

/** The config-reload reply body; DECODE_ERROR naming the field when it is not one. */
export function decodeReloadReport(body: Buffer | string): ReloadReport {
  const root = parseJsonBody(body, 'config-reload reply')
  return {
    source: stringOf(member(root, 'source')),
    applied: booleanOf(member(root, 'applied')),
    changed: booleanOf(member(root, 'changed')),
    checksumBefore: integerOf(member(root, 'checksumBefore')),
    checksumAfter: integerOf(member(root, 'checksumAfter')),
    topicsAdded: arrayOf(member(root, 'topicsAdded'), stringOf),
    topicsRemoved: arrayOf(member(root, 'topicsRemoved'), stringOf),
    changes: arrayOf(member(root, 'changes'), (c) => {
      const note = optional(member(c, 'note'), stringOf)
      return {
        section: stringOf(member(c, 'section')),
        key: stringOf(member(c, 'key')),
        before: nullableStringOf(member(c, 'before')),
        after: nullableStringOf(member(c, 'after')),
        applied: booleanOf(member(c, 'applied')),
        ...(note === undefined ? {} : {note}),
      }
    }),
    warnings: arrayOf(member(root, 'warnings'), stringOf),
    ...overlayOf(root),
  }
}

/** The reply's optional topic overlay (topic → server.ini key → value). */
function overlayOf(root: JsonField): Pick<ReloadReport, 'overlay'> {
  const overlay = optional(member(root, 'overlay'), (o) => recordOf(o, (settings) => recordOf(settings, stringOf)))
  return overlay === undefined ? {} : {overlay}
}

/** The partitions-close / partitions-open reply body; DECODE_ERROR naming the field when it is not one. */
export function decodePartitionsState(body: Buffer | string): PartitionsStateReply {
  const root = parseJsonBody(body, 'partitions-state reply')
  const partition = (f: Parameters<typeof integerOf>[0]) => integerOf(f, 0)
  return {
    topic: stringOf(member(root, 'topic')),
    brokerId: integerOf(member(root, 'brokerId')),
    changed: arrayOf(member(root, 'changed'), partition),
    closed: arrayOf(member(root, 'closed'), partition),
  }
}
