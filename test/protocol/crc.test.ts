/**
 * checksum() computes small inputs in JavaScript and large ones with @node-rs/crc32 (zlib
 * where its binary is missing): all must give
 * zlib's CRC-32 masked to 31 bits, for every length around the switch and any alignment.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {crc32} from 'node:zlib'
import {checksum, checksumOfRangeWords, largeCrc32Implementation} from '../../src/protocol/crc.js'

describe('checksum', () => {
  it('checksum() equals zlib crc32 & 0x7fffffff for lengths 0..400 at every alignment', () => {
    const big = Buffer.alloc(4096)
    let x = 12345
    for (let i = 0; i < big.length; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff
      big[i] = x >>> 16
    }
    for (let length = 0; length <= 400; length++) {
      for (const start of [0, 1, 3, 7, 8]) {
        const view = big.subarray(start, start + length)
        assert.equal(checksum(view), crc32(view) & 0x7fffffff, `length ${length} at ${start}`)
        assert.equal(checksum(new Uint8Array(view)), crc32(view) & 0x7fffffff)
      }
    }
    assert.equal(checksum(Buffer.from('hello')), 907060870)
    assert.equal(checksum(Buffer.alloc(0xff, 0xff)), crc32(Buffer.alloc(0xff, 0xff)) & 0x7fffffff)
  })

  it('checksumOfRangeWords() (word loads through a DataView, record scans) equals zlib for every length and alignment', () => {
    const backing = Buffer.alloc(4096 + 16)
    let x = 777
    for (let i = 0; i < backing.length; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff
      backing[i] = x >>> 16
    }
    for (const shift of [0, 1, 2, 3, 5]) {
      // The scanned buffer itself at an odd place in its ArrayBuffer, as a socket chunk's view is.
      const buf = backing.subarray(shift, shift + 4096)
      const words = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
      for (let length = 0; length <= 400; length += length < 40 ? 1 : 7) {
        for (const start of [0, 1, 3, 4, 7, 9, 4096 - length]) {
          const expected = crc32(buf.subarray(start, start + length)) & 0x7fffffff
          assert.equal(checksumOfRangeWords(buf, words, start, start + length), expected, `length ${length} at ${start}, shift ${shift}`)
        }
      }
    }
  })

  it('large inputs go to @node-rs/crc32 here (installed with the package) and match zlib up to 1 MiB', () => {
    assert.equal(largeCrc32Implementation(), 'node-rs')
    const big = Buffer.alloc(1 << 20)
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24
    for (const length of [161, 1024, 4097, 65536, 1 << 20]) {
      for (const start of [0, 5]) {
        const view = big.subarray(start, Math.min(big.length, start + length))
        assert.equal(checksum(view), crc32(view) & 0x7fffffff, `length ${length} at ${start}`)
        const plain = new Uint8Array(view)
        assert.equal(checksum(plain), crc32(view) & 0x7fffffff, 'a Uint8Array that is not a Buffer')
      }
    }
  })
})
