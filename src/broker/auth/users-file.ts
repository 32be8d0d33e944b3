/**
 * The users file (docs/security.md): JSON, written by `meta user …`, read by the broker at start
 * and at every reload.
 *
 *   {"version": 1, "users": {"alice": {
 *      "scram-sha-256": {"salt": "<b64>", "iterations": 16384, "storedKey": "<b64>", "serverKey": "<b64>"},
 *      "grants": [{"right": "put", "pattern": "a-*"}],
 *      "tokens": ["<sha-256 hex of an HTTP token>"]}}}
 *
 * No password is stored: only SCRAM's StoredKey and ServerKey (PBKDF2-HMAC-SHA-256 of the
 * password, as SCRAM-SHA-256 requires), which verify a login but cannot make one. It is a
 * versioned state file (durable/state-file.ts): replaced whole and durably (temp file with
 * mode 0600, fdatasync, rename, directory fsync), a newer version refused naming it.
 */
import {statSync} from 'node:fs'
import {exposedMode, PRIVATE_FILE_MODE} from '../../durable/private-file.js'
import {readStateFile, StateFileError, writeStateFileSync, type StateFormat} from '../../durable/state-file.js'
import {quoteName} from '../../log.js'
import {MetaError} from '../../protocol/errors.js'
import type {ScramCredential} from '../../protocol/commands/auth-scram.js'
import {checkPattern, parseRight, type Grant} from './rights.js'

const USERS_FILE_VERSION = 1
/** Longest user name, in characters. */
const USER_NAME_LENGTH_MAX = 64
const USER_NAME = /^[A-Za-z0-9_.@-]+$/

interface UserEntry {
  'scram-sha-256': ScramCredential
  grants: Grant[]
  /** HTTP tokens (`meta user token`), as the SHA-256 (hex) of each: the token itself is not kept. */
  tokens?: string[]
  /** Quotas (`meta user limit`, quota.ts); an absent one is no limit. */
  limits?: Limits
}

/** A principal's quotas: counts, and byte rates per second. */
export interface Limits {
  connections?: number
  groups?: number
  partitions?: number
  produceByteRate?: number
  fetchByteRate?: number
}

/** Each limit and its floor and ceiling. */
const LIMIT_RANGES: Readonly<Record<keyof Limits, readonly [number, number]>> = {
  connections: [1, 1_000_000],
  groups: [1, 1_000_000],
  partitions: [1, 1_000_000],
  // 1 KiB/s .. 1 TiB/s
  produceByteRate: [1024, 1024 ** 4],
  fetchByteRate: [1024, 1024 ** 4],
}

/** A limit's value checked against its range; INVALID_ARGUMENT naming both otherwise. */
export function checkLimit(name: keyof Limits, value: unknown): number {
  const [min, max] = LIMIT_RANGES[name]
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new MetaError('INVALID_ARGUMENT', `invalid limit ${name} ${JSON.stringify(value)}: expected an integer from ${min} to ${max}`)
  }
  return value
}

export interface UsersFile {
  version: number
  users: Record<string, UserEntry>
}

export function checkUserName(name: string): string {
  if (!isUserName(name)) {
    throw new MetaError(
      'INVALID_ARGUMENT',
      `invalid user name ${quoteName(name)} (${name.length} characters): expected 1..${USER_NAME_LENGTH_MAX} of letters, digits, '_', '.', '@' and '-'`,
    )
  }
  return name
}

/** Whether `name` is one a users file may hold. */
export function isUserName(name: string): boolean {
  return name.length > 0 && name.length <= USER_NAME_LENGTH_MAX && USER_NAME.test(name)
}

export function emptyUsersFile(): UsersFile {
  return {version: USERS_FILE_VERSION, users: Object.create(null) as Record<string, UserEntry>}
}

function invalid(path: string, why: string): MetaError {
  return new MetaError('CONFIG_INVALID', `users file ${path}: ${why}`, {details: {path}})
}

/**
 * Why a secret file (the users file, a TLS key, a token file) may not be used: it is readable by
 * group or others (as ssh refuses a private key), with what to do; undefined when it is fine or
 * cannot be examined (reading it then reports that). Not checked on Windows, which has no modes.
 */
export function privateFileProblem(path: string, what: string): string | undefined {
  let mode: number
  try {
    mode = statSync(path).mode
  } catch {
    return undefined
  }
  const exposed = exposedMode(mode)
  if (exposed === undefined) return undefined
  return `${what} ${path} has mode ${exposed}: group or others may read it; chmod 600 ${path}`
}

/** The users file's format: version 1 only. */
const USERS_FORMAT: StateFormat<Record<string, UserEntry>> = {
  version: USERS_FILE_VERSION,
  shape: '"users": {...}',
  parse(document) {
    const given = document.users
    if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new Error(`expected {"version": ${USERS_FILE_VERSION}, "users": {...}}`)
    const users = emptyUsersFile().users
    for (const [name, entry] of Object.entries(given)) {
      try {
        checkUserName(name)
        users[name] = checkEntry(entry as UserEntry)
      } catch (error) {
        throw new Error(`user ${JSON.stringify(name)}: ${(error as Error).message}`)
      }
    }
    return users
  },
}

/** Read and check a users file; CONFIG_INVALID naming the file and what is wrong (a file group or others may read included). */
export function readUsersFile(path: string): UsersFile {
  const exposed = privateFileProblem(path, 'users file')
  if (exposed !== undefined) throw new MetaError('CONFIG_INVALID', exposed, {details: {path}})
  let read
  try {
    read = readStateFile(path, USERS_FORMAT)
  } catch (error) {
    if (!(error instanceof StateFileError)) throw error
    throw invalid(path, error.why)
  }
  if (read === undefined) throw invalid(path, 'cannot read it: no such file')
  return {version: USERS_FILE_VERSION, users: read.value}
}

function checkEntry(entry: UserEntry): UserEntry {
  const scram = entry?.['scram-sha-256']
  const b64 = (v: unknown) => typeof v === 'string' && /^[A-Za-z0-9+/=]+$/.test(v)
  if (!scram || !b64(scram.salt) || !b64(scram.storedKey) || !b64(scram.serverKey) || !Number.isInteger(scram.iterations)) {
    throw new Error('"scram-sha-256" needs salt, iterations, storedKey and serverKey')
  }
  if (!Array.isArray(entry.grants)) throw new Error('"grants" must be an array')
  const grants = entry.grants.map((g) => ({right: parseRight(String(g?.right)), pattern: checkPattern(String(g?.pattern))}))
  const tokens = entry.tokens ?? []
  if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'string' && /^[0-9a-f]{64}$/.test(t)))
    throw new Error('"tokens" must be an array of SHA-256 hex digests')
  const credential = {salt: scram.salt, iterations: scram.iterations, storedKey: scram.storedKey, serverKey: scram.serverKey}
  const given = entry.limits ?? {}
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new Error('"limits" must be an object')
  const limits: Limits = {}
  for (const [name, value] of Object.entries(given)) {
    if (!(name in LIMIT_RANGES)) throw new Error(`unknown limit "${name}": expected ${Object.keys(LIMIT_RANGES).join(', ')}`)
    limits[name as keyof Limits] = checkLimit(name as keyof Limits, value)
  }
  return {'scram-sha-256': credential, grants, ...(tokens.length > 0 ? {tokens} : {}), ...(Object.keys(limits).length > 0 ? {limits} : {})}
}

/** Replace the file atomically and durably (durable/state-file.ts), readable by its owner only. */
export function writeUsersFile(path: string, file: UsersFile): void {
  writeStateFileSync(path, USERS_FORMAT, {users: file.users}, {mode: PRIVATE_FILE_MODE, indent: 2})
}
