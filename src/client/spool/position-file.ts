/**
 * A counter kept in a file of fixed width, advanced by overwriting the file in place: the
 * spool's acknowledged position (format.ts). A temp file and a rename need a free block each
 * time; an in-place write of the same 30 bytes needs none once the file exists, so the counter
 * still moves on a full disk (the disk a spool filled is the one it must drain from).
 *
 * Record: `<20 decimal digits> <8 hex digits>\n`, the hex being the checksum (protocol/crc.ts)
 * of the digits, so a damaged record is told apart from a valid one. One write(2) of 30 bytes
 * at offset 0 is never torn by a killed process (it is not fsynced: a power loss may lose the
 * last writes, as it may lose the records). A file holding only decimal digits (the format
 * before this one) is read as a legacy value and replaced by the first write.
 */
import {closeSync, constants, fstatSync, ftruncateSync, openSync, readFileSync, readSync, writeSync} from 'node:fs'
import {checksum} from '../../protocol/crc.js'

const DIGITS = 20

/** What a position file held when it was read. */
export type PositionState = 'ok' | 'legacy' | 'missing' | 'damaged'

interface PositionValue {
  value: number
  state: PositionState
}

export function encodePosition(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`position ${value} is not a non-negative safe integer`)
  const digits = String(value).padStart(DIGITS, '0')
  return Buffer.from(`${digits} ${checksum(Buffer.from(digits, 'latin1')).toString(16).padStart(8, '0')}\n`, 'latin1')
}

/** The value a file's bytes stand for; `missing` for an empty file. */
export function decodePosition(bytes: Buffer): PositionValue {
  if (bytes.length === 0) return {value: 0, state: 'missing'}
  const text = bytes.toString('latin1')
  const record = /^(\d{20}) ([0-9a-f]{8})\n$/.exec(text)
  if (record !== null) {
    const value = Number(record[1])
    const valid = Number.isSafeInteger(value) && checksum(Buffer.from(record[1]!, 'latin1')) === Number.parseInt(record[2]!, 16)
    return valid ? {value, state: 'ok'} : {value: 0, state: 'damaged'}
  }
  const legacy = /^(\d{1,16})\n?$/.exec(text)
  if (legacy !== null && Number.isSafeInteger(Number(legacy[1]))) return {value: Number(legacy[1]), state: 'legacy'}
  return {value: 0, state: 'damaged'}
}

/** Read a position file without opening it for writing (a spool in use by another process). */
export function readPositionFile(path: string): PositionValue {
  try {
    return decodePosition(readFileSync(path))
  } catch {
    return {value: 0, state: 'missing'}
  }
}

/** An open position file: read once, then overwritten in place. */
export class PositionFile {
  readonly path: string
  /** What the file held when opened. */
  readonly initial: PositionValue
  private fd: number

  private constructor(path: string, fd: number, initial: PositionValue) {
    this.path = path
    this.fd = fd
    this.initial = initial
  }

  /** Open (creating an empty one) and read the file. */
  static open(path: string): PositionFile {
    // Not 'a': pwrite on an O_APPEND file appends on Linux, whatever the offset.
    const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600)
    try {
      const buf = Buffer.alloc(64)
      const n = readSync(fd, buf, 0, buf.length, 0)
      return new PositionFile(path, fd, n === buf.length ? {value: 0, state: 'damaged'} : decodePosition(buf.subarray(0, n)))
    } catch (error) {
      closeSync(fd)
      throw error
    }
  }

  /** Overwrite the record (throws the system error: the caller retries). */
  write(value: number): void {
    const record = encodePosition(value)
    let written = 0
    while (written < record.length) written += writeSync(this.fd, record, written, record.length - written, written)
    // Whatever a damaged file held past the record (shrinking needs no free space).
    if (this.initial.state === 'damaged' && fstatSync(this.fd).size > record.length) ftruncateSync(this.fd, record.length)
  }

  close(): void {
    if (this.fd < 0) return
    closeSync(this.fd)
    this.fd = -1
  }
}
