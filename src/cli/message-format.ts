/**
 * `meta tail -f` formats, kcat style: a format string is compiled once into a list of operations,
 * then a whole fetched batch is rendered into one Buffer (one stdout write per batch: into a pipe,
 * a write per line is about twenty times slower), straight from the fetched records (no message
 * objects).
 *
 * Tokens: %s payload, %S payload size in bytes, %t topic, %p partition, %o offset, %i message
 * id, %a attribute (empty when the message has none; %k is an alias for kcat habits),
 * %T timestamp in ms, %% a percent sign. Escapes: \n \t \r \0 \\ \xNN.
 */
import type {RecordCursor} from '../client/fetched-batch.js'
import {MetaError} from '../protocol/errors.js'
import {ByteWriter} from './byte-writer.js'
import {unescapeBytes} from './escapes.js'

export const DEFAULT_FORMAT = '%s\\n'

const Op = {
  Literal: 0,
  Payload: 1,
  Size: 2,
  Topic: 3,
  Partition: 4,
  Offset: 5,
  Id: 6,
  Attribute: 7,
  Timestamp: 8,
} as const
type Op = (typeof Op)[keyof typeof Op]

const TOKENS: Record<string, Op> = {
  s: Op.Payload,
  S: Op.Size,
  t: Op.Topic,
  p: Op.Partition,
  o: Op.Offset,
  i: Op.Id,
  a: Op.Attribute,
  k: Op.Attribute,
  T: Op.Timestamp,
}

interface Step {
  op: Op
  literal?: Buffer
}

export interface MessageFormatter {
  /** Render every record `records` has left into one Buffer. */
  format(records: RecordCursor): Buffer
  /** Render the record `records` is at. */
  formatCurrent(records: RecordCursor): Buffer
}

/** Compile a format; throws INVALID_ARGUMENT for an unknown token or escape. */
export function compileFormat(format: string): MessageFormatter {
  const steps: Step[] = []
  let literal = ''
  const flush = () => {
    if (literal === '') return
    const bytes = unescapeBytes(literal, 'format')
    const last = steps.at(-1)
    if (last?.op === Op.Literal) last.literal = Buffer.concat([last.literal!, bytes])
    else steps.push({op: Op.Literal, literal: bytes})
    literal = ''
  }
  for (let i = 0; i < format.length; i++) {
    const c = format[i]
    if (c === '\\') {
      literal += format.slice(i, i + 2)
      i += 1
      continue
    }
    if (c !== '%') {
      literal += c
      continue
    }
    const token = format[i + 1]
    i += 1
    if (token === '%') {
      literal += '%'
      continue
    }
    const op = token === undefined ? undefined : TOKENS[token]
    if (op === undefined) {
      const shown = token === undefined ? '%' : `%${token}`
      throw MetaError.invalidArgument(`unknown format token "${shown}" in "${format}": expected %s %S %t %p %o %i %a %T or %%`)
    }
    flush()
    steps.push({op})
  }
  flush()
  return new CompiledFormat(steps)
}

class CompiledFormat implements MessageFormatter {
  private readonly payloadUses: number
  private readonly fixedBytes: number

  /** The text after the payload when the format is the payload and a constant (the default, '%s\\n'). */
  private readonly payloadThen: Buffer | undefined

  constructor(private readonly steps: Step[]) {
    this.payloadUses = steps.filter((s) => s.op === Op.Payload).length
    this.fixedBytes = steps.reduce((sum, s) => sum + (s.op === Op.Literal ? s.literal!.length : 24), 0)
    this.payloadThen = steps.length === 2 && steps[0].op === Op.Payload && steps[1].op === Op.Literal ? steps[1].literal : undefined
  }

  format(records: RecordCursor): Buffer {
    const w = new ByteWriter(64 + records.count * (this.fixedBytes + records.topic.length) + this.payloadUses * records.dataBytesMax)
    const then = this.payloadThen
    if (then !== undefined) {
      // The default format, a line per message: no step loop.
      while (records.next()) {
        w.data(records)
        w.literal(then)
      }
    } else {
      while (records.next()) this.render(w, records)
    }
    return w.result()
  }

  formatCurrent(records: RecordCursor): Buffer {
    const w = new ByteWriter(64 + this.fixedBytes + records.topic.length + this.payloadUses * (records.dataEnd - records.dataStart))
    this.render(w, records)
    return w.result()
  }

  private render(w: ByteWriter, r: RecordCursor): void {
    for (const step of this.steps) {
      switch (step.op) {
        case Op.Literal:
          w.literal(step.literal!)
          break
        case Op.Payload:
          w.data(r)
          break
        case Op.Size:
          w.uint(r.dataEnd - r.dataStart)
          break
        case Op.Topic:
          w.ascii(r.topic) // topic names are printable ASCII
          break
        case Op.Partition:
          w.uint(r.partition)
          break
        case Op.Offset:
          w.uint(r.offset)
          break
        case Op.Id:
          w.messageId(r)
          break
        case Op.Attribute: {
          const attribute = r.attribute()
          if (attribute !== undefined) w.utf8(attribute)
          break
        }
        case Op.Timestamp:
          w.ascii(String(r.timestampMs()))
          break
      }
    }
  }
}
