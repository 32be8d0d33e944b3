/**
 * A consumed message's data is a view made on first read, and writers copy it out without
 * one: the same bytes either way, for records with and without an attribute block, and the
 * tail formats render them as before.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {ConsumedMessage, copyMessageData, messageDataLength} from '../../src/client/fetcher.js'
import type {Message} from '../../src/client/types.js'
import {compileFormat} from '../../src/cli/message-format.js'
import {encodeEnvelopes, toEnvelope} from '../../src/cli/envelope.js'
import {encodePayload, encodeRecord, walkMessageSet} from '../../src/protocol/message-set.js'

/** The messages of a set as the fetcher makes them (decodeRecords), at base offset 1000. */
function consume(set: Buffer): ConsumedMessage[] {
  const messages: ConsumedMessage[] = []
  const {error} = walkMessageSet(set, {baseOffset: 1000}, (pos, next, flag, attribute, data) => {
    messages.push(new ConsumedMessage('t', 3, 0, 1000 + pos, 1000 + next, flag, attribute, data, set, pos))
  })
  assert.equal(error, undefined)
  return messages
}

describe('ConsumedMessage data', () => {
  const withAttribute = encodePayload(Buffer.from('second'), 'attr')
  const set = Buffer.concat([
    encodeRecord(7n, 0, Buffer.from('first line')),
    encodeRecord(8n, withAttribute.flag, withAttribute.payload),
    encodeRecord(9n, 0, Buffer.alloc(0)),
  ])
  // A plain object with the same fields, as a caller-made Message would be.
  const plain = (m: ConsumedMessage): Message => ({
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
  })

  it('reads the payload (after any attribute block) and copies the same bytes without a view', () => {
    const messages = consume(set)
    assert.deepEqual(
      messages.map((m) => [m.data.toString(), m.attribute, m.id, messageDataLength(m)]),
      [
        ['first line', undefined, 7n, 10],
        ['second', 'attr', 8n, 6],
        ['', undefined, 9n, 0],
      ],
    )
    for (const m of consume(set)) {
      // Copy before the view was ever made, then compare with it.
      const target = Buffer.alloc(messageDataLength(m) + 4, 0xee)
      assert.equal(copyMessageData(m, target, 2), m.data.length)
      assert.deepEqual(target.subarray(2, 2 + m.data.length), m.data)
      assert.deepEqual([target[0], target[1], target.at(-1)], [0xee, 0xee, 0xee])
    }
    // Longer data is copied another way: the same bytes.
    const [long] = consume(encodeRecord(1n, 0, Buffer.alloc(300, 'z')))
    const target = Buffer.alloc(301)
    assert.equal(copyMessageData(long, target, 1), 300)
    assert.deepEqual(target.subarray(1), Buffer.alloc(300, 'z'))
  })

  it('renders -f formats and -J envelopes exactly as from plain message objects', () => {
    const format = compileFormat('%o %S %s|%a\\n')
    assert.equal(format.format(consume(set)).toString(), '1000 10 first line|\n1030 6 second|attr\n1064 0 |\n')
    assert.deepEqual(format.format(consume(set)), format.format(consume(set).map(plain)))
    // Payloads on every path of the envelope: plain ASCII, UTF-8, to escape, not UTF-8.
    const mixed = Buffer.concat([set, ...['héllo', 'a "quoted"\\ line\n', '\u0001'].map((t, i) => encodeRecord(BigInt(20 + i), 0, Buffer.from(t))), encodeRecord(30n, 0, Buffer.from([0xff, 0xfe, 0x41])), encodeRecord(7177218123456789012n, 0, Buffer.from("big id")), encodeRecord(-5n, 0, Buffer.from("negative id"))])
    assert.deepEqual(encodeEnvelopes(consume(mixed)), encodeEnvelopes(consume(mixed).map(plain)))
    assert.equal(
      encodeEnvelopes(consume(mixed)).toString(),
      consume(mixed)
        .map((m) => `${JSON.stringify(toEnvelope(m))}\n`)
        .join(''),
    )
  })
})
