/**
 * OutputBuffer#writeInt and intTextLength: exactly String(n) for every number the encoders
 * write (uint32 and negative int32 fast paths, safe integers, and the rest).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {DecimalText, intTextLength, OutputBuffer} from '../../src/protocol/output-buffer.js'
import {messageIdOfHalves, writeMessageIdDecimal} from '../../src/protocol/message-id.js'

describe('OutputBuffer#writeInt', () => {
  it('writes String(n) and intTextLength(n) counts it', () => {
    const values = [
      0,
      -0,
      1,
      9,
      10,
      99,
      100,
      101,
      12345,
      99999,
      100000,
      2147483647,
      2147483648,
      4294967295,
      4294967296,
      -1,
      -10,
      -2147483648,
      -4294967295,
      -4294967296,
      2 ** 53 - 1,
      -(2 ** 53 - 1),
      2 ** 53,
      1.5,
      NaN,
      Infinity,
    ]
    let seed = 7
    for (let i = 0; i < 5000; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0
      values.push(seed, -seed, seed * 1000 + (i % 1000), seed >>> (i % 32))
    }
    const out = new OutputBuffer(8)
    const expected: string[] = []
    for (const n of values) {
      out.writeInt(n)
      out.writeByte(0x20)
      expected.push(String(n))
      assert.equal(intTextLength(n), String(n).length, String(n))
    }
    assert.equal(out.take().toString('latin1'), expected.map((e) => `${e} `).join(''))
  })
})

describe('OutputBuffer#take', () => {
  it('hands over what was written, small and large, and later writes never change a taken buffer', () => {
    const out = new OutputBuffer()
    const taken: Array<[Buffer, Buffer]> = []
    for (const size of [1, 100, 5000, 64 * 1024 - 1, 64 * 1024, 300_000, 2 * 1024 * 1024, 10, 200_000]) {
      const bytes = Buffer.alloc(size, size % 251)
      out.writeBytes(bytes)
      taken.push([out.take(), bytes])
      assert.equal(out.byteLength, 0)
      out.writeBytes(Buffer.alloc(size, 7)) // written over whatever the buffer was
      out.take()
    }
    for (const [got, want] of taken) assert.ok(got.equals(want), `${want.length} bytes as written`)
  })
})

describe('DecimalText', () => {
  function text(t: DecimalText): string {
    // At an odd position: setTo stores words.
    const buf = new Uint8Array(40)
    const end = t.setTo(new DataView(buf.buffer), 3)
    assert.equal(end - 3, t.byteLength)
    return Buffer.from(buf.subarray(3, end)).toString('latin1')
  }

  it('is String(n) after every step: up, down, across zero and digit counts, and jumps', () => {
    const t = new DecimalText()
    const walk = [
      0,
      1,
      9,
      10,
      99,
      100,
      999,
      1000,
      1001,
      999,
      100,
      10,
      9,
      1,
      0,
      -1,
      -9,
      -10,
      -1000,
      -999,
      -1,
      5,
      120,
      240,
      999_880,
      1_000_000,
      1_000_120,
      2 ** 40,
      2 ** 40 + 120,
      -2147483648,
      -2147483647,
      -2147483646,
      4294967295,
      4294967296,
      2 ** 53 - 1,
      2 ** 53 - 2,
      7,
    ]
    let seed = 3
    let n = 0
    for (let i = 0; i < 20_000; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0
      const kind = seed % 4
      n = kind === 0 ? n + (seed % 200) : kind === 1 ? n - (seed % 200) : kind === 2 ? n + (seed % 2_000_000) - 1_000_000 : n + 1
      walk.push(n)
    }
    for (const v of walk) {
      t.set(v)
      assert.equal(text(t), String(v))
    }
  })

  it('follows message ids by their halves, as BigInt#toString', () => {
    const t = new DecimalText()
    const ids: Array<[number, number]> = [
      [0, 0],
      [0, 1],
      [0, 9],
      [0, 10],
      [232_831, 4_294_967_290],
      [232_831, 4_294_967_295],
      [232_832, 0],
      [232_832, 999_999],
      [232_832, 1_000_000],
      [232_832, 1_000_500],
      [232_831, 5],
      [-1, 0xffffffff],
      [-1, 0xfffffff0],
      [-5, 3],
      [-5, 4],
      [0x7fffffff, 0xfffffff0],
      [0x7fffffff, 0xffffffff],
    ]
    for (const [high, low] of ids) {
      t.setIdHalves(high, low, writeMessageIdDecimal)
      assert.equal(text(t), messageIdOfHalves(high, low).toString(), `${high} ${low}`)
    }
  })
})
