/**
 * Committed offsets in one local JSON file: MetaQ's LocalOffsetStorage, the file broadcast
 * consumers use (docs/protocol.md#committed-offsets). The file MetaQ writes and this store writes
 * are the same:
 *
 *   {"<group>": [{"topic": "t", "partition": {"brokerId": 0, "partition": 0},
 *                 "offset": 1024, "messageId": 7, "modified": false}, …], …}
 *
 * - `offset` is the next byte to consume, a JSON number.
 * - `messageId` (the last consumed message) is a JSON number when it fits a double exactly
 *   (|id| ≤ 2^53−1), else a JSON string of decimal digits, so no id loses precision. MetaQ
 *   reads back only topic, partition and offset, so a string there does not bother it. Both
 *   forms are read, as are integers too large for a double written by Java (kept exact);
 *   a missing messageId reads as "-1".
 * - `modified` is always false (MetaQ's in-memory dirty flag, written but never read).
 * - A missing, empty or whitespace-only file holds no offsets (MetaQ creates an empty file).
 *   Anything else that is not this shape fails with STORAGE_ERROR naming the path: the store
 *   never silently starts over and loses every group's offsets.
 *
 * Writes replace the file atomically (durable/replace.ts: temp file, fdatasync, rename, fsync of
 * the directory).
 * Calls on one store run one at a time, in order. The document is kept in memory after the
 * first read and load() answers from it; each commit refreshes it from disk (see below).
 *
 * Several processes sharing the file: before each write the store re-reads the file and
 * keeps every group it has not itself committed as found on disk, so one process never erases
 * another group's offsets. For a group two processes both commit, the last writer wins for
 * the whole group (MetaQ's behaviour: its commit replaces the group's list).
 */
import {readFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {join} from 'node:path'
import {replaceFile} from '../../durable/replace.js'
import {MetaError} from '../../protocol/errors.js'
import {offsetKey, type OffsetEntry, type OffsetStore} from '../offset-store.js'
import type {Partition} from '../types.js'
import {UNKNOWN_MSG_ID, checkEntries, checkGroup, checkPartitions, checkTopic, entryKey, isInt64Text, isPartition, offsetFromText} from './entries.js'

/** MetaQ's file name, in the user's home directory. */
export const DEFAULT_OFFSET_FILE_NAME = '.meta_offsets'

/** Options of {@link FileOffsetStore}. */
export interface FileOffsetStoreOptions {
  /** The JSON file; default `~/.meta_offsets` (MetaQ's). Missing parent directories are created on the first commit. */
  path?: string
}

/** One committed offset as held in memory. */
interface StoredEntry {
  topic: string
  partition: Partition
  offset: number
  msgId: string
}

/** One group's entries in file order. */
type Document = Map<string, StoredEntry[]>

/**
 * An {@link OffsetStore} on a local JSON file in MetaQ's `.meta_offsets` format.
 *
 * Errors: INVALID_ARGUMENT for a bad group, topic, partition, offset or msgId; STORAGE_ERROR
 * (naming the path) when the file cannot be read or written or is not in the expected format;
 * DISK_FULL when the disk is full.
 */
export class FileOffsetStore implements OffsetStore {
  /** The file this store reads and writes. */
  readonly path: string
  /** Everything known, once read; undefined until the first call. */
  private document: Document | undefined
  /** Groups this store has committed: on a write, these win over what is on disk. */
  private readonly committedGroups = new Set<string>()
  private tail: Promise<unknown> = Promise.resolve()

  constructor(options: FileOffsetStoreOptions = {}) {
    if (options.path !== undefined && (typeof options.path !== 'string' || options.path === '')) {
      throw MetaError.invalidArgument(`invalid path ${JSON.stringify(options.path)}: expected a non-empty string`)
    }
    this.path = options.path ?? join(homedir(), DEFAULT_OFFSET_FILE_NAME)
  }

  /** The committed offsets of these partitions of `topic`, keyed by offsetKey(); read from disk only on the first call. */
  async load(group: string, topic: string, partitions: readonly Partition[]): Promise<Map<string, {offset: number; msgId: string}>> {
    checkGroup(group)
    checkTopic(topic)
    checkPartitions(topic, partitions)
    return this.serial(async () => {
      this.document ??= await this.read()
      const wanted = new Set(partitions.map((p) => offsetKey(p)))
      const result = new Map<string, {offset: number; msgId: string}>()
      for (const e of this.document.get(group) ?? []) {
        const key = offsetKey(e.partition)
        if (e.topic === topic && wanted.has(key)) result.set(key, {offset: e.offset, msgId: e.msgId})
      }
      return result
    })
  }

  /**
   * Merge these entries into the group's (an entry replaces the one for the same topic and
   * partition; others are kept) and rewrite the file atomically. Resolves once durable.
   */
  async commit(group: string, entries: readonly OffsetEntry[]): Promise<void> {
    checkGroup(group)
    checkEntries(entries)
    if (entries.length === 0) return
    const copies = entries.map((e) => ({
      topic: e.topic,
      partition: {brokerId: e.partition.brokerId, partition: e.partition.partition},
      offset: e.offset,
      msgId: e.msgId,
    }))
    return this.serial(async () => {
      const onDisk = await this.read()
      const base = this.document !== undefined && this.committedGroups.has(group) ? this.document : onDisk
      const next: Document = new Map(onDisk)
      for (const g of this.committedGroups) next.set(g, this.document!.get(g)!)
      next.set(group, mergeEntries(base.get(group) ?? [], copies))
      await this.write(next)
      this.document = next
      this.committedGroups.add(group)
    })
  }

  /** Waits for calls in progress; the store holds no other resource. */
  async close(): Promise<void> {
    await this.serial(async () => {})
  }

  /** Run `op` after every call before it, whether those succeeded or not. */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.tail.then(op, op)
    this.tail = run.catch(() => {
      // The caller of this operation gets its error through `run`; the queue moves on.
    })
    return run
  }

  private async read(): Promise<Document> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return new Map()
      throw new MetaError('STORAGE_ERROR', `cannot read offset file "${this.path}": ${(error as Error).message}`, {cause: error})
    }
    return parseOffsetFile(text, this.path)
  }

  private async write(document: Document): Promise<void> {
    try {
      await replaceFile(this.path, formatOffsetFile(document))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code === 'ENOSPC' ? 'DISK_FULL' : 'STORAGE_ERROR'
      throw new MetaError(code, `cannot write offset file "${this.path}": ${(error as Error).message}`, {cause: error})
    }
  }
}

function mergeEntries(current: readonly StoredEntry[], updates: readonly StoredEntry[]): StoredEntry[] {
  const merged = [...current]
  const index = new Map(merged.map((e, i) => [entryKey(e.topic, e.partition), i]))
  for (const u of updates) {
    const key = entryKey(u.topic, u.partition)
    const at = index.get(key)
    if (at === undefined) {
      index.set(key, merged.length)
      merged.push(u)
    } else {
      merged[at] = u
    }
  }
  return merged
}

/** The file's text for a document: compact JSON, as MetaQ writes it. */
function formatOffsetFile(document: ReadonlyMap<string, readonly StoredEntry[]>): string {
  const out: Record<string, unknown[]> = {}
  for (const [group, entries] of document) {
    out[group] = entries.map((e) => {
      const id = Number(e.msgId)
      return {
        topic: e.topic,
        partition: {brokerId: e.partition.brokerId, partition: e.partition.partition},
        offset: e.offset,
        messageId: Number.isSafeInteger(id) ? id : e.msgId,
        modified: false,
      }
    })
  }
  return JSON.stringify(out)
}

/** A JSON string, or a JSON number (outside strings, nothing else contains digits). */
const JSON_STRING_OR_NUMBER = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g

/**
 * JSON.parse, except that integers a double cannot hold exactly come back as strings of their
 * digits (a Java writer may store a 64-bit message id as a bare number).
 */
function parseJsonKeepingLargeIntegers(text: string): unknown {
  const quoted = text.replace(JSON_STRING_OR_NUMBER, (token) =>
    token.startsWith('"') || !/^-?\d+$/.test(token) || Number.isSafeInteger(Number(token)) ? token : `"${token}"`,
  )
  return JSON.parse(quoted)
}

/** Parse the file's text; throws STORAGE_ERROR naming `path` and the first problem. */
function parseOffsetFile(text: string, path: string): Document {
  const document: Document = new Map()
  if (text.trim() === '') return document
  const corrupt = (problem: string, cause?: unknown) =>
    new MetaError('STORAGE_ERROR', `offset file "${path}" is corrupt: ${problem}; repair or remove it (its offsets are lost then)`, {cause, details: {path}})
  let parsed: unknown
  try {
    parsed = parseJsonKeepingLargeIntegers(text)
  } catch (error) {
    throw corrupt(`not JSON (${(error as Error).message})`, error)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw corrupt('expected an object of groups at the top level')
  }
  for (const [group, list] of Object.entries(parsed)) {
    // MetaQ tolerates a null list for a group.
    if (list === null) {
      document.set(group, [])
      continue
    }
    if (!Array.isArray(list)) throw corrupt(`group "${group}": expected an array of entries`)
    document.set(
      group,
      list.map((raw: unknown, i) => {
        const entry = parseEntry(raw)
        if (typeof entry === 'string') throw corrupt(`group "${group}" entry ${i}: ${entry}`)
        return entry
      }),
    )
  }
  return document
}

/** One entry, or what is wrong with it. */
function parseEntry(raw: unknown): StoredEntry | string {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return 'expected an object'
  const e = raw as Record<string, unknown>
  if (typeof e.topic !== 'string' || e.topic === '') return 'expected "topic" to be a non-empty string'
  if (!isPartition(e.partition)) return 'expected "partition" to be {"brokerId", "partition"} of non-negative integers'
  // MetaQ reads the offset with Long.valueOf(String.valueOf(…)), so a string of digits is accepted too.
  const offset = typeof e.offset === 'number' || typeof e.offset === 'string' ? offsetFromText(String(e.offset)) : undefined
  if (offset === undefined) return `expected "offset" to be a non-negative integer, found ${JSON.stringify(e.offset)}`
  let msgId = UNKNOWN_MSG_ID
  if (e.messageId !== undefined && e.messageId !== null) {
    const text = typeof e.messageId === 'number' || typeof e.messageId === 'string' ? String(e.messageId) : ''
    if (!isInt64Text(text)) return `expected "messageId" to be a 64-bit integer, found ${JSON.stringify(e.messageId)}`
    msgId = text
  }
  return {topic: e.topic, partition: {brokerId: e.partition.brokerId, partition: e.partition.partition}, offset, msgId}
}
