/**
 * The JSON envelope: one object per line, written by `meta tail -J` and read by
 * `meta send -J`, so `meta tail -J a | meta send -J -t b` copies a topic exactly.
 *
 *   {"topic":"orders","partition":0,"offset":0,"id":"7177218","attribute":"customer-42",
 *    "timestamp":1700000000000,"payload":"hello","encoding":"utf8","size":5}
 *
 * - id: a string (64-bit, beyond JSON's exact integers); timestamp: ms since the epoch.
 * - attribute: MetaQ's one string attribute, or null when the message has none.
 * - payload: the bytes as text when they are valid UTF-8 (`"encoding":"utf8"`), else base64
 *   (`"encoding":"base64"`); size is the payload's length in bytes.
 *
 * Reading, only `payload` matters: `topic`, `partition` and `attribute` are used when
 * present, `encoding` defaults to utf8, and the other fields are ignored. A payload that is
 * not a string (an object, array, number, boolean) is sent as its JSON text, so hand-written
 * lines like `{"payload":{"a":1}}` work; null sends an empty payload.
 */
import {isUtf8} from 'node:buffer'
import type {RecordCursor} from '../client/fetched-batch.js'
import type {Message} from '../client/index.js'
import {MetaError} from '../protocol/errors.js'
import {ByteWriter} from './byte-writer.js'

interface Envelope {
  topic: string
  partition: number
  offset: number
  id: string
  attribute: string | null
  timestamp: number
  payload: string
  encoding: 'utf8' | 'base64'
  size: number
}

/** What a line of envelope input asks to send. */
interface EnvelopeInput {
  topic?: string
  partition?: number
  attribute?: string
  payload: Buffer
}

export function toEnvelope(m: Message): Envelope {
  const utf8 = isUtf8(m.data)
  return {
    topic: m.topic,
    partition: m.partition,
    offset: m.offset,
    id: m.id.toString(),
    attribute: m.attribute ?? null,
    timestamp: m.timestampMs,
    payload: m.data.toString(utf8 ? 'utf8' : 'base64'),
    encoding: utf8 ? 'utf8' : 'base64',
    size: m.data.length,
  }
}

/**
 * The envelopes of every record `records` has left, as JSON lines (each ends with "\n") in
 * one Buffer: the same text as `JSON.stringify(toEnvelope(m))`, built from the fetched records
 * without an object or a string per message. A UTF-8 payload that needs no JSON escaping (the
 * common case) is copied as bytes.
 */
export function encodeEnvelopes(records: RecordCursor): Buffer {
  const w = new ByteWriter(64 + records.count * (200 + records.topic.length) + Math.ceil(records.dataBytesMax * 1.4))
  const head = new EnvelopeHead()
  while (records.next()) writeEnvelope(w, records, head)
  return w.result()
}

/** The envelope of the record `records` is at (meta tail -u). */
export function encodeEnvelope(records: RecordCursor): Buffer {
  const w = new ByteWriter(264 + records.topic.length + Math.ceil((records.dataEnd - records.dataStart) * 1.4))
  writeEnvelope(w, records, new EnvelopeHead())
  return w.result()
}

/** `{"topic":…,"partition":…,"offset":` as bytes, made again only when the topic or partition changes. */
class EnvelopeHead {
  private topic: string | undefined
  private partition = -1
  private bytes = Buffer.alloc(0)

  of(r: RecordCursor): Buffer {
    if (r.topic !== this.topic || r.partition !== this.partition) {
      this.topic = r.topic
      this.partition = r.partition
      this.bytes = Buffer.from(`{"topic":${JSON.stringify(r.topic)},"partition":${r.partition},"offset":`)
    }
    return this.bytes
  }
}

function writeEnvelope(w: ByteWriter, r: RecordCursor, head: EnvelopeHead): void {
  w.literal(head.of(r))
  w.uint(r.offset)
  w.literal(ID)
  w.messageId(r)
  const attribute = r.attribute()
  if (attribute === undefined) {
    w.literal(NO_ATTRIBUTE)
  } else {
    w.literal(ATTRIBUTE)
    w.utf8(JSON.stringify(attribute))
    w.literal(TIMESTAMP)
  }
  w.uint(r.timestampMs())
  w.literal(PAYLOAD)
  // Printable ASCII with nothing to escape (the common case): copied as is, no view made.
  if (w.jsonSafeAsciiData(r)) {
    w.literal(UTF8_END_SIZE)
  } else {
    const data = Buffer.from(r.body.buffer, r.body.byteOffset + r.dataStart, r.dataEnd - r.dataStart)
    if (!isUtf8(data)) {
      w.ascii(`${data.toString('base64')}","encoding":"base64"`)
    } else if (jsonSafe(data)) {
      w.bytes(data)
      w.literal(UTF8_END)
    } else {
      const text = JSON.stringify(data.toString('utf8'))
      w.utf8(text.slice(1))
      w.ascii(',"encoding":"utf8"')
    }
    w.literal(SIZE)
  }
  w.uint(r.dataEnd - r.dataStart)
  w.literal(LINE_END)
}

const ID = Buffer.from(',"id":"')
const ATTRIBUTE = Buffer.from('","attribute":')
const TIMESTAMP = Buffer.from(',"timestamp":')
/** ATTRIBUTE, null and TIMESTAMP in one. */
const NO_ATTRIBUTE = Buffer.from('","attribute":null,"timestamp":')
const PAYLOAD = Buffer.from(',"payload":"')
const UTF8_END = Buffer.from('","encoding":"utf8"')
const SIZE = Buffer.from(',"size":')
/** UTF8_END and SIZE in one. */
const UTF8_END_SIZE = Buffer.from('","encoding":"utf8","size":')
const LINE_END = Buffer.from('}\n')

/** True when no byte needs escaping inside a JSON string (quote, backslash, control characters). */
function jsonSafe(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]
    if (c < 0x20 || c === 0x22 || c === 0x5c) return false
  }
  return true
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/

/** Parse one line of envelope input. Throws INVALID_ARGUMENT saying what is wrong. */
export function decodeEnvelope(line: Buffer | string): EnvelopeInput {
  let value: unknown
  try {
    value = JSON.parse(typeof line === 'string' ? line : line.toString('utf8'))
  } catch (error) {
    throw MetaError.invalidArgument(`invalid JSON envelope: ${(error as Error).message}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw MetaError.invalidArgument('invalid JSON envelope: expected an object like {"topic":"t","payload":"…"}')
  }
  const e = value as Record<string, unknown>
  const input: EnvelopeInput = {payload: decodePayload(e.payload, e.encoding)}
  if (e.topic !== undefined && e.topic !== null) {
    if (typeof e.topic !== 'string') throw MetaError.invalidArgument(`invalid envelope topic ${JSON.stringify(e.topic)}: expected a string`)
    input.topic = e.topic
  }
  if (e.partition !== undefined && e.partition !== null) {
    if (typeof e.partition !== 'number' || !Number.isInteger(e.partition) || e.partition < 0) {
      throw MetaError.invalidArgument(`invalid envelope partition ${JSON.stringify(e.partition)}: expected a non-negative integer`)
    }
    input.partition = e.partition
  }
  if (e.attribute !== undefined && e.attribute !== null) {
    if (typeof e.attribute !== 'string') {
      throw MetaError.invalidArgument(`invalid envelope attribute ${JSON.stringify(e.attribute)}: expected a string or null`)
    }
    input.attribute = e.attribute
  }
  return input
}

function decodePayload(payload: unknown, encoding: unknown): Buffer {
  if (encoding !== undefined && encoding !== null && encoding !== 'utf8' && encoding !== 'base64') {
    throw MetaError.invalidArgument(`invalid envelope encoding ${JSON.stringify(encoding)}: expected "utf8" or "base64"`)
  }
  if (payload === undefined || payload === null) return Buffer.alloc(0)
  if (encoding === 'base64') {
    if (typeof payload !== 'string' || !BASE64.test(payload)) {
      throw MetaError.invalidArgument('invalid envelope payload: "encoding" is "base64" but the payload is not base64 text')
    }
    return Buffer.from(payload, 'base64')
  }
  return Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload), 'utf8')
}
