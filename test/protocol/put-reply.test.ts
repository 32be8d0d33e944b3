/**
 * PutReplyReader reads a put reply body "<msgId> <partition> <offset>" from its bytes; it must
 * agree with reading the text (BigInt/Number) on every well-formed body, including ids whose
 * leading digits repeat or change from one reply to the next (it keeps their bigint), the
 * transactional offset -1 and offsets of 16 digits, and refuse everything else.
 * parsePutReply, which every reader of a put reply uses, reads the same.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {rng} from '../helpers/random.js'
import {parsePutReply, PutReplyReader} from '../../src/protocol/commands/put-reply.js'

describe('PutReplyReader', () => {
  it('reads what BigInt and Number read, over random ids (runs of repeating leading digits, changes, signs)', () => {
    const random = rng(14)
    const reader = new PutReplyReader()
    let id = 7205759403792793600n
    for (let i = 0; i < 20_000; i++) {
      const r = random()
      if (r < 0.7)
        id += BigInt(Math.floor(random() * 3000)) // meta's ids step a little
      else if (r < 0.8) id = BigInt(Math.floor(random() * 2 ** 31)) * BigInt(Math.floor(random() * 2 ** 32))
      else if (r < 0.85) id = -id
      else if (r < 0.9)
        id = BigInt(Math.floor(random() * 1e9)) // no leading part
      else if (r < 0.95)
        id = 999_999_999n + BigInt(Math.floor(random() * 3)) // across 10^9
      else id = [0n, 9223372036854775807n, -9223372036854775808n, 1_000_000_000n][Math.floor(random() * 4)]
      const partition = Math.floor(random() * 100)
      const offset = random() < 0.5 ? Math.floor(random() * 2 ** 40) : Math.floor(random() * 1000)
      const text = `${id} ${partition} ${offset}`
      assert.equal(reader.read(Buffer.from(text)), true, text)
      assert.equal(reader.id, id, text)
      assert.equal(reader.partition, partition, text)
      assert.equal(reader.offset, offset, text)
    }
  })

  it('refuses malformed bodies', () => {
    const reader = new PutReplyReader()
    for (const text of [
      '',
      ' ',
      '1',
      '1 2',
      '1 2 ',
      '1  2 3',
      'a 2 3',
      '1 2 3 4',
      '-',
      '- 2 3',
      '1 -2 3',
      '1 2 -3',
      '1 2 -0',
      '1 2 --1',
      '1 -1 -1',
      '1 2147483648 0',
      '1 2 9007199254740992',
      '1 2 12345678901234567',
      '12345678901234567890 0 0',
      '1 1234567890123456 0',
      '1 2 3\r\n',
    ]) {
      assert.equal(reader.read(Buffer.from(text)), false, JSON.stringify(text))
    }
  })

  it('reads the transactional offset -1 and offsets past 15 digits (up to 2^53 - 1)', () => {
    const reader = new PutReplyReader()
    for (const [text, id, partition, offset] of [
      ['7205759403792793600 3 -1', 7205759403792793600n, 3, -1],
      ['-5 0 9007199254740991', -5n, 0, 9007199254740991],
      ['1 2147483647 1234567890123456', 1n, 2147483647, 1234567890123456],
    ] as const) {
      assert.equal(reader.read(Buffer.from(text)), true, text)
      assert.deepEqual({id: reader.id, partition: reader.partition, offset: reader.offset}, {id, partition, offset}, text)
      assert.deepEqual(parsePutReply(text), {id, partition, offset}, text)
    }
    assert.equal(parsePutReply('1 2 x'), undefined)
  })
})
