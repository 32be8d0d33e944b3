/**
 * MetaQ's checksum: CRC-32 (zlib / java.util.zip.CRC32) masked to 31 bits, so it is always a
 * non-negative int32 (spec §2.2, Appendix A.2.2). `checksum('hello') === 907060870`.
 */
import {crc32} from 'node:zlib'

export function checksum(data: Uint8Array): number {
  return crc32(data) & 0x7fffffff
}
