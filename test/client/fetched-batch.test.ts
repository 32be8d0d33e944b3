/**
 * A fetched batch keeps the get's body and makes messages only when asked: each lazy message
 * equals the eager decoding of its record (decodeMessageSet) field by field, the tail
 * renderers read the same bytes straight from the body as from message objects, and the check
 * of the records still stops at a damaged CRC or attribute block.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {checkRecords, FetchedBatch, MessageRecords, type RecordSpan} from '../../src/client/fetched-batch.js'
import type {Message} from '../../src/client/types.js'
import {compileFormat} from '../../src/cli/message-format.js'
import {encodeEnvelopes, toEnvelope} from '../../src/cli/envelope.js'
import {messageIdTimestamp} from '../../src/protocol/message-id.js'
import {decodeMessageSet, encodePayload, encodeRecord} from '../../src/protocol/message-set.js'

const BASE = 1000

/** A batch of a plain body at offset BASE, as the fetcher makes it. */
function fetched(set: Buffer, skipBelow = -1): FetchedBatch {
  const {span, bytesConsumed, error} = checkRecords(set, {baseOffset: BASE}, skipBelow)
  assert.equal(error, undefined)
  assert.ok(span !== undefined)
  return new FetchedBatch('t', 0, 3, 1, BASE + bytesConsumed, set, span)
}

/** Plain objects with the same fields, as a caller-made Message would be. */
function plain(messages: readonly Message[]): Message[] {
  return messages.map((m) => ({
    topic: m.topic,
    partition: m.partition,
    brokerId: m.brokerId,
    offset: m.offset,
    nextOffset: m.nextOffset,
    id: m.id,
    flag: m.flag,
    attribute: m.attribute,
    data: Buffer.from(m.data),
    timestampMs: m.timestampMs,
  }))
}

const withAttribute = encodePayload(Buffer.from('second'), 'attr')
const emptyAttribute = encodePayload(Buffer.from('fourth'), '')
const set = Buffer.concat([
  encodeRecord(7n, 0, Buffer.from('first line')),
  encodeRecord(8n, withAttribute.flag, withAttribute.payload),
  encodeRecord(9n, 0, Buffer.alloc(0)),
  encodeRecord(10n, emptyAttribute.flag | 4, emptyAttribute.payload),
  encodeRecord(7177218123456789012n, 0, Buffer.alloc(300, 'z')),
])

describe('FetchedBatch messages', () => {
  it('equal the eager decoding of each record, field by field', () => {
    const batch = fetched(set)
    const eager = decodeMessageSet(set, {baseOffset: BASE}).messages
    assert.equal(batch.count, 5)
    assert.equal(batch.messages.length, eager.length)
    for (const [i, m] of batch.messages.entries()) {
      const e = eager[i]
      assert.deepEqual(
        [m.topic, m.partition, m.brokerId, m.offset, m.nextOffset, m.id, m.flag, m.attribute, m.data, m.timestampMs],
        ['t', 3, 0, e.offset, e.offset + e.size, e.id, e.flag, e.attribute, e.data, messageIdTimestamp(e.id)],
        `message ${i}`,
      )
    }
    assert.deepEqual(
      batch.messages.map((m) => m.attribute),
      [undefined, 'attr', undefined, '', undefined],
    )
    assert.equal(batch.nextOffset, BASE + set.length)
    assert.equal(batch.lastIdText(), '7177218123456789012')
  })

  it('leave out the records below skipBelow', () => {
    const second = decodeMessageSet(set, {baseOffset: BASE}).messages[2].offset
    const batch = fetched(set, second)
    assert.deepEqual(
      batch.messages.map((m) => m.id),
      [9n, 10n, 7177218123456789012n],
    )
  })

  it('read a filtered body: each record preceded by its offset', () => {
    const records = decodeMessageSet(set, {baseOffset: BASE}).messages
    const offsetOf = (n: number) => {
      const word = Buffer.alloc(8)
      word.writeBigInt64BE(BigInt(n))
      return word
    }
    // next, then (offset, record) for the 2nd and 4th records.
    const body = Buffer.concat([
      offsetOf(5000),
      offsetOf(records[1].offset),
      set.subarray(records[1].offset - BASE, records[2].offset - BASE),
      offsetOf(records[3].offset),
      set.subarray(records[3].offset - BASE, records[4].offset - BASE),
    ])
    const first = 16
    const last = 16 + records[1].size + 8
    const span: RecordSpan = {baseOffset: undefined, first, last, count: 2}
    const batch = new FetchedBatch('t', 0, 3, 1, 5000, body, span)
    assert.deepEqual(
      batch.messages.map((m) => [m.offset, m.nextOffset, m.id, m.attribute, m.data.toString()]),
      [
        [records[1].offset, records[1].offset + records[1].size, 8n, 'attr', 'second'],
        [records[3].offset, records[3].offset + records[3].size, 10n, '', 'fourth'],
      ],
    )
  })

  it('are rendered from the body as from message objects: -f formats and -J envelopes', () => {
    const format = compileFormat('%o %S %i %a|%s\\n')
    assert.equal(format.format(fetched(set).records(3)).toString(), '1000 10 7 |first line\n1030 6 8 attr|second\n1064 0 9 |\n')
    assert.deepEqual(format.format(fetched(set).records()), format.format(new MessageRecords(plain(fetched(set).messages))))
    // Payloads on every path of the envelope: plain ASCII, UTF-8, to escape, not UTF-8.
    const mixed = Buffer.concat([
      set,
      ...['héllo', 'a "quoted"\\ line\n', '\u0001'].map((t, i) => encodeRecord(BigInt(20 + i), 0, Buffer.from(t))),
      encodeRecord(30n, 0, Buffer.from([0xff, 0xfe, 0x41])),
      encodeRecord(-5n, 0, Buffer.from('negative id')),
    ])
    assert.deepEqual(encodeEnvelopes(fetched(mixed).records()), encodeEnvelopes(new MessageRecords(plain(fetched(mixed).messages))))
    assert.equal(
      encodeEnvelopes(fetched(mixed).records()).toString(),
      fetched(mixed)
        .messages.map((m) => `${JSON.stringify(toEnvelope(m))}\n`)
        .join(''),
    )
  })

  it('a cursor limited to N records stops at the Nth, its offsets then those of that record', () => {
    const records = fetched(set).records(2)
    assert.equal(records.count, 2)
    const seen: number[] = []
    while (records.next()) seen.push(records.offset)
    assert.deepEqual(seen, [1000, 1030])
    assert.equal(records.nextOffset, 1064)
  })
})

describe('checkRecords()', () => {
  it('stops at a damaged CRC, keeping the good records before it', () => {
    const damaged = Buffer.from(set)
    const third = decodeMessageSet(set, {baseOffset: BASE}).messages[2].offset - BASE
    damaged[third + 4 + 3] ^= 1 // the stored checksum of the third record
    const {span, bytesConsumed, error} = checkRecords(damaged, {baseOffset: BASE})
    assert.equal(error?.code, 'INVALID_MESSAGE')
    assert.match(error!.message, /checksum mismatch at offset 1064/)
    assert.equal(bytesConsumed, third)
    assert.equal(span?.count, 2)
    // A flipped payload byte is caught the same way.
    const payload = Buffer.from(set)
    payload[20 + 2] ^= 0x40
    assert.match(checkRecords(payload, {baseOffset: BASE}).error!.message, /checksum mismatch at offset 1000/)
    assert.equal(checkRecords(payload, {baseOffset: BASE}).span, undefined)
  })

  it('stops at an attribute block that does not fit, as decodeMessageSet does', () => {
    const bad = Buffer.alloc(8)
    bad.writeInt32BE(50, 0) // an attribute of 50 bytes in a payload of 8
    const damaged = Buffer.concat([encodeRecord(1n, 0, Buffer.from('ok')), encodeRecord(2n, 1, bad)])
    const checked = checkRecords(damaged, {baseOffset: 0})
    const eager = decodeMessageSet(damaged)
    assert.equal(checked.error?.message, eager.error?.message)
    assert.match(checked.error!.message, /invalid attribute length 50 in a payload of 8 bytes at offset 22/)
    assert.equal(checked.span?.count, 1)
  })
})
