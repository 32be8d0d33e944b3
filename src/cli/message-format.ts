/**
 * `meta tail -f` formats, kcat style: a format string is compiled once into a list of
 * operations, then a whole fetched batch is rendered into one Buffer (one stdout write per
 * batch; PERFORMANCE.md E.5).
 *
 * Tokens: %s payload, %S payload size in bytes, %t topic, %p partition, %o offset, %i message
 * id, %a attribute (empty when the message has none; %k is an alias for kcat habits),
 * %T timestamp in ms, %% a percent sign. Escapes: \n \t \r \0 \\ \xNN.
 */
import {messageDataLength} from '../client/fetcher.js'
import type {Message} from '../client/index.js'
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
  /** Render messages into one Buffer. */
  format(messages: readonly Message[]): Buffer
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

  constructor(private readonly steps: Step[]) {
    this.payloadUses = steps.filter((s) => s.op === Op.Payload).length
    this.fixedBytes = steps.reduce((sum, s) => sum + (s.op === Op.Literal ? s.literal!.length : 24), 0)
  }

  format(messages: readonly Message[]): Buffer {
    let estimate = 64
    for (const m of messages) estimate += this.fixedBytes + this.payloadUses * messageDataLength(m) + m.topic.length
    const w = new ByteWriter(estimate)
    for (const m of messages) {
      for (const step of this.steps) {
        switch (step.op) {
          case Op.Literal:
            w.literal(step.literal!)
            break
          case Op.Payload:
            w.data(m)
            break
          case Op.Size:
            w.ascii(String(messageDataLength(m)))
            break
          case Op.Topic:
            w.ascii(m.topic) // topic names are printable ASCII
            break
          case Op.Partition:
            w.ascii(String(m.partition))
            break
          case Op.Offset:
            w.ascii(String(m.offset))
            break
          case Op.Id:
            w.ascii(m.id.toString())
            break
          case Op.Attribute:
            if (m.attribute !== undefined) w.utf8(m.attribute)
            break
          case Op.Timestamp:
            w.ascii(String(m.timestampMs))
            break
        }
      }
    }
    return w.result()
  }
}
