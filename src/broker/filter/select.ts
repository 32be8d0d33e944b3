/**
 * Filtered gets: which filter applies to a get, and what part of a read slice it answers with.
 *
 * A get is filtered by the group's `group.<name>=expr:…` in the topic's section of server.ini
 * (the exact section, else the first wildcard section matching the topic, as topics resolve)
 * and by the expression the consumer sent on the get (docs/protocol.md#filtered-get); with
 * both, a message must match both.
 *
 * Nothing in the slice matches: `301` with the end of the whole records scanned (MetaQ's
 * 301-with-next-offset rule), so the consumer moves past them without receiving them.
 * Otherwise, with a filter the consumer sent (a meta client), one `value` carries every match
 * of the slice with its offset and where to continue (filteredValue). With only the group's
 * filter (any client, MetaQ's included, reading the plain form), the `value` is contiguous log
 * bytes from the requested offset, so every client's offset arithmetic holds: the run of
 * matching records the slice starts with (up to the first that does not match), or `301` with
 * the offset of the first match when the slice starts with records that do not (selectSlice).
 */
import {parseFilter} from '../../protocol/filter-expression.js'
import {MetaError} from '../../protocol/errors.js'
import {FLAG_HAS_ATTRIBUTE, RECORD_HEADER_BYTES} from '../../protocol/message-set.js'
import {int32At} from '../../protocol/output-buffer.js'
import {topicPatternMatches} from '../../protocol/names.js'
import {FILTER_EXPRESSION_PREFIX, type BrokerConfig} from '../config/index.js'
import {compileFilter, type FilterPredicate, type FilterSubject} from './evaluate.js'

/** Most compiled consumer-sent expressions kept (cleared when full). */
const MAX_CACHED_EXPRESSIONS = 256
/** Most (topic, group) lookups kept per configuration (cleared when full). */
const MAX_CACHED_GROUP_FILTERS = 10_000

const expressions = new Map<string, FilterPredicate | MetaError>()
const groupFilters = new WeakMap<BrokerConfig, Map<string, FilterPredicate | null>>()

/** Compile an expression, cached: many consumers send the same one on every get. */
function compileCached(source: string): FilterPredicate | MetaError {
  let compiled = expressions.get(source)
  if (compiled !== undefined) return compiled
  try {
    compiled = compileFilter(parseFilter(source))
  } catch (error) {
    if (!(error instanceof MetaError)) throw error
    compiled = error
  }
  if (expressions.size >= MAX_CACHED_EXPRESSIONS) expressions.clear()
  expressions.set(source, compiled)
  return compiled
}

/** The configured filter of (topic, group), undefined when none runs. */
function configuredFilter(config: BrokerConfig, topic: string, group: string): FilterPredicate | undefined {
  let cache = groupFilters.get(config)
  if (cache === undefined) groupFilters.set(config, (cache = new Map()))
  const key = `${topic}\n${group}`
  let found = cache.get(key)
  if (found === undefined) {
    const section =
      config.topics.find((t) => t.pattern === topic) ?? config.topics.find((t) => t.pattern.includes('*') && topicPatternMatches(t.pattern, topic))
    const value = section?.groupFilters[group]
    found = null
    if (value !== undefined && value.startsWith(FILTER_EXPRESSION_PREFIX)) {
      // Validated when the config was read, so this compiles.
      const compiled = compileCached(value.slice(FILTER_EXPRESSION_PREFIX.length))
      if (!(compiled instanceof MetaError)) found = compiled
    }
    if (cache.size >= MAX_CACHED_GROUP_FILTERS) cache.clear()
    cache.set(key, found)
  }
  return found ?? undefined
}

/**
 * The filter a get runs: undefined for an unfiltered get, a MetaError (INVALID_ARGUMENT, naming
 * the position) for an expression that does not parse.
 */
export function getFilter(config: BrokerConfig, topic: string, group: string, sent: string | undefined): FilterPredicate | MetaError | undefined {
  const configured = configuredFilter(config, topic, group)
  if (sent === undefined) return configured
  const compiled = compileCached(sent)
  if (compiled instanceof MetaError || configured === undefined) return compiled
  return (subject) => configured(subject) && compiled(subject)
}

/** What a filtered get answers for a read slice. */
type FilteredSlice =
  /** No whole record at the start: answer the slice as an unfiltered get would (the client grows its fetch size, or meets the bad record). */
  | {kind: 'raw'}
  /** `value` with bytes [0, end): records that all match. */
  | {kind: 'run'; end: number}
  /** `301` with offset + skip: nothing before it matches. */
  | {kind: 'skip'; skip: number}

/**
 * The record at `pos` as a filter sees it: `subject` gets its attribute and body, and the
 * result is where the next record starts; -1 (subject untouched) when no whole valid record
 * starts there: a partial record, a length outside 0..maxPayloadBytes, or an attribute
 * block longer than the payload.
 */
function readRecord(data: Buffer, pos: number, maxPayloadBytes: number, subject: FilterSubject): number {
  if (data.length - pos < RECORD_HEADER_BYTES) return -1
  const length = int32At(data, pos)
  if (length < 0 || length > maxPayloadBytes) return -1
  const next = pos + RECORD_HEADER_BYTES + length
  if (next > data.length) return -1
  const payload = pos + RECORD_HEADER_BYTES
  let bodyStart = payload
  let attribute: string | undefined
  if ((int32At(data, pos + 16) & FLAG_HAS_ATTRIBUTE) !== 0) {
    const attrLength = length >= 4 ? int32At(data, payload) : -1
    if (attrLength < 0 || 4 + attrLength > length) return -1
    attribute = data.toString('utf8', payload + 4, payload + 4 + attrLength)
    bodyStart = payload + 4 + attrLength
  }
  subject.attribute = attribute
  subject.body = data.subarray(bodyStart, next)
  return next
}

/**
 * Scan a slice of stored records (starting at a record boundary) with a filter. Reads the
 * length, flag and attribute of each record; stops at the first record whose length or
 * attribute block is invalid (as at a partial record), leaving it to the next get.
 */
export function selectSlice(data: Buffer, matches: FilterPredicate, maxPayloadBytes: number): FilteredSlice {
  let pos = 0
  let firstMatches: boolean | undefined
  const subject: FilterSubject = {attribute: undefined, body: data}
  for (;;) {
    const next = readRecord(data, pos, maxPayloadBytes, subject)
    if (next < 0) break
    const match = matches(subject)
    if (firstMatches === undefined) firstMatches = match
    else if (match !== firstMatches) break
    pos = next
  }
  if (firstMatches === undefined) return {kind: 'raw'}
  return firstMatches ? {kind: 'run', end: pos} : {kind: 'skip', skip: pos}
}

/**
 * The `value` body of a get that carries a filter (docs/protocol.md#filtered-get):
 *
 *   int64 BE  next     where the consumer continues: the end of the records scanned
 *   then, per matching record:
 *   int64 BE  offset   the record's offset in the partition log
 *   …         record   the stored record (20-byte header + payload), as in the log
 *
 * Every whole record of the slice is scanned (up to a record whose length or attribute block
 * is invalid), and matches are copied until the body would exceed `maxBodyBytes` (the first
 * always fits). Undefined when nothing in the slice matches (the get answers 301 `next`, as
 * a MetaQ broker does) or when the slice holds no whole record: then the body is `next` =
 * the requested offset, one entry at that offset, and the slice as it is (the client grows
 * its fetch size, or meets the bad record).
 */
export function filteredValue(
  data: Buffer,
  offset: number,
  matches: FilterPredicate,
  maxPayloadBytes: number,
  maxBodyBytes: number,
): {body: Buffer} | {next: number} {
  const runs: number[] = []
  let bodyBytes = 8
  let pos = 0
  const subject: FilterSubject = {attribute: undefined, body: data}
  for (;;) {
    const next = readRecord(data, pos, maxPayloadBytes, subject)
    if (next < 0) break
    if (matches(subject)) {
      if (runs.length > 0 && bodyBytes + 8 + next - pos > maxBodyBytes) break
      runs.push(pos, next)
      bodyBytes += 8 + next - pos
    }
    pos = next
  }
  if (pos === 0) {
    const body = Buffer.allocUnsafe(16 + data.length)
    body.writeBigInt64BE(BigInt(offset), 0)
    body.writeBigInt64BE(BigInt(offset), 8)
    data.copy(body, 16)
    return {body}
  }
  if (runs.length === 0) return {next: offset + pos}
  const body = Buffer.allocUnsafe(bodyBytes)
  body.writeBigInt64BE(BigInt(offset + pos), 0)
  let at = 8
  for (let i = 0; i < runs.length; i += 2) {
    body.writeBigInt64BE(BigInt(offset + runs[i]), at)
    at += 8 + data.copy(body, at + 8, runs[i], runs[i + 1])
  }
  return {body}
}
