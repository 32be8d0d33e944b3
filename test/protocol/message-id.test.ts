/**
 * Message ids: MetaQ's 42/10/12-bit layout on a wall clock, strictly increasing, and never
 * failing when the clock moves backwards or a millisecond's 4096 sequence numbers run out.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {
  META_EPOCH_MS,
  MessageIdGenerator,
  makeMessageId,
  messageIdBrokerId,
  messageIdTimestamp,
  messageIdTimestampAt,
  writeMessageIdDecimal,
  messageIdOfHalves,
  messageIdTimestampOfHalves,
  encodePutResult,
  encodePutResultOfHalves,
  OutputBuffer,
} from '../../src/protocol/index.js'

describe('MessageIdGenerator', () => {
  it('lays out time, broker id and sequence as MetaQ does', () => {
    const now = META_EPOCH_MS + 1000
    const gen = new MessageIdGenerator(5, () => now)
    assert.equal(gen.next(), (1000n << 22n) | (5n << 12n) | 0n)
    assert.equal(gen.next(), (1000n << 22n) | (5n << 12n) | 1n)
    const id = gen.next()
    assert.equal(messageIdTimestamp(id), now)
    assert.equal(messageIdBrokerId(id), 5)
  })

  it('keeps issuing increasing ids when the clock moves backwards', () => {
    let now = Date.UTC(2026, 0, 1)
    const gen = new MessageIdGenerator(1, () => now)
    const ids = [gen.next()]
    now -= 60_000
    for (let i = 0; i < 10; i++) ids.push(gen.next())
    now += 120_000
    ids.push(gen.next())
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i] > ids[i - 1], `id ${i} increases`)
    assert.equal(messageIdTimestamp(ids[10]), Date.UTC(2026, 0, 1), 'stays on the last timestamp')
  })

  it('issueAfter(ms) puts every later id above any id stamped ms (a clock behind the log), and is a no-op for the past', () => {
    const now = Date.UTC(2026, 0, 1)
    const gen = new MessageIdGenerator(2, () => now)
    gen.issueAfter(now + 60_000)
    const first = gen.next()
    assert.ok(first > makeMessageId(now + 60_000, 1023, 4095), 'above the highest id stamped then')
    assert.equal(messageIdTimestamp(first), now + 60_001)
    assert.ok(gen.next() > first)
    const fresh = new MessageIdGenerator(2, () => now)
    fresh.issueAfter(now - 60_000)
    assert.equal(messageIdTimestamp(fresh.next()), now, 'the clock is ahead: ids follow it')
  })

  it('borrows the next millisecond after 4096 ids in one millisecond', () => {
    const now = Date.UTC(2026, 0, 1)
    const gen = new MessageIdGenerator(0, () => now)
    let last = -1n
    for (let i = 0; i < 5000; i++) {
      const id = gen.next()
      assert.ok(id > last)
      last = id
    }
    assert.equal(messageIdTimestamp(last), now + 1)
  })

  it('writeNext() writes the same id next() would, without a bigint', () => {
    const now = Date.UTC(2030, 5, 6, 7, 8, 9, 123)
    const a = new MessageIdGenerator(1023, () => now)
    const b = new MessageIdGenerator(1023, () => now)
    const buf = Buffer.alloc(8)
    for (let i = 0; i < 3; i++) {
      const ms = b.writeNext(buf, 0)
      assert.equal(buf.readBigInt64BE(0), a.next())
      assert.equal(ms, now)
      assert.equal(messageIdTimestampAt(buf, 0), now)
    }
  })

  it('refuses a broker id outside 0..1023', () => {
    assert.throws(() => new MessageIdGenerator(1024), /invalid broker id "1024": expected an integer 0..1023/)
    assert.throws(() => new MessageIdGenerator(-1), RangeError)
  })

  it('makeMessageId() round-trips through its accessors', () => {
    const id = makeMessageId(Date.UTC(2027, 1, 2), 77, 4095)
    assert.equal(messageIdTimestamp(id), Date.UTC(2027, 1, 2))
    assert.equal(messageIdBrokerId(id), 77)
    assert.equal(id & 0xfffn, 4095n)
  })
})

describe('message id halves (the broker put path, no bigint)', () => {
  function decimal(high: number, low: number): string {
    const digits = new Uint8Array(24)
    const end = writeMessageIdDecimal(digits, 2, high, low)
    return Buffer.from(digits.subarray(2, end)).toString('latin1')
  }

  it('nextHalves issues the same ids as next(), with the same timestamps', () => {
    let now = Date.UTC(2026, 11, 3, 6, 0, 0)
    const a = new MessageIdGenerator(77, () => now)
    const b = new MessageIdGenerator(77, () => now)
    for (let i = 0; i < 10_000; i++) {
      if (i % 1000 === 999) now += 3
      if (i === 5000) now -= 50 // the clock going back: both stay on the last timestamp
      const ms = a.nextHalves()
      const id = b.next()
      assert.equal(messageIdOfHalves(a.high, a.low), id)
      assert.equal(messageIdTimestampOfHalves(a.high, a.low), messageIdTimestamp(id))
      assert.equal(ms, messageIdTimestamp(id))
      assert.equal(decimal(a.high, a.low), id.toString())
    }
  })

  it('writes the decimal text of every int64 exactly as BigInt#toString', () => {
    const edges: Array<[number, number]> = [
      [0, 0],
      [0, 1],
      [0, 999_999],
      [0, 1_000_000],
      [0, 0xffffffff],
      [1, 0],
      [999_999, 0xffffffff],
      [1_000_000, 0],
      [0x7fffffff, 0xffffffff],
      [-1, 0xffffffff],
      [-0x80000000, 0],
      [-1, 0],
      [232_831, 1_783_793_664],
    ]
    let seed = 12345
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0)
    for (let i = 0; i < 20_000; i++) edges.push([random() | 0, random()])
    for (const [high, low] of edges) assert.equal(decimal(high, low), messageIdOfHalves(high, low).toString(), `${high} ${low}`)
  })

  it('encodePutResultOfHalves writes the same reply as encodePutResult', () => {
    const gen = new MessageIdGenerator(3)
    for (const [partition, offset, opaque] of [
      [0, 0, -5],
      [7, 123_456_789, -2147483648],
      [1023, 2 ** 40 + 17, 4294967295],
      [99, 4294967295, 0],
    ]) {
      gen.nextHalves()
      const a = new OutputBuffer()
      const b = new OutputBuffer()
      encodePutResultOfHalves(a, opaque, gen.high, gen.low, partition, offset)
      encodePutResult(b, opaque, messageIdOfHalves(gen.high, gen.low), partition, offset)
      assert.equal(a.take().toString('latin1'), b.take().toString('latin1'))
    }
  })

  it('encodePutResultOfHalves agrees with encodePutResult over random walks and edges of opaque and offset', () => {
    const gen = new MessageIdGenerator(5)
    let seed = 777
    const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296
    const opaques = [0, 1, 9, 10, -1, -9, -10, 99_999, 2147483647, -2147483648, 4294967295, -4294967295, -0]
    const offsets = [0, 1, 9, 10, 4294967295, 4294967296, 2 ** 32 + 99_999_999, 2 ** 32 + 100_000_000, 10 ** 12, Number.MAX_SAFE_INTEGER]
    let opaque = -3
    let offset = 4294967000
    for (let i = 0; i < 5000; i++) {
      gen.nextHalves()
      if (random() < 0.05) opaque = opaques[Math.floor(random() * opaques.length)]
      else opaque += 1
      if (random() < 0.05) offset = offsets[Math.floor(random() * offsets.length)]
      else offset += Math.floor(random() * 2000)
      if (offset > Number.MAX_SAFE_INTEGER) offset = 0
      const partition = random() < 0.9 ? 3 : Math.floor(random() * 4294967296)
      const a = new OutputBuffer(8)
      const b = new OutputBuffer(8)
      encodePutResultOfHalves(a, opaque, gen.high, gen.low, partition, offset)
      encodePutResult(b, opaque, messageIdOfHalves(gen.high, gen.low), partition, offset)
      assert.equal(a.take().toString('latin1'), b.take().toString('latin1'), `${opaque} ${partition} ${offset}`)
    }
    // Many replies in one buffer (word stores may write past a reply's end: the next one
    // overwrites them), taken at random points (a take of 64 KiB or more swaps the buffer).
    const many = new OutputBuffer(8)
    let expected = ''
    for (let i = 0; i < 20_000; i++) {
      gen.nextHalves()
      opaque = random() < 0.05 ? opaques[Math.floor(random() * opaques.length)] : opaque + 1
      offset = random() < 0.02 ? offsets[Math.floor(random() * offsets.length)] : offset + 120
      if (offset > Number.MAX_SAFE_INTEGER) offset = 0
      const partition = random() < 0.8 ? Math.floor(random() * 10) : Math.floor(random() * 4294967296)
      encodePutResultOfHalves(many, opaque, gen.high, gen.low, partition, offset)
      const b = new OutputBuffer(8)
      encodePutResult(b, opaque, messageIdOfHalves(gen.high, gen.low), partition, offset)
      expected += b.take().toString('latin1')
      if (random() < 0.001) {
        assert.equal(many.take().toString('latin1'), expected)
        expected = ''
      }
    }
    assert.equal(many.take().toString('latin1'), expected)
    // Short ids (a body under 10 bytes), partitions around 10.
    for (const [low, partition, offset] of [
      [0, 0, 0],
      [5, 3, 7],
      [9, 9, 99],
      [12, 10, 5],
      [7, 123, 4294967296],
    ]) {
      const a = new OutputBuffer(8)
      const b = new OutputBuffer(8)
      encodePutResultOfHalves(a, 1, 0, low, partition, offset)
      encodePutResult(b, 1, BigInt(low), partition, offset)
      assert.equal(a.take().toString('latin1'), b.take().toString('latin1'), `${low} ${partition} ${offset}`)
    }
  })
})
