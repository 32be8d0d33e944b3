/**
 * The frame decoder against committed golden bytes: every frame type decodes to the expected
 * fields, encoding reproduces the bytes exactly, and any chunking of the stream (byte by
 * byte, random sizes) yields identical frames. Bad frames raise typed errors.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  OutputBuffer,
  createRequestDecoder,
  createResponseDecoder,
  encodeGet,
  encodeOffset,
  encodePut,
  encodeQuit,
  encodeResult,
  encodeStats,
  encodeSync,
  encodeTransaction,
  encodeValue,
  encodeVersion,
  isMetaError,
  oversizeBodyBytes,
  type RequestFrame,
  type ResponseFrame,
} from '../../src/protocol/index.js'
import {fixture} from './fixtures.js'

function decodeAll<F extends object>(decoder: {push(b: Buffer): void; next(): F | undefined}, chunks: Buffer[]): F[] {
  const frames: F[] = []
  for (const chunk of chunks) {
    decoder.push(chunk)
    for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f)
  }
  return frames
}

function requests(bytes: Buffer): RequestFrame[] {
  return decodeAll(createRequestDecoder(), [bytes])
}

function encoded(write: (out: OutputBuffer) => void): Buffer {
  const out = new OutputBuffer(8)
  write(out)
  return out.take()
}

const REQUEST_FIXTURES = [
  'put',
  'put-legacy',
  'put-legacy-attribute',
  'put-legacy-transaction',
  'put-transaction',
  'put-broker-picks',
  'get',
  'get-long-poll',
  'offset',
  'stats-empty-item',
  'stats-topics',
  'stats-bare',
  'version',
  'quit',
  'transaction-begin',
  'transaction-xa-prepare',
  'transaction-recover',
  'sync',
]
const RESPONSE_FIXTURES = ['result-put', 'result-version', 'result-not-found', 'value']

describe('request decoder', () => {
  it('decodes the four put forms by token count and first character', () => {
    const [current] = requests(fixture('put'))
    assert.deepEqual(current, {
      type: 'put',
      topic: 'meta-test',
      partition: 0,
      flag: 0,
      checksum: 907060870,
      txKey: null,
      opaque: -2147483646,
      body: Buffer.from('hello'),
    })
    const [legacy] = requests(fixture('put-legacy'))
    assert.equal(legacy.type === 'put' && legacy.checksum, -1)
    assert.equal(legacy.type === 'put' && legacy.opaque, 1)
    const [legacyAttr] = requests(fixture('put-legacy-attribute'))
    assert.ok(legacyAttr.type === 'put')
    assert.equal(legacyAttr.flag, 1)
    assert.deepEqual(legacyAttr.body, Buffer.from('\x00\x00\x00\x03AAAwith-attr', 'latin1'))
    const [legacyTx] = requests(fixture('put-legacy-transaction'))
    assert.ok(legacyTx.type === 'put')
    assert.equal(legacyTx.txKey, 'TX:sess:1')
    assert.equal(legacyTx.checksum, -1)
    assert.equal(legacyTx.opaque, 7)
    const [tx] = requests(fixture('put-transaction'))
    assert.ok(tx.type === 'put')
    assert.equal(tx.txKey, 'TX:sess:1')
    assert.equal(tx.checksum, 907060870)
    const [picks] = requests(fixture('put-broker-picks'))
    assert.ok(picks.type === 'put')
    assert.equal(picks.partition, -1)
    assert.equal(picks.opaque, -2147483648)
  })

  it('decodes get, including Long.MAX_VALUE and the long-poll token', () => {
    assert.deepEqual(requests(fixture('get'))[0], {
      type: 'get',
      topic: 'test',
      group: 'grp',
      partition: 0,
      offset: 0,
      maxSize: 1048576,
      opaque: -2147483646,
      maxWaitMs: 0,
    })
    const [poll] = requests(fixture('get-long-poll'))
    assert.ok(poll.type === 'get')
    assert.equal(poll.offset, Number.MAX_SAFE_INTEGER)
    assert.equal(poll.opaque, 5)
    assert.equal(poll.maxWaitMs, 1000)
  })

  it('decodes offset, stats (empty item, item, bare), version and quit', () => {
    assert.deepEqual(requests(fixture('offset'))[0], {
      type: 'offset',
      topic: 'test',
      group: 'grp',
      partition: 0,
      offset: 10,
      opaque: -2147483645,
    })
    assert.deepEqual(requests(fixture('stats-empty-item'))[0], {type: 'stats', item: '', opaque: 8})
    assert.deepEqual(requests(fixture('stats-topics'))[0], {type: 'stats', item: 'topics', opaque: 8})
    assert.deepEqual(requests(fixture('stats-bare'))[0], {type: 'stats', item: '', opaque: 2147483647})
    assert.deepEqual(requests(Buffer.from('stats offsets\r\n'))[0], {type: 'stats', item: 'offsets', opaque: 2147483647})
    assert.deepEqual(requests(fixture('version'))[0], {type: 'version', opaque: 7})
    assert.deepEqual(requests(Buffer.from('version\r\n'))[0], {type: 'version', opaque: 2147483647})
    assert.deepEqual(requests(fixture('quit'))[0], {type: 'quit'})
  })

  it('decodes transaction by token count', () => {
    assert.deepEqual(requests(fixture('transaction-begin'))[0], {
      type: 'transaction',
      txKey: 'TX:sess:1',
      sessionId: 'sess',
      txType: 'BEGIN',
      timeoutSeconds: 30,
      uniqueQualifier: undefined,
      opaque: 9,
    })
    const [xa] = requests(fixture('transaction-xa-prepare'))
    assert.ok(xa.type === 'transaction')
    assert.equal(xa.timeoutSeconds, 10)
    assert.equal(xa.uniqueQualifier, 'XAMessageProducer-host')
    const [recover] = requests(fixture('transaction-recover'))
    assert.ok(recover.type === 'transaction')
    assert.equal(recover.txType, 'RECOVER')
    assert.equal(recover.timeoutSeconds, 0)
    assert.equal(recover.uniqueQualifier, 'XAMessageProducer-host')
  })

  it('decodes sync with its 64-bit message id', () => {
    const [sync] = requests(fixture('sync'))
    assert.ok(sync.type === 'sync')
    assert.equal(sync.msgId, 4194316293n)
    assert.equal(sync.checksum, 907060870)
    assert.deepEqual(sync.body, Buffer.from('hello'))
  })

  it('yields identical frames for any chunking of the stream', () => {
    const stream = Buffer.concat(REQUEST_FIXTURES.map(fixture))
    const whole = requests(stream)
    assert.equal(whole.length, REQUEST_FIXTURES.length)
    const byByte = decodeAll(
      createRequestDecoder(),
      [...stream].map((b) => Buffer.from([b])),
    )
    assert.deepEqual(byByte, whole)
    let seed = 42
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let round = 0; round < 50; round++) {
      const chunks: Buffer[] = []
      for (let pos = 0; pos < stream.length;) {
        const size = 1 + Math.floor(random() * 40)
        chunks.push(stream.subarray(pos, pos + size))
        pos += size
      }
      assert.deepEqual(decodeAll(createRequestDecoder(), chunks), whole, `round ${round}`)
    }
  })

  it('assembles a large body split over many chunks', () => {
    const body = Buffer.alloc(300_000, 7)
    const bytes = Buffer.concat([Buffer.from(`put big 0 ${body.length} 0 -1 1\r\n`), body, fixture('version')])
    const chunks = []
    for (let pos = 0; pos < bytes.length; pos += 65536) chunks.push(bytes.subarray(pos, pos + 65536))
    const frames = decodeAll(createRequestDecoder(), chunks)
    assert.equal(frames.length, 2)
    assert.ok(frames[0].type === 'put')
    assert.deepEqual(frames[0].body, body)
    assert.deepEqual(frames[1], {type: 'version', opaque: 7})
  })

  const bad: Array<[string, string, string]> = [
    ['unknown\r\n', 'DECODE_ERROR', 'unknown command "unknown"'],
    ['puts a 0 5 0 1\r\n', 'DECODE_ERROR', 'unknown command "puts"'],
    ['put a 0 5\r\n', 'DECODE_ERROR', '"put" command has 4 tokens: expected 6 or 7 or 8'],
    ['put a x 5 0 1\r\nhello', 'DECODE_ERROR', 'invalid partition "x" in "put" command: expected a 32-bit integer'],
    ['put a 0 -5 0 1\r\n', 'DECODE_ERROR', 'invalid length "-5" in "put" command: expected a non-negative 32-bit integer'],
    ['get t g 0 0 100 2147483648000\r\n', 'DECODE_ERROR', 'invalid opaque "2147483648000" in "get" command: expected a 32-bit integer'],
    ['get t g 0 12x 100 1\r\n', 'DECODE_ERROR', 'invalid offset "12x" in "get" command: expected a 64-bit integer'],
    ['transaction k s DANCE 1\r\n', 'DECODE_ERROR', 'invalid type "DANCE"'],
    ['version 1 2\r\n', 'DECODE_ERROR', '"version" command has 3 tokens: expected 1 or 2'],
    ['result 200 0 1\r\n', 'DECODE_ERROR', 'unknown command "result"'],
  ]
  for (const [input, code, message] of bad) {
    it(`rejects ${JSON.stringify(input.trim())} with ${code}`, () => {
      const decoder = createRequestDecoder()
      decoder.push(Buffer.from(input))
      assert.throws(
        () => decoder.next(),
        (err) => isMetaError(err, code as 'DECODE_ERROR') && err.message.includes(message),
      )
    })
  }

  it('refuses a header line longer than the limit before it ends', () => {
    const decoder = createRequestDecoder({maxHeaderBytes: 4096})
    decoder.push(Buffer.alloc(4000, 0x61))
    assert.equal(decoder.next(), undefined)
    decoder.push(Buffer.alloc(200, 0x61))
    assert.throws(
      () => decoder.next(),
      (err) => isMetaError(err, 'FRAME_TOO_LARGE'),
    )
  })

  it('refuses a body longer than the limit before buffering it', () => {
    const decoder = createRequestDecoder({maxBodyBytes: 1024})
    decoder.push(Buffer.from('put t 0 1025 0 -1 1\r\n'))
    assert.throws(
      () => decoder.next(),
      (err) => isMetaError(err, 'FRAME_TOO_LARGE') && err.message === '"put" body of 1025 bytes exceeds the limit of 1024 bytes',
    )
  })

  it('accepts a header of exactly the limit', () => {
    const topic = 't'.repeat(4096 - 'get  g 0 0 1 1'.length)
    const decoder = createRequestDecoder({maxHeaderBytes: 4096})
    decoder.push(Buffer.from(`get ${topic} g 0 0 1 1\r\n`))
    assert.equal(decoder.next()?.type, 'get')
  })

  it('skips NUL bytes between commands (some MetaQ clients pad puts), in any chunking', () => {
    const stream = Buffer.concat([Buffer.from('\0\0put t 0 5 0 -1 1\r\nhello'), Buffer.alloc(7), Buffer.from('version 2\r\n\0')])
    const whole = requests(stream)
    assert.deepEqual(
      whole.map((f) => f.type),
      ['put', 'version'],
    )
    const byByte = decodeAll(
      createRequestDecoder(),
      [...stream].map((b) => Buffer.from([b])),
    )
    assert.deepEqual(byByte, whole)
    const decoder = createRequestDecoder()
    decoder.push(Buffer.alloc(3))
    assert.equal(decoder.next(), undefined)
    assert.equal(decoder.inFrame, false, 'padding alone is not a partial frame')
  })

  it('still refuses a NUL inside a header line', () => {
    const decoder = createRequestDecoder()
    decoder.push(Buffer.from('ver\0sion 1\r\n'))
    assert.throws(
      () => decoder.next(),
      (err) => isMetaError(err, 'DECODE_ERROR'),
    )
  })

  it('skips the body of an oversize frame up to maxSkippedBodyBytes without buffering it', () => {
    const decoder = createRequestDecoder({maxBodyBytes: 1024, maxSkippedBodyBytes: 4096})
    const chunks = [Buffer.from('put t 0 4000 0 -1 7\r\n'), Buffer.alloc(1000, 1), Buffer.alloc(3000, 2), Buffer.from('version 8\r\n')]
    const frames: RequestFrame[] = []
    for (const chunk of chunks) {
      decoder.push(chunk)
      assert.ok(decoder.bufferedBytes < 64, `nothing of the skipped body is buffered (${decoder.bufferedBytes})`)
      for (let f = decoder.next(); f !== undefined; f = decoder.next()) frames.push(f)
    }
    assert.equal(frames.length, 2)
    const put = frames[0]
    assert.ok(put.type === 'put')
    assert.equal(put.opaque, 7)
    assert.equal(put.body.length, 0)
    assert.equal(oversizeBodyBytes(put), 4000)
    assert.deepEqual(frames[1], {type: 'version', opaque: 8})
  })

  it('skips an oversize body that arrives in the same chunk as its header and the next frame', () => {
    const frames = decodeAll(createRequestDecoder({maxBodyBytes: 4, maxSkippedBodyBytes: 16}), [Buffer.from('put t 0 10 0 -1 1\r\n0123456789version 2\r\n')])
    assert.deepEqual(
      frames.map((f) => [f.type, oversizeBodyBytes(f)]),
      [
        ['put', 10],
        ['version', undefined],
      ],
    )
  })

  it('refuses a body beyond maxSkippedBodyBytes', () => {
    const decoder = createRequestDecoder({maxBodyBytes: 1024, maxSkippedBodyBytes: 4096})
    decoder.push(Buffer.from('put t 0 4097 0 -1 1\r\n'))
    assert.throws(
      () => decoder.next(),
      (err) => isMetaError(err, 'FRAME_TOO_LARGE'),
    )
  })

  it('counts a skipped body as a partial frame until it has passed', () => {
    const decoder = createRequestDecoder({maxBodyBytes: 4, maxSkippedBodyBytes: 16})
    decoder.push(Buffer.from('put t 0 10 0 -1 1\r\n01234'))
    assert.equal(decoder.next()?.type, 'put')
    assert.equal(decoder.inFrame, true)
    decoder.push(Buffer.from('56789'))
    assert.equal(decoder.next(), undefined)
    assert.equal(decoder.inFrame, false)
  })

  for (const partition of ['+0', '00', '-0', '01', '+1']) {
    it(`refuses the partition token ${JSON.stringify(partition)} (not a canonical decimal integer)`, () => {
      for (const line of [
        `put t ${partition} 5 0 -1 1\r\nhello`,
        `put t ${partition} 5 0 1\r\nhello`,
        `get t g ${partition} 0 100 1\r\n`,
        `offset t g ${partition} 0 1\r\n`,
      ]) {
        const decoder = createRequestDecoder()
        decoder.push(Buffer.from(line))
        assert.throws(
          () => decoder.next(),
          (err) => isMetaError(err, 'DECODE_ERROR') && err.message.includes(`invalid partition "${partition}"`),
          line,
        )
      }
    })
  }

  it('decodes a non-ASCII topic token as UTF-8', () => {
    const [frame] = requests(Buffer.from('get tëst g 0 0 100 1\r\n', 'utf8'))
    assert.ok(frame.type === 'get')
    assert.equal(frame.topic, 'tëst')
    const [put] = requests(Buffer.from('put tëst 0 1 0 -1 1\r\nx', 'utf8'))
    assert.ok(put.type === 'put')
    assert.equal(put.topic, 'tëst')
  })

  it('gives a body that arrived whole as a Buffer view of the chunk (no copy)', () => {
    const pool = Buffer.alloc(200, 0x2e) // the chunk starts inside a larger ArrayBuffer, as socket reads do
    const chunk = pool.subarray(17, 17 + 60)
    chunk.write('put t 0 8 0 -1 1\r\n\x00\x00\x00\x2aabcd', 'latin1')
    const decoder = createRequestDecoder()
    decoder.push(chunk)
    const frame = decoder.next() as Extract<RequestFrame, {type: 'put'}>
    const body = frame.body
    assert.ok(Buffer.isBuffer(body) && body instanceof Buffer && body instanceof Uint8Array)
    assert.equal(body.constructor, Buffer)
    assert.equal(body.length, 8)
    assert.equal(body.readInt32BE(0), 42)
    assert.equal(body.toString('latin1', 4), 'abcd')
    assert.ok(body.equals(Buffer.from([0, 0, 0, 42, 0x61, 0x62, 0x63, 0x64])))
    assert.ok(Buffer.isBuffer(body.subarray(4)) && Buffer.isBuffer(body.slice(0, 2)))
    assert.deepEqual(Buffer.concat([body, body]).length, 16)
    chunk['put t 0 8 0 -1 1\r\n'.length + 4] = 0x41 // the same memory as the chunk
    assert.equal(body.toString('latin1', 4), 'Abcd')
    assert.equal(body.buffer, pool.buffer)
  })

  it('reports a partial frame so a disconnect can drop it whole', () => {
    const decoder = createRequestDecoder()
    decoder.push(Buffer.from('put t 0 5 0 -1 1\r\nhel'))
    assert.equal(decoder.next(), undefined)
    assert.equal(decoder.inFrame, true)
    decoder.push(Buffer.from('lo'))
    assert.equal(decoder.next()?.type, 'put')
    assert.equal(decoder.inFrame, false)
  })
})

describe('response decoder', () => {
  it('decodes result and value frames', () => {
    const frames = decodeAll(createResponseDecoder(), RESPONSE_FIXTURES.map(fixture))
    assert.deepEqual(frames[0], {type: 'result', code: 200, opaque: -2147483648, body: Buffer.from('4194316293 0 0')})
    assert.deepEqual(frames[1], {type: 'result', code: 200, opaque: 7, body: Buffer.from('1.4.6.2')})
    assert.deepEqual(frames[2], {type: 'result', code: 404, opaque: 3, body: Buffer.alloc(0)})
    assert.deepEqual(frames[3], {type: 'value', opaque: -2147483646, body: fixture('record-hello')})
  })

  it('ignores tokens after the opaque in result, as the Java client does', () => {
    const [frame] = decodeAll<ResponseFrame>(createResponseDecoder(), [Buffer.from('result 200 2 5 extra\r\nok')])
    assert.deepEqual(frame, {type: 'result', code: 200, opaque: 5, body: Buffer.from('ok')})
  })

  it('yields identical frames byte by byte', () => {
    const stream = Buffer.concat(RESPONSE_FIXTURES.map(fixture))
    const whole = decodeAll(createResponseDecoder(), [stream])
    const byByte = decodeAll(
      createResponseDecoder(),
      [...stream].map((b) => Buffer.from([b])),
    )
    assert.deepEqual(byByte, whole)
  })
})

describe('encoders', () => {
  it('reproduce the golden bytes', () => {
    const put = requests(fixture('put'))[0]
    assert.ok(put.type === 'put')
    assert.deepEqual(
      encoded((o) => encodePut(o, put)),
      fixture('put'),
    )
    const putTx = requests(fixture('put-transaction'))[0]
    assert.ok(putTx.type === 'put')
    assert.deepEqual(
      encoded((o) => encodePut(o, putTx)),
      fixture('put-transaction'),
    )
    const get = requests(fixture('get'))[0]
    assert.ok(get.type === 'get')
    assert.deepEqual(
      encoded((o) => encodeGet(o, get)),
      fixture('get'),
    )
    assert.deepEqual(
      encoded((o) => encodeGet(o, {topic: 'test', group: 'grp', partition: 0, offset: Number.MAX_SAFE_INTEGER, maxSize: 1048576, opaque: 5, maxWaitMs: 1000})),
      fixture('get-long-poll'),
    )
    assert.deepEqual(
      encoded((o) => encodeOffset(o, {topic: 'test', group: 'grp', partition: 0, offset: 10, opaque: -2147483645})),
      fixture('offset'),
    )
    assert.deepEqual(
      encoded((o) => encodeStats(o, {item: '', opaque: 8})),
      fixture('stats-empty-item'),
    )
    assert.deepEqual(
      encoded((o) => encodeStats(o, {item: 'topics', opaque: 8})),
      fixture('stats-topics'),
    )
    assert.deepEqual(
      encoded((o) => encodeVersion(o, {opaque: 7})),
      fixture('version'),
    )
    assert.deepEqual(
      encoded((o) => encodeQuit(o)),
      fixture('quit'),
    )
    for (const name of ['transaction-begin', 'transaction-xa-prepare', 'transaction-recover']) {
      const tx = requests(fixture(name))[0]
      assert.ok(tx.type === 'transaction')
      assert.deepEqual(
        encoded((o) => encodeTransaction(o, tx)),
        fixture(name),
        name,
      )
    }
    const sync = requests(fixture('sync'))[0]
    assert.ok(sync.type === 'sync')
    assert.deepEqual(
      encoded((o) => encodeSync(o, sync)),
      fixture('sync'),
    )
    assert.deepEqual(
      encoded((o) => encodeResult(o, 200, -2147483648, '4194316293 0 0')),
      fixture('result-put'),
    )
    assert.deepEqual(
      encoded((o) => encodeResult(o, 200, 7, Buffer.from('1.4.6.2'))),
      fixture('result-version'),
    )
    assert.deepEqual(
      encoded((o) => encodeResult(o, 404, 3)),
      fixture('result-not-found'),
    )
    assert.deepEqual(
      encoded((o) => encodeValue(o, -2147483646, fixture('record-hello'))),
      fixture('value'),
    )
  })

  it('counts UTF-8 bytes in result bodies', () => {
    const bytes = encoded((o) => encodeResult(o, 500, 1, 'größe'))
    assert.equal(bytes.toString(), 'result 500 7 1\r\ngröße')
  })
})

describe('reading a body in place (bodyRoom / bodyFilled)', () => {
  it('assembles a body read straight into the views bodyRoom() returns, in the memory allocateBody gave', () => {
    const body = Buffer.from(Array.from({length: 70_000}, (_, i) => i % 251))
    const out = new OutputBuffer()
    encodeValue(out, 7, body)
    encodeResult(out, 200, 8, 'ok')
    const wire = out.take()
    const decoder = createResponseDecoder()
    const given: Buffer[] = []
    decoder.allocateBody = (bytes) => {
      const b = Buffer.alloc(bytes)
      given.push(b)
      return b
    }
    assert.equal(decoder.bodyRoom(), undefined, 'no room before a body starts')
    // The header and the first 1000 bytes arrive as a read; the rest goes into the room in pieces.
    const headerEnd = wire.indexOf('\r\n') + 2
    decoder.push(wire.subarray(0, headerEnd + 1000))
    assert.equal(decoder.next(), undefined)
    let pos = headerEnd + 1000
    for (const piece of [1, 4096, 30_000]) {
      const room = decoder.bodyRoom()!
      assert.equal(room.length, headerEnd + body.length - pos, 'the room is what is left of the body')
      wire.copy(room, 0, pos, pos + piece)
      decoder.bodyFilled(piece)
      pos += piece
      assert.equal(decoder.next(), undefined)
    }
    const room = decoder.bodyRoom()!
    wire.copy(room, 0, pos, headerEnd + body.length)
    assert.throws(() => decoder.bodyFilled(room.length + 1), /bytes of room/)
    decoder.bodyFilled(room.length)
    assert.equal(decoder.bodyRoom(), undefined, 'no room once the body is whole')
    const frame = decoder.next() as ResponseFrame & {body: Buffer}
    assert.equal(frame.type, 'value')
    assert.deepEqual(frame.body, body)
    assert.equal(frame.body.buffer, given[0].buffer, 'the body is the memory allocateBody gave')
    decoder.push(wire.subarray(headerEnd + body.length))
    assert.equal(decoder.next()?.opaque, 8, 'the next frame follows as usual')
  })
})
