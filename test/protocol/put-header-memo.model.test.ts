/**
 * The put header memo of parsePutBytes (protocol/commands/put.ts: the last header read whole,
 * up to its checksum, compared a word at a time so a producer's repeated puts read only the
 * checksum and the opaque) against a plain model: the fields each header was written from.
 * Random sequences interleave several producers (the memo is one per process, shared by every
 * connection), repeat a header, change one field, change one byte of the remembered prefix
 * (a near miss, also in the last, overlapping word), pass a topic too long to remember, and
 * write malformed or transactional endings after a remembered prefix; each line sits in a
 * fresh buffer, inside a larger one at any offset, or in one reused buffer overwritten in
 * place (the memo keeps a view of the last buffer). A line written from fields must read as
 * exactly those fields; any other line as the token parser reads it, or not at all (left to
 * it). A failure names the seed (META_TEST_SEED=<seed> replays it).
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'
import {parsePut, parsePutBytes, type PutCommand} from '../../src/protocol/commands/put.js'
import {byteParse} from '../../src/protocol/decoder.js'
import {scaleFor, seeds, withSeed, type Random} from '../helpers/seeded.js'

interface Fields {
  topic: string
  partition: number
  length: number
  flag: number
}

const OPERATIONS = {repeat: 40, 'change a field': 16, 'near miss': 10, 'switch producer': 8, 'long topic': 2, 'odd ending': 8, 'odd prefix': 4}
const TOPICS = ['t', 'orders', 'ordert', 'app-web', 'bench-mx7jaz2d-26769', 'é-topic', 'a'.repeat(40)]
const INT32_MIN = -(2 ** 31)
const INT32_MAX = 2 ** 31 - 1

/** An int32 with 1 to 10 digits, either sign, the edges often. */
function int32(random: Random): number {
  if (random.chance(0.1)) return random.pick([0, -1, INT32_MIN, INT32_MAX])
  const digits = random.int(1, 10)
  const value = Math.min(INT32_MAX, Math.floor(random.float() * 10 ** digits))
  return random.chance(0.3) && value !== 0 ? -value : value
}

/** A non-negative int32. */
function uint31(random: Random): number {
  return Math.min(INT32_MAX, Math.abs(int32(random)))
}

function fieldsOf(random: Random): Fields {
  return {
    topic: random.pick(TOPICS),
    partition: random.pick([0, 1, 7, 12, -1, INT32_MAX]),
    length: random.pick([0, 3, 10, 26, 64, 1000, INT32_MAX]),
    flag: random.pick([0, 1, -1, 123, INT32_MIN]),
  }
}

function changeOne(random: Random, f: Fields): Fields {
  const which = random.int(0, 3)
  if (which === 0) return {...f, topic: random.pick(TOPICS)}
  if (which === 1) return {...f, partition: uint31(random)}
  if (which === 2) return {...f, length: uint31(random)}
  return {...f, flag: int32(random)}
}

/**
 * Fields whose prefix text differs from `f`'s in one byte at a random place (a digit for
 * another digit, or one letter of the topic), so that the memo's word compare is what tells
 * them apart; undefined when the drawn place has no such neighbour.
 */
function nearMiss(random: Random, f: Fields): Fields | undefined {
  const text = prefixText(f)
  const at = random.int(4, text.length - 2)
  const c = text[at]!
  let next: string
  if (c >= '0' && c <= '9') next = String((Number(c) + random.int(1, 9)) % 10)
  else if (c >= 'a' && c < 'z') next = String.fromCharCode(c.charCodeAt(0) + 1)
  else return undefined
  const changed = text.slice(0, at) + next + text.slice(at + 1)
  const tokens = changed.trimEnd().split(' ')
  const [partition, length, flag] = [Number(tokens[2]), Number(tokens[3]), Number(tokens[4])]
  // A leading zero (not canonical) or a value past int32 is no longer a line written from fields.
  if (!/^(-?[1-9]\d*|0)$/.test(tokens[2]!) || !/^(-?[1-9]\d*|0)$/.test(tokens[3]!) || !/^(-?[1-9]\d*|0)$/.test(tokens[4]!)) return undefined
  if (partition > INT32_MAX || length > INT32_MAX || flag < INT32_MIN || flag > INT32_MAX) return undefined
  return {topic: tokens[1]!, partition, length, flag}
}

/** `put <topic> <partition> <len> <flag> `: what the memo remembers. */
function prefixText(f: Fields): string {
  return `put ${f.topic} ${f.partition} ${f.length} ${f.flag} `
}

/** The model's frame for a line written from `f`, `checksum` and `opaque`. */
function modelFrame(f: Fields, checksum: number, opaque: number): PutCommand {
  return {type: 'put', topic: f.topic, partition: f.partition, flag: f.flag, checksum, txKey: null, opaque, body: Buffer.alloc(0)}
}

/** Endings after a prefix that the fast path must not read as a plain put. */
const ODD_ENDINGS = [
  '1 2 3',
  '1',
  '+1 2',
  '1 +2',
  '1x 2',
  '1 2 ',
  '1  2',
  '12345678901 2',
  '1 4294967296',
  '1 123456789012345',
  'TX:1 2',
  '7 TX:1 2',
  '7 null 2',
  '-1 -',
  '- 1',
  '1 2\u0000',
]

/** The line as the token parser (the decoder's fallback) reads it: frame and body length, or the error's code. */
function tokenParse(line: string): {frame: PutCommand; bodyLength: number} | {error: string} {
  try {
    return parsePut(line.split(' '))
  } catch (error) {
    return {error: (error as {code?: string}).code ?? String(error)}
  }
}

for (const seed of seeds({ci: 5, all: 30})) {
  test(`the put header memo reads every header as the model wrote it, through a random sequence of puts (seed ${seed})`, () =>
    withSeed(import.meta.url, seed, (random: Random, steps) => {
      const producers: Fields[] = Array.from({length: random.int(1, 4)}, () => fieldsOf(random))
      let current = 0
      // One socket buffer reused for many lines, as a connection's read buffer is.
      const reused = Buffer.alloc(4096)
      let hits = 0
      const count = scaleFor({ci: 4000, all: 40_000})
      for (let i = 0; i < count; i++) {
        const op = random.weighted(OPERATIONS)
        let fields: Fields | undefined = producers[current]!
        let ending: string | undefined
        if (op === 'change a field') fields = producers[current] = changeOne(random, fields)
        else if (op === 'near miss') fields = nearMiss(random, fields) ?? fields
        else if (op === 'switch producer') {
          current = random.int(0, producers.length - 1)
          fields = producers[current]!
        } else if (op === 'long topic') fields = {...fields, topic: 'L'.repeat(random.int(100, 200))}
        else if (op === 'odd ending') ending = random.pick(ODD_ENDINGS)
        else if (op === 'odd prefix') {
          const text = prefixText(fields)
          const odd = random.pick([
            text.replace(' ', '  '),
            text.replace(/ (\d)/, ' 0$1'),
            text.replace(/ (\d+) /, ' -0 '),
            text.replace('put', 'pux'),
            `${text.trimEnd()}x `,
          ])
          ending = `${odd.slice(4)}1 2`
          fields = undefined
        }
        const checksum = int32(random)
        const opaque = random.chance(0.2) ? random.int(0, 4294967295) : int32(random)
        const line =
          ending === undefined ? `${prefixText(fields!)}${checksum} ${opaque}` : fields === undefined ? `put ${ending}` : `${prefixText(fields)}${ending}`
        const bytes = Buffer.from(`${line}\r\n`, 'utf8')
        const eolOffset = bytes.length - 2
        const place = random.pick(['fresh', 'inside', 'reused'] as const)
        let buf: Buffer
        let start: number
        if (place === 'fresh') {
          buf = bytes
          start = 0
        } else if (place === 'inside') {
          start = random.int(0, 40)
          buf = Buffer.concat([random.bytes(start), bytes, random.bytes(random.int(0, 40))])
        } else {
          start = random.int(0, reused.length - bytes.length - 8)
          buf = reused
          bytes.copy(buf, start)
          random.bytes(8).copy(buf, start + bytes.length)
        }
        steps.step(`${op} (${place} at ${start}): ${JSON.stringify(line)}`)
        byteParse.bodyLength = -1
        const fast = parsePutBytes(buf, start, start + eolOffset)
        if (ending === undefined) {
          assert.notEqual(fast, undefined, 'a plain put written from fields is read by the fast path')
          assert.deepEqual(fast, modelFrame(fields!, checksum, opaque), 'the frame holds the fields the line was written from')
          assert.equal(byteParse.bodyLength, fields!.length, 'the body length')
          if (op === 'repeat') hits++
        } else if (fast !== undefined) {
          const reference = tokenParse(line)
          assert.deepEqual({frame: fast, bodyLength: byteParse.bodyLength}, reference, 'an odd line the fast path reads, it reads as the token parser does')
        }
      }
      assert.ok(hits > count / 5, `only ${hits} repeated headers`)
    }))
}
