/**
 * MetaQ's stored record format: encoding matches the committed bytes, attributes use a
 * big-endian length prefix, decoding stops at a partial tail and reports a bad CRC as a
 * typed error.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {checksum, decodeMessageSet, decodePayload, encodePayload, encodeRecord, scanRecords} from '../../src/protocol/index.js'
import {walkMessageSet, wholeRecordsEnd} from '../../src/protocol/message-set.js'
import {fixture} from './fixtures.js'

describe('checksum()', () => {
  it('is zlib crc32 masked to 31 bits (spec examples)', () => {
    assert.equal(checksum(Buffer.from('hello')), 907060870)
    assert.equal(checksum(Buffer.from('FFFF')), 0x52b025a9)
    assert.equal(checksum(Buffer.from('\x00\x00\x00\x03AAAFFFF', 'latin1')), 0x55179a47)
  })
})

describe('encodeRecord()', () => {
  it('writes the 20-byte big-endian header followed by the payload', () => {
    assert.deepEqual(encodeRecord(1n, 0, Buffer.from('hello')), fixture('record-hello'))
    const {payload, flag} = encodePayload(Buffer.from('FFFF'), 'AAA')
    assert.equal(flag, 1)
    assert.deepEqual(encodeRecord(2n, flag, payload), fixture('record-attribute'))
  })

  it('writes negative ids as signed int64', () => {
    const record = encodeRecord(-5n, 0, Buffer.from('x'))
    assert.equal(record.readBigInt64BE(8), -5n)
  })
})

describe('encodePayload() / decodePayload()', () => {
  it('round-trips an attribute, including the empty string', () => {
    for (const attribute of ['AAA', '', 'ünïcode']) {
      const {payload, flag} = encodePayload(Buffer.from('data'), attribute, 6)
      assert.equal(flag, 7, 'bit 0 set, other bits kept')
      assert.deepEqual(decodePayload(payload, flag), {attribute, data: Buffer.from('data')})
    }
  })

  it('leaves a payload without attribute untouched and clears bit 0', () => {
    const {payload, flag} = encodePayload(Buffer.from('plain'), undefined, 3)
    assert.equal(flag, 2)
    assert.deepEqual(decodePayload(payload, flag), {attribute: undefined, data: Buffer.from('plain')})
  })

  it('rejects an attribute block that does not fit', () => {
    const bad = Buffer.from([0, 0, 0, 9, 65])
    assert.throws(() => decodePayload(bad, 1), /invalid attribute length 9 in a payload of 5 bytes/)
  })
})

describe('decodeMessageSet()', () => {
  const set = Buffer.concat([fixture('record-hello'), fixture('record-attribute')])

  it('decodes whole records with absolute offsets', () => {
    const {messages, bytesConsumed, error} = decodeMessageSet(set, {baseOffset: 1000})
    assert.equal(error, undefined)
    assert.equal(bytesConsumed, set.length)
    assert.deepEqual(
      messages.map((m) => [m.offset, m.size, m.id, m.attribute, m.data.toString()]),
      [
        [1000, 25, 1n, undefined, 'hello'],
        [1025, 31, 2n, 'AAA', 'FFFF'],
      ],
    )
  })

  it('stops silently at a partial trailing record', () => {
    for (let cut = 0; cut < 31; cut++) {
      const {messages, bytesConsumed, error} = decodeMessageSet(set.subarray(0, 25 + cut))
      assert.equal(error, undefined)
      assert.equal(messages.length, 1)
      assert.equal(bytesConsumed, 25)
    }
  })

  it('reports a checksum mismatch as INVALID_MESSAGE after the good records', () => {
    const damaged = Buffer.from(set)
    damaged[damaged.length - 1] ^= 0xff
    const {messages, bytesConsumed, error} = decodeMessageSet(damaged, {baseOffset: 100})
    assert.equal(messages.length, 1)
    assert.equal(bytesConsumed, 25)
    assert.equal(error?.code, 'INVALID_MESSAGE')
    assert.equal(error?.message, 'checksum mismatch at offset 125')
  })

  it('rejects a payload longer than the client limit', () => {
    const big = encodeRecord(1n, 0, Buffer.alloc(100))
    const {messages, error} = decodeMessageSet(big, {maxPayloadBytes: 99})
    assert.equal(messages.length, 0)
    assert.equal(error?.message, 'invalid message length 100 at offset 0')
  })
})

describe('scanRecords()', () => {
  it('returns the end of the last valid record and why it stopped', () => {
    const set = Buffer.concat([fixture('record-hello'), fixture('record-attribute')])
    const seen: number[] = []
    assert.deepEqual(
      scanRecords(set, 0, (pos) => seen.push(pos)),
      {end: 56, stop: 'end'},
    )
    assert.deepEqual(seen, [0, 25])
    assert.deepEqual(scanRecords(set.subarray(0, 40)), {end: 25, stop: 'partial'})
    const flipped = Buffer.from(set)
    flipped[30] ^= 1
    assert.deepEqual(scanRecords(flipped), {end: 25, stop: 'bad-checksum'})
    const negative = Buffer.concat([fixture('record-hello'), Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.alloc(16)])
    assert.deepEqual(scanRecords(negative), {end: 25, stop: 'bad-length'})
  })
})

describe('wholeRecordsEnd()', () => {
  it('ends where walkMessageSet does on good sets, by lengths alone, and says -1 at a bad length', () => {
    const set = Buffer.concat([fixture('record-hello'), fixture('record-attribute')])
    assert.equal(wholeRecordsEnd(set), 56)
    assert.equal(wholeRecordsEnd(set.subarray(0, 40)), 25)
    assert.equal(wholeRecordsEnd(set.subarray(0, 19)), 0)
    assert.equal(wholeRecordsEnd(Buffer.alloc(0)), 0)
    const flipped = Buffer.from(set)
    flipped[30] ^= 1
    assert.equal(wholeRecordsEnd(flipped), 56, 'no checksum: a payload bit flip does not change where records end')
    const negative = Buffer.concat([fixture('record-hello'), Buffer.from([0xff, 0xff, 0xff, 0xff]), Buffer.alloc(16)])
    assert.equal(wholeRecordsEnd(negative), -1)
    assert.equal(wholeRecordsEnd(set, 4), -1, 'a length over the limit')
  })

  it('agrees with walkMessageSet on 2,000 random sets cut anywhere', () => {
    let seed = 12345
    const random = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0
      return seed % n
    }
    for (let round = 0; round < 2000; round++) {
      const records: Buffer[] = []
      const count = random(6)
      for (let i = 0; i < count; i++) {
        const payload = Buffer.alloc(random(300), random(256))
        records.push(encodeRecord(BigInt(i), 0, payload))
      }
      const whole = Buffer.concat(records)
      const cut = whole.subarray(0, random(whole.length + 1))
      const limit = random(4) === 0 ? random(300) : undefined
      const walked = walkMessageSet(cut, {maxPayloadBytes: limit}, () => {})
      const expected = walked.error === undefined ? walked.bytesConsumed : -1
      assert.equal(wholeRecordsEnd(cut, limit), expected, `round ${round}`)
    }
  })
})
