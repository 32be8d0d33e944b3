/**
 * What `meta user …` does to a users file (users-file.ts): each operation reads the file,
 * changes one user and replaces the file atomically. A broker picks the change up at its next
 * reload (`meta reload`, SIGHUP).
 */
import {randomBytes} from 'node:crypto'
import {existsSync} from 'node:fs'
import {MetaError} from '../../protocol/errors.js'
import {createScramCredential} from '../../protocol/commands/auth-scram.js'
import {tokenHash} from './access.js'
import {checkPattern, parseRight, type Grant} from './rights.js'
import {checkLimit, checkUserName, emptyUsersFile, readUsersFile, writeUsersFile, type Limits, type UsersFile} from './users-file.js'

export interface UserSummary {
  name: string
  grants: Grant[]
  /** How many HTTP tokens the user has. */
  tokens: number
  /** Its quotas (meta user limit). */
  limits: Limits
}

function update(path: string, change: (file: UsersFile) => void, create = false): void {
  const file = create && !existsSync(path) ? emptyUsersFile() : readUsersFile(path)
  change(file)
  writeUsersFile(path, file)
}

function existing(file: UsersFile, name: string, path: string) {
  const entry = file.users[name]
  if (entry === undefined) throw new MetaError('NOT_FOUND', `no user "${name}" in ${path} (meta user list --users ${path})`)
  return entry
}

/** Add a user, or set a new password for one (its grants stay). Creates the file. Returns true when the user is new. */
export function addUser(path: string, name: string, password: string): boolean {
  checkUserName(name)
  if (password.length === 0) throw MetaError.invalidArgument('empty password: give one on the terminal or as one line on stdin')
  let added = false
  update(
    path,
    (file) => {
      added = file.users[name] === undefined
      file.users[name] = {'scram-sha-256': createScramCredential(password), grants: file.users[name]?.grants ?? []}
    },
    true,
  )
  return added
}

/** Grant a right; false when the user already had it. */
export function grantRight(path: string, name: string, right: string, pattern: string): boolean {
  const grant = {right: parseRight(right), pattern: checkPattern(pattern)}
  // It names no resource: on any other pattern it would never apply.
  if (grant.right === 'tx' && grant.pattern !== '*')
    throw new MetaError('INVALID_ARGUMENT', `invalid pattern ${JSON.stringify(pattern)} for the tx right: it is granted on '*' (every transaction)`)
  let changed = false
  update(path, (file) => {
    const entry = existing(file, name, path)
    if (entry.grants.some((g) => g.right === grant.right && g.pattern === grant.pattern)) return
    entry.grants.push(grant)
    changed = true
  })
  return changed
}

/** Revoke exactly the grant `right pattern`; false when the user did not have it. */
export function revokeRight(path: string, name: string, right: string, pattern: string): boolean {
  const r = parseRight(right)
  let changed = false
  update(path, (file) => {
    const entry = existing(file, name, path)
    const kept = entry.grants.filter((g) => !(g.right === r && g.pattern === pattern))
    changed = kept.length !== entry.grants.length
    entry.grants = kept
  })
  return changed
}

/** Make a new HTTP token for a user (32 random bytes, base64url); only its SHA-256 is stored. Returns the token. */
export function addToken(path: string, name: string): string {
  const token = randomBytes(32).toString('base64url')
  update(path, (file) => {
    const entry = existing(file, name, path)
    entry.tokens = [...(entry.tokens ?? []), tokenHash(token)]
  })
  return token
}

/** Drop every HTTP token of a user; returns how many there were. */
export function revokeTokens(path: string, name: string): number {
  let count = 0
  update(path, (file) => {
    const entry = existing(file, name, path)
    count = entry.tokens?.length ?? 0
    delete entry.tokens
  })
  return count
}

/** Set (a number) or remove (null) some of a user's limits; returns the limits in force after. */
export function setLimits(path: string, name: string, changes: Partial<Record<keyof Limits, number | null>>): Limits {
  let after: Limits = {}
  update(path, (file) => {
    const entry = existing(file, name, path)
    const limits: Limits = {...entry.limits}
    for (const [key, value] of Object.entries(changes) as Array<[keyof Limits, number | null | undefined]>) {
      if (value === undefined) continue
      if (value === null) delete limits[key]
      else limits[key] = checkLimit(key, value)
    }
    if (Object.keys(limits).length > 0) entry.limits = limits
    else delete entry.limits
    after = limits
  })
  return after
}

export function removeUser(path: string, name: string): void {
  update(path, (file) => {
    existing(file, name, path)
    delete file.users[name]
  })
}

/** The users and their grants (never a key or salt). */
export function listUsers(path: string): UserSummary[] {
  const file = readUsersFile(path)
  return Object.entries(file.users)
    .map(([name, entry]) => ({name, grants: entry.grants, tokens: entry.tokens?.length ?? 0, limits: entry.limits ?? {}}))
    .sort((a, b) => a.name.localeCompare(b.name))
}
