/**
 * How `meta send --follow` knows that a file is still the one it was reading
 * (docs/cli.md#following-files---follow--f): by its device and inode (the registry's key), and by its content — a
 * fingerprint of its first bytes (up to FINGERPRINT_BYTES, as Filebeat's) and the last bytes
 * before the read position (TAIL_CHECK_BYTES). An inode can be reused by a new file once the
 * old one is deleted, and a file truncated in place and written again within one poll
 * interval (`: > x.log; echo more >> x.log`) keeps its inode and may be larger than what was
 * read: only the content tells. A file whose first or last-read bytes changed is read from its
 * start again; reading on at the old position would send the end of some new line as a line.
 */
import {createHash} from 'node:crypto'
import type {FileHandle} from 'node:fs/promises'
import {readdir, stat} from 'node:fs/promises'
import {join} from 'node:path'

/** Bytes at a file's start that identify its content (the registry's fingerprint). */
export const FINGERPRINT_BYTES = 1024
/** Bytes just before the read position compared when a file grew. */
const TAIL_CHECK_BYTES = 64

/** The registry's fingerprint: how many bytes at the file's start, and their SHA-256 (hex). */
export interface Fingerprint {
  bytes: number
  sha256: string
}

export function fingerprintOf(head: Buffer): Fingerprint {
  return {bytes: head.length, sha256: createHash('sha256').update(head).digest('hex')}
}

/** `length` bytes at `position` (fewer at the end of the file). */
async function readAt(fd: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length)
  let filled = 0
  while (filled < length) {
    const {bytesRead} = await fd.read(buffer, filled, length - filled, position + filled)
    if (bytesRead === 0) break
    filled += bytesRead
  }
  return filled === length ? buffer : buffer.subarray(0, filled)
}

/** Whether the file's first `fingerprint.bytes` bytes are the ones fingerprinted. */
export async function matchesFingerprint(fd: FileHandle, fingerprint: Fingerprint): Promise<boolean> {
  const head = await readAt(fd, 0, fingerprint.bytes)
  return head.length === fingerprint.bytes && fingerprintOf(head).sha256 === fingerprint.sha256
}

/**
 * The bytes known of a file being read: its first ones (`head`, up to FINGERPRINT_BYTES) and the
 * last ones before the read position (`tail`), kept as reads go by and compared when it grows.
 */
export class KnownContent {
  head: Buffer = Buffer.alloc(0)
  tail: Buffer = Buffer.alloc(0)

  /** What a file opened at `position` holds before it (nothing at 0). */
  static async before(fd: FileHandle, position: number): Promise<KnownContent> {
    const known = new KnownContent()
    if (position === 0) return known
    known.head = await readAt(fd, 0, Math.min(FINGERPRINT_BYTES, position))
    const tailBytes = Math.min(TAIL_CHECK_BYTES, position)
    known.tail = await readAt(fd, position - tailBytes, tailBytes)
    return known
  }

  /** `chunk` was read at `position`; true when the head grew (a new fingerprint). */
  read(position: number, chunk: Buffer): boolean {
    const tail =
      chunk.length >= TAIL_CHECK_BYTES ? chunk.subarray(chunk.length - TAIL_CHECK_BYTES) : Buffer.concat([this.tail, chunk]).subarray(-TAIL_CHECK_BYTES)
    // Copied: a view would keep the whole chunk alive.
    this.tail = Buffer.from(tail)
    if (position >= FINGERPRINT_BYTES || position !== this.head.length) return false
    this.head = Buffer.concat([this.head, chunk.subarray(0, FINGERPRINT_BYTES - position)])
    return true
  }

  /** Whether the file still holds these bytes where they were read, `readPos` being the end of what was read. */
  async unchanged(fd: FileHandle, readPos: number): Promise<boolean> {
    if (this.head.length > 0 && !(await readAt(fd, 0, this.head.length)).equals(this.head)) return false
    if (this.tail.length === 0 || readPos <= this.head.length) return true
    return (await readAt(fd, readPos - this.tail.length, this.tail.length)).equals(this.tail)
  }
}

/** The regular file in `dir` with this device and inode (a file renamed there), if any. */
export async function findByInode(dir: string, dev: string, ino: string): Promise<string | undefined> {
  let names: string[]
  try {
    names = await readdir(dir)
  } catch {
    return undefined
  }
  for (const name of names) {
    const path = join(dir, name)
    try {
      const info = await stat(path, {bigint: true})
      if (info.isFile() && String(info.ino) === ino && String(info.dev) === dev) return path
    } catch {
      // Gone meanwhile, or unreadable: not it.
    }
  }
  return undefined
}
