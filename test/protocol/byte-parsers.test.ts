/**
 * The byte-level fast paths (put and result headers read in place, and the piecewise
 * encoders) must be invisible: for every header line, the decoders with byte parsers give
 * exactly the frame, or exactly the error, that the token parsers alone give; and the
 * encoders write exactly the bytes the template strings wrote.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {rng} from '../helpers/random.js'
import {FrameDecoder} from '../../src/protocol/decoder.js'
import {createRequestDecoder, createResponseDecoder} from '../../src/protocol/frames.js'
import {encodePutResult, parsePut, writePut} from '../../src/protocol/commands/put.js'
import {encodeResult, parseResult} from '../../src/protocol/commands/result.js'
import {OutputBuffer, intTextLength} from '../../src/protocol/output-buffer.js'

function outcome(decoder: {push(b: Buffer): void; next(): object | undefined}, bytes: Buffer): unknown {
  try {
    decoder.push(bytes)
    const frames = []
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f)
    return {frames}
  } catch (error) {
    return {error: (error as {code?: string}).code, message: (error as Error).message}
  }
}

const NUMBERS = [
  '0',
  '7',
  '-1',
  '-0',
  '+5',
  '007',
  '2147483647',
  '2147483648',
  '-2147483648',
  '-2147483649',
  '4294967295',
  '4294967296',
  '123456789012345',
  '1234567890123456',
  '12345678901234567',
  '9223372036854775807',
  '',
  '1a',
  '--1',
  '-',
  ' ',
  'null',
  'TX:1',
]

const VALID = ['0', '7', '-1', '42', '100', '2147483647', '-2147483648', '4294967295']

function chooser(seed: number) {
  const random = rng(seed)
  const one = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]
  return {
    one,
    /** Mostly a valid number, sometimes an odd or malformed one. */
    num: () => (random() < 0.8 ? one(VALID) : one(NUMBERS)),
    chance: (p: number) => random() < p,
  }
}

describe('byte parsers', () => {
  it('createRequestDecoder() decodes every put header like the token parser alone', () => {
    const tokensOnly = () => new FrameDecoder(new Map([['put', parsePut]]), {maxBodyBytes: 64})
    const topics = ['t', 'orders', 'app-web', '', 'a b']
    let decoded = 0
    const c = chooser(1)
    for (let i = 0; i < 4000; i++) {
      const fields = [
        'put',
        c.chance(0.9) ? 'orders' : c.one(topics),
        c.num(),
        c.one(['3', '0', '26', '-1', '65', '+3', '03']),
        c.num(),
        c.num(),
        c.chance(0.1) ? c.one(['TX:1', 'null', 'XID:a']) : c.num(),
        c.num(),
      ].slice(0, c.chance(0.7) ? 7 : c.one([5, 6, 8, 9]))
      const header = fields.join(c.chance(0.95) ? ' ' : '  ')
      const tail = c.chance(0.9) ? '' : c.one([' ', ' x'])
      const bytes = Buffer.from(`${header}${tail}\r\nabcdefghijklmnopqrstuvwxyz`, 'latin1')
      const fast = outcome(createRequestDecoder({maxBodyBytes: 64}), bytes)
      assert.deepEqual(fast, outcome(tokensOnly(), bytes), JSON.stringify(bytes.toString()))
      if ((fast as {frames?: unknown[]}).frames?.length) decoded++
    }
    assert.ok(decoded > 200, `only ${decoded} headers were valid`)
  })

  it('createRequestDecoder() decodes edge-case put headers like the token parser alone', () => {
    const tokensOnly = () => new FrameDecoder(new Map([['put', parsePut]]), {maxBodyBytes: 64})
    const lines = [
      'put t 0 0 0 0 0',
      'put t 0 1 0 0 0',
      'put t -0 1 0 0 0',
      'put t 00 1 0 0 0',
      'put t 01 1 0 0 0',
      'put t -01 1 0 0 0',
      'put t 0 1 0 0',
      'put t 0 1 0',
      'put t',
      'put',
      'put ',
      'put  t 0 1 0 0 0',
      'put t  0 1 0 0 0',
      'put t 0 1 0 0 0 ',
      'put t 0 1 0 0  0',
      'put t 0 2147483648 0 0 0',
      'put t 0 99999999999 0 0 0',
      'put t 0 -1 0 0 0',
      'put t 0 1 0 0 4294967296',
      'put t 0 1 0 0 -2147483649',
      'put t 0 1 0 2147483648 1',
      'put t 0 1 2147483648 0 1',
      'put t 2147483648 1 0 0 1',
      'put t 0 1 0 0 123456789012345',
      'put t 0 1 0 0 1234567890123456',
      'put t 0 1 0 0 +1',
      'put t 0 1 0 0 1x',
      'put t 0 1 0 0 -',
      'put t 0 1 0 - 1',
      'put t 0 1 0 TX:1 1',
      'put t 0 1 0 7 TX:1 1',
      'putt 0 1 0 0 0 0',
      'pux t 0 1 0 0 0',
      'put é 0 1 0 0 0',
      'put t 0 1 0 0 0\x00',
      'put t 0 1 0 0 7 8',
      // Bytes next to the digits (0x2a-0x2f share their high nibble with 0x3a-0x3f once 6 is added).
      'put t 0 1 0 1-23 5',
      'put t 0 1 0 12+3456 5',
      'put t 0 1 0 1234/678 5',
      'put t 0 1 0 5 1.234',
      'put t 0 1 0 5 12345*78',
      'put t 0 1 0 123:567 5',
      'put t 0 1 0 5 1234567?',
      'put t 0 1 0 -12,4 5',
      'put t 0 1 0 5 -123456789012',
      'put t 0 1 0 12345678901 5',
      'put t 0 1 0 1234567890 4294967295',
      'put t 0 1 0 -2147483648 -2147483648',
      'put t 0 1 0 -2147483649 1',
    ]
    for (const line of lines) {
      const bytes = Buffer.concat([Buffer.from(line, 'utf8'), Buffer.from('\r\nabcdefghij', 'latin1')])
      assert.deepEqual(outcome(createRequestDecoder({maxBodyBytes: 64}), bytes), outcome(tokensOnly(), bytes), JSON.stringify(line))
    }
  })

  it('createRequestDecoder() decodes streams of put headers that repeat with changes like the token parser alone', () => {
    // One producer's puts repeat everything up to the checksum; the byte parser then reads only
    // the checksum and the opaque. Each header here is the last one with some fields changed
    // (topic, partition, length, flag, digit counts of checksum and opaque, signs, 11-15
    // digits, malformed tokens), in one stream cut into random chunks, and across decoders.
    const tokensOnly = () => new FrameDecoder(new Map([['put', parsePut]]), {maxBodyBytes: 64})
    const random = rng(11)
    const one = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]
    const fields = ['orders', '0', '26', '0', '-1', '1']
    // Per field: values the byte parser reads, then values it leaves to the token parser.
    const choices = [
      [
        ['orders', 'order', 'ordersx', 'xrders', 't', 'bench-mx7jaz2d-26769', 'a'.repeat(150), 'é'],
        ['a b', ''],
      ],
      [
        ['0', '1', '7', '12', '-1', '2147483647'],
        ['01', '-0', '2147483648', 'x'],
      ],
      [
        ['0', '3', '10', '26', '64'],
        ['-0', '007', '65', '1a'],
      ],
      [
        ['0', '1', '-1', '123', '-2147483648'],
        ['2147483648', '0000000000001', '+1'],
      ],
      [
        ['-1', '0', '7', '-7', '2147483647', '-2147483648'],
        ['2147483648', '-2147483649', '123456789012345', '1234567890123456', '-', '1x', ''],
      ],
      [
        ['1', '10', '999', '1000', '-1', '-10', '4294967295'],
        ['4294967296', '123456789012345', '1234567890123456', '+1', '1 ', ' 1', ''],
      ],
    ]
    let decoded = 0
    for (let run = 0; run < 200; run++) {
      const lines: Buffer[] = []
      for (let i = 0; i < 30; i++) {
        for (let f = 0; f < fields.length; f++) if (random() < 0.15) fields[f] = one(choices[f][random() < 0.05 ? 1 : 0])
        if (random() < 0.5) fields[5] = String(Math.floor(random() * 10 ** Math.floor(random() * 11)) * (random() < 0.1 ? -1 : 1))
        if (random() < 0.5) fields[4] = String(Math.floor(random() * 2 ** 32) - 2 ** 31)
        const length = Number(fields[2])
        const body = Buffer.alloc(Number.isInteger(length) && length >= 0 && length <= 64 ? length : 5, 'x')
        lines.push(Buffer.from(`put ${fields.join(' ')}\r\n`, 'utf8'), body)
      }
      const bytes = Buffer.concat(lines)
      const chunked = (decoder: {push(b: Buffer): void; next(): object | undefined}): unknown => {
        const frames = []
        try {
          for (let pos = 0; pos < bytes.length;) {
            const end = Math.min(bytes.length, pos + 1 + Math.floor(random() * 300))
            decoder.push(bytes.subarray(pos, end))
            pos = end
            for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f)
          }
          return {frames}
        } catch (error) {
          return {frames, error: (error as {code?: string}).code, message: (error as Error).message}
        }
      }
      const fast = chunked(createRequestDecoder({maxBodyBytes: 64})) as {frames: unknown[]}
      assert.deepEqual(fast, chunked(tokensOnly()), `run ${run}`)
      decoded += fast.frames.length
    }
    assert.ok(decoded > 2000, `only ${decoded} puts were decoded`)
  })

  it('createResponseDecoder() decodes every result header like the token parser alone', () => {
    const tokensOnly = () => new FrameDecoder(new Map([['result', parseResult]]))
    let decoded = 0
    const c = chooser(2)
    for (let i = 0; i < 2000; i++) {
      const fields = ['result', c.num(), c.one(['0', '3', '12', '-1', '+2', '007']), c.num(), 'extra'].slice(0, c.chance(0.8) ? 4 : c.one([3, 5]))
      const bytes = Buffer.from(`${fields.join(c.chance(0.95) ? ' ' : '  ')}${c.chance(0.9) ? '' : ' '}\r\nabcdefghijkl`, 'latin1')
      const fast = outcome(createResponseDecoder(), bytes)
      assert.deepEqual(fast, outcome(tokensOnly(), bytes), JSON.stringify(bytes.toString()))
      if ((fast as {frames?: unknown[]}).frames?.length) decoded++
    }
    assert.ok(decoded > 200, `only ${decoded} headers were valid`)
  })

  it('reuses the last topic string only when the bytes are the same', () => {
    const decoder = createRequestDecoder()
    const frames = outcome(
      decoder,
      Buffer.from(
        'put abc 0 1 0 -1 1\r\nxput abd 0 1 0 -1 2\r\nyput abc 0 1 0 -1 3\r\nzput ab 0 1 0 -1 4\r\nwput abc 0 1 0 -1 5\r\nvput abcd 0 1 0 -1 6\r\nuput abc 0 1 0 -1 7\r\ntput abc 0 1 0 -1 8\r\ns',
      ),
    ) as {frames: Array<{topic: string}>}
    assert.deepEqual(
      frames.frames.map((f) => f.topic),
      ['abc', 'abd', 'abc', 'ab', 'abc', 'abcd', 'abc', 'abc'],
    )
  })

  it('writePut() writes what the template string wrote, for random int32s, topics and bodies, many puts in one buffer', () => {
    const random = rng(7)
    const int32 = () => {
      const r = random()
      if (r < 0.1) return [0, -1, 1, 2147483647, -2147483648, -0, 9, 10, -10][Math.floor(random() * 9)]
      if (r < 0.3) return Math.floor(random() * 1000) - 500
      return Math.floor(random() * 2 ** 32) - 2 ** 31
    }
    const topics = ['t', 'orders', 'bench-mx7jaz2d-26769', 'a'.repeat(200)]
    const out = new OutputBuffer(8)
    let expected = ''
    for (let i = 0; i < 3000; i++) {
      const topic = topics[Math.floor(random() * topics.length)]
      const body = Buffer.alloc(random() < 0.1 ? 0 : Math.floor(random() * 2000), String.fromCharCode(97 + (i % 26)))
      const [partition, flag, checksum, opaque] = [int32(), int32(), int32(), int32()]
      writePut(out, topic, partition, body, flag, checksum, opaque)
      expected += `put ${topic} ${partition} ${body.length} ${flag} ${checksum} ${opaque}\r\n${body.toString('latin1')}`
      if (random() < 0.05) {
        assert.equal(out.take().toString('latin1'), expected)
        expected = ''
      }
    }
    assert.equal(out.take().toString('latin1'), expected)
  })

  it('writePut(), encodePutResult() and encodeResult() write what the template strings wrote', () => {
    const ints = [0, 1, 9, 10, 99, 100, -1, -10, 2147483647, -2147483648, 4294967295, 2 ** 40 + 3, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, -0, 1.5]
    for (const a of ints) {
      for (const b of [0, -1, 12, 2147483647]) {
        const out = new OutputBuffer(8)
        writePut(out, 'orders', a, Buffer.from('hello'), b, a, b)
        assert.equal(out.take().toString('latin1'), `put orders ${a} 5 ${b} ${a} ${b}\r\nhello`)
        encodeResult(out, a, b, 'x y é')
        assert.equal(out.take().toString('utf8'), `result ${a} 6 ${b}\r\nx y é`)
      }
      assert.equal(intTextLength(a), String(a).length)
    }
    const out = new OutputBuffer(8)
    encodePutResult(out, -5, 7205759403792793600n, 3, 2 ** 33)
    const body = `7205759403792793600 3 ${2 ** 33}`
    assert.equal(out.take().toString('latin1'), `result 200 ${body.length} -5\r\n${body}`)
  })
})
