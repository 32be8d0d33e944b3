/**
 * MetaQ's checksum: CRC-32 (zlib / java.util.zip.CRC32) masked to 31 bits, so it is always a
 * non-negative int32 (docs/protocol.md#stored-records). `checksum('hello') === 907060870`.
 *
 * Every message is checksummed by the producer, again by the broker and again by the
 * consumer, and most are small: for up to JS_MAX_BYTES a table-driven loop (slicing by 8)
 * in JavaScript is about twice as fast as a call into zlib (~115 vs ~200 ns for 100 bytes,
 * measured on Node 20). Larger inputs go to @node-rs/crc32 (crc32fast, SIMD carry-less
 * multiplication: ~170–240 ns for 1 KiB against zlib's ~490–530 ns, 9–12 GB/s against ~4 on
 * 64 KiB, measured here), loaded on the first such input so that commands which only see
 * small messages never load it; where its prebuilt binary is missing (the single executable,
 * an unsupported platform) zlib's crc32 does the same work.
 */
import {createRequire} from 'node:module'

const JS_MAX_BYTES = 160

/** CRC-32 (polynomial 0xEDB88320) tables for slicing by 8: TABLE[k * 256 + b]. */
const TABLE = (() => {
  const table = new Int32Array(8 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  for (let n = 0; n < 256; n++) {
    let c = table[n]
    for (let k = 1; k < 8; k++) {
      c = table[c & 0xff] ^ (c >>> 8)
      table[k * 256 + n] = c
    }
  }
  return table
})()

export function checksum(data: Uint8Array): number {
  return (data.length <= JS_MAX_BYTES ? crc32Small(data) : crc32Large(data)) & 0x7fffffff
}

/**
 * checksum(buf.subarray(start, end)) for a scan over many records of one buffer, without a
 * view per record: `words` is a DataView of all of `buf` (made once per scan), through which
 * the loop reads 4 bytes at a time instead of one (one bounds check and load per word; −10–20 %
 * time per 100 B record, measured). Record scans (put-batch, recovery) and the consumer's walk.
 */
export function checksumOfRangeWords(buf: Uint8Array, words: DataView, start: number, end: number): number {
  return (end - start <= JS_MAX_BYTES ? crc32RangeWords(buf, words, start, end) : crc32Large(buf.subarray(start, end))) & 0x7fffffff
}

type Crc32 = (data: Uint8Array) => number
let large: Crc32 | undefined
let zlib: Crc32 | undefined

/** zlib's crc32, loaded on first use: zlib is a large module that most commands never need. */
function zlibCrc32(): Crc32 {
  return (zlib ??= (createRequire(import.meta.url)('node:zlib') as typeof import('node:zlib')).crc32)
}

function crc32Large(data: Uint8Array): number {
  return (large ??= loadLargeCrc32())(data)
}

/** @node-rs/crc32 when its binary loads, else zlib's crc32. */
function loadLargeCrc32(): Crc32 {
  try {
    const native = (createRequire(import.meta.url)('@node-rs/crc32') as {crc32: (input: Uint8Array) => number}).crc32
    const probe = Buffer.from('123456789')
    if (native(probe) === zlibCrc32()(probe)) return native
  } catch {
    // No binary for this platform, or no node_modules (the single executable): zlib below.
  }
  return zlibCrc32()
}

/** Which implementation checksums inputs over JS_MAX_BYTES (tests, benchmarks). */
export function largeCrc32Implementation(): 'node-rs' | 'zlib' {
  return (large ??= loadLargeCrc32()) === zlibCrc32() ? 'zlib' : 'node-rs'
}

function crc32Small(buf: Uint8Array): number {
  return crc32Range(buf, 0, buf.length)
}

function crc32Range(buf: Uint8Array, start: number, end: number): number {
  const t = TABLE
  const end8 = end - ((end - start) & 7)
  let c = -1
  let i = start
  for (; i < end8; i += 8) {
    const a = c ^ (buf[i] | (buf[i + 1] << 8) | (buf[i + 2] << 16) | (buf[i + 3] << 24))
    c =
      t[1792 + (a & 0xff)] ^
      t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^
      t[768 + buf[i + 4]] ^
      t[512 + buf[i + 5]] ^
      t[256 + buf[i + 6]] ^
      t[buf[i + 7]]
  }
  for (; i < end; i++) c = t[(c ^ buf[i]) & 0xff] ^ (c >>> 8)
  return ~c
}

/** crc32Range() reading the input as little-endian words through `words` (a view of `buf`). */
function crc32RangeWords(buf: Uint8Array, words: DataView, start: number, end: number): number {
  const t = TABLE
  const end8 = end - ((end - start) & 7)
  let c = -1
  let i = start
  for (; i < end8; i += 8) {
    const a = c ^ words.getInt32(i, true)
    const b = words.getInt32(i + 4, true)
    c =
      t[1792 + (a & 0xff)] ^
      t[1536 + ((a >>> 8) & 0xff)] ^
      t[1280 + ((a >>> 16) & 0xff)] ^
      t[1024 + (a >>> 24)] ^
      t[768 + (b & 0xff)] ^
      t[512 + ((b >>> 8) & 0xff)] ^
      t[256 + ((b >>> 16) & 0xff)] ^
      t[b >>> 24]
  }
  for (; i < end; i++) c = t[(c ^ buf[i]) & 0xff] ^ (c >>> 8)
  return ~c
}
