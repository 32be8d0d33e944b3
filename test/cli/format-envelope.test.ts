/**
 * tail -f format tokens and the -J envelope: rendering, and envelopes decoding back to the
 * same bytes (binary payloads, attributes, empty ones).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type {Message} from '../../src/client/index.js'
import {MessageRecords} from '../../src/client/fetched-batch.js'
import {compileFormat, DEFAULT_FORMAT} from '../../src/cli/message-format.js'
import {decodeEnvelope, encodeEnvelopes, toEnvelope} from '../../src/cli/envelope.js'

function message(data: Buffer | string, fields: Partial<Message> = {}): Message {
  return {
    topic: 'orders',
    partition: 2,
    brokerId: 0,
    offset: 120,
    nextOffset: 150,
    id: 9007199254740993n,
    flag: 0,
    attribute: undefined,
    data: typeof data === 'string' ? Buffer.from(data) : data,
    timestampMs: 1700000000123,
    ...fields,
  }
}

describe('compileFormat()', () => {
  it('renders every token', () => {
    const f = compileFormat('%t|%p|%o|%i|%a|%T|%S|%s|%%|%k\\n')
    const out = f.format(new MessageRecords([message('héllo', {attribute: 'k1'})]))
    assert.equal(out.toString(), 'orders|2|120|9007199254740993|k1|1700000000123|6|héllo|%|k1\n')
  })

  it('prints an empty attribute when there is none, and the default is payload + newline', () => {
    assert.equal(
      compileFormat('[%a]')
        .format(new MessageRecords([message('x')]))
        .toString(),
      '[]',
    )
    assert.equal(
      compileFormat(DEFAULT_FORMAT)
        .format(new MessageRecords([message('a'), message('b')]))
        .toString(),
      'a\nb\n',
    )
  })

  it('renders a batch into one buffer, binary payloads untouched, escapes as bytes', () => {
    const bin = Buffer.from([0, 0xff, 0xfe, 10])
    const big = Buffer.alloc(100_000, 0x61)
    const out = compileFormat('%s\\0\\t\\r\\\\\\x01').format(new MessageRecords([message(bin), message(big)]))
    assert.deepEqual(out, Buffer.concat([bin, Buffer.from('\0\t\r\\\x01', 'latin1'), big, Buffer.from('\0\t\r\\\x01', 'latin1')]))
  })

  it('rejects unknown tokens and escapes, naming them', () => {
    assert.throws(() => compileFormat('%x'), /unknown format token "%x" in "%x"/)
    assert.throws(() => compileFormat('abc%'), /unknown format token "%"/)
    assert.throws(() => compileFormat('\\q'), /invalid escape "\\q"/)
  })
})

describe('JSON envelope', () => {
  it('writes the documented fields, UTF-8 as text and the id as a string', () => {
    const line = encodeEnvelopes(new MessageRecords([message('{"a":1}\n', {attribute: 'key "q"'})])).toString()
    assert.ok(line.endsWith('}\n'))
    assert.deepEqual(JSON.parse(line), {
      topic: 'orders',
      partition: 2,
      offset: 120,
      id: '9007199254740993',
      attribute: 'key "q"',
      timestamp: 1700000000123,
      payload: '{"a":1}\n',
      encoding: 'utf8',
      size: 8,
    })
    assert.deepEqual(JSON.parse(line), toEnvelope(message('{"a":1}\n', {attribute: 'key "q"'})))
  })

  it('uses base64 for payloads that are not valid UTF-8, and null for no attribute', () => {
    const bin = Buffer.from([0xff, 0x00, 0xc3])
    const envelope = JSON.parse(encodeEnvelopes(new MessageRecords([message(bin)])).toString())
    assert.equal(envelope.encoding, 'base64')
    assert.equal(envelope.payload, bin.toString('base64'))
    assert.equal(envelope.attribute, null)
  })

  it('decodes what it encodes, byte for byte', () => {
    const payloads = [
      Buffer.from([0xff, 0xfe, 0, 1, 2]),
      Buffer.from('plain'),
      Buffer.alloc(0),
      Buffer.from('\u2028é\u0000\ud83d\ude00'),
      Buffer.from([0xef, 0xbb, 0xbf, 0x41]),
      Buffer.from('tab\there "quoted" back\\slash \x7f'),
    ]
    for (const data of payloads) {
      for (const attribute of [undefined, '', 'ключ', 'a\nb']) {
        const m = message(data, {attribute})
        const line = encodeEnvelopes(new MessageRecords([m]))
        assert.equal(line.toString(), `${JSON.stringify(toEnvelope(m))}\n`, 'the same text as JSON.stringify')
        const back = decodeEnvelope(line.subarray(0, -1))
        assert.deepEqual(back.payload, data)
        assert.equal(back.attribute, attribute)
        assert.equal(back.topic, 'orders')
        assert.equal(back.partition, 2)
      }
    }
  })

  it('writes a batch as one buffer of lines, one per message', () => {
    const batch = [message('a'), message(Buffer.of(0xff), {topic: 'other', attribute: 'x'}), message('"q"\\')]
    const lines = encodeEnvelopes(new MessageRecords(batch)).toString().split('\n')
    assert.equal(lines.pop(), '')
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      batch.map(toEnvelope),
    )
  })

  it('accepts minimal and hand-written envelopes', () => {
    assert.deepEqual(decodeEnvelope('{"payload":"x"}'), {payload: Buffer.from('x')})
    assert.deepEqual(decodeEnvelope('{"payload":{"a":[1,2]}}').payload, Buffer.from('{"a":[1,2]}'))
    assert.deepEqual(decodeEnvelope('{"payload":null,"attribute":null,"partition":null}'), {payload: Buffer.alloc(0)})
    assert.deepEqual(decodeEnvelope('{}').payload, Buffer.alloc(0))
  })

  it('rejects what it cannot send, saying what is wrong', () => {
    assert.throws(() => decodeEnvelope('not json'), /invalid JSON envelope/)
    assert.throws(() => decodeEnvelope('[1]'), /expected an object/)
    assert.throws(() => decodeEnvelope('{"payload":"x","encoding":"hex"}'), /invalid envelope encoding "hex"/)
    assert.throws(() => decodeEnvelope('{"payload":"**","encoding":"base64"}'), /not base64/)
    assert.throws(() => decodeEnvelope('{"payload":"x","partition":-1}'), /invalid envelope partition -1/)
    assert.throws(() => decodeEnvelope('{"payload":"x","partition":"1"}'), /invalid envelope partition "1"/)
    assert.throws(() => decodeEnvelope('{"payload":"x","attribute":5}'), /invalid envelope attribute 5/)
    assert.throws(() => decodeEnvelope('{"payload":"x","topic":5}'), /invalid envelope topic 5/)
  })
})
