/**
 * Access control of one broker: the users file (reloaded on `meta reload` and SIGHUP), the
 * rights of connections that never authenticate (`anonymous`), and the slowing of failed
 * logins per client address.
 *
 * Failed logins (docs/security.md): the n-th failure in a row from one address is answered after
 * min(FAILURE_DELAY_BASE_MS × 2^(n-1), FAILURE_DELAY_MAX_MS); from FAILURES_MAX failures on,
 * that address's logins are refused outright for LOCKOUT_MS. A success clears the address.
 * Failures are logged (never a password or proof) on the 1st, 2nd, 4th, 8th… of a run and at the lockout.
 */
import {createHash, createHmac, randomBytes} from 'node:crypto'
import {createScramCredential, verifyPassword, type ScramCredential} from '../../protocol/commands/auth-scram.js'
import type {Logger} from '../../log.js'
import {ALL_RIGHTS, NO_RIGHTS, RightSet, type Grant} from './rights.js'
import {readUsersFile} from './users-file.js'

/** Delay before answering the first failed login of a run, in ms. */
const FAILURE_DELAY_BASE_MS = 100
/** Longest delay before answering a failed login, in ms. */
const FAILURE_DELAY_MAX_MS = 3_000
/** Failures in a row after which an address is locked out. */
const FAILURES_MAX = 10
/** How long a locked-out address is refused, in ms. */
const LOCKOUT_MS = 60_000
/** Addresses whose failures are remembered at most (the oldest is forgotten first). */
const TRACKED_ADDRESSES_MAX = 10_000
/** Passwords checked right that are remembered (HTTP Basic auth: one PBKDF2 per user and password, not per request). */
const VERIFIED_PASSWORDS_MAX = 1000
/** PBKDF2 rounds of an in-memory user's random password (its login is loopback, in-process). */
const INTERNAL_ITERATIONS = 4096

interface AccessOptions {
  /** The users file; undefined: no users (only anonymous rights). */
  usersFile?: string
  anonymous: Grant[]
  log: Logger
}

interface User {
  credential: ScramCredential
  rights: RightSet
}

/** SHA-256 (hex) of an HTTP token: the form the users file keeps it in. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

interface FailureRun {
  count: number
  lastAtMs: number
}

export class AccessControl {
  /** Failed logins since start (`stats` auth_failures). */
  failures = 0
  private users = new Map<string, User>()
  /** HTTP tokens (their SHA-256, hex) → user. */
  private tokens = new Map<string, string>()
  /** Users that exist only in this process (internalUser), with every right. */
  private readonly internal = new Map<string, User>()
  /** hmac(secret, user, password) of passwords checked right → the credential they were checked against. */
  private readonly verified = new Map<string, ScramCredential>()
  private anonymousRights: RightSet
  private readonly runs = new Map<string, FailureRun>()
  /** Makes fake salts for unknown users (the same per user, so they cannot be told apart). */
  private readonly secret = randomBytes(32)

  constructor(private readonly options: AccessOptions) {
    this.anonymousRights = options.anonymous.length === 0 ? NO_RIGHTS : new RightSet(options.anonymous)
    this.load()
  }

  get usersFile(): string | undefined {
    return this.options.usersFile
  }

  /** Re-read the users file; on an error the users in force stay and the error is thrown. */
  load(): number {
    if (this.options.usersFile === undefined) return 0
    const file = readUsersFile(this.options.usersFile)
    const users = new Map<string, User>()
    const tokens = new Map<string, string>()
    for (const [name, entry] of Object.entries(file.users)) {
      users.set(name, {credential: entry['scram-sha-256'], rights: new RightSet(entry.grants)})
      for (const hash of entry.tokens ?? []) tokens.set(hash, name)
    }
    this.users = users
    this.tokens = tokens
    this.verified.clear()
    return users.size
  }

  /** Set the anonymous rights (a reload of server.ini's [security] section). */
  setAnonymous(grants: Grant[]): void {
    this.anonymousRights = grants.length === 0 ? NO_RIGHTS : new RightSet(grants)
  }

  /** The rights in force for a connection's user (undefined: anonymous); a removed user has none. */
  rightsOf(user: string | undefined): RightSet {
    if (user === undefined) return this.anonymousRights
    return (this.users.get(user) ?? this.internal.get(user))?.rights ?? NO_RIGHTS
  }

  credential(user: string): ScramCredential | undefined {
    return (this.users.get(user) ?? this.internal.get(user))?.credential
  }

  /**
   * A user with every right that exists only in this process, for the broker's own HTTP server
   * (which checks each HTTP request against its HTTP user's rights before sending it): its name
   * `meta:<purpose>` has a ':', which no users-file name may, and its password is random,
   * never written anywhere.
   */
  internalUser(purpose: string): {user: string; password: string} {
    const user = `meta:${purpose}`
    const password = randomBytes(24).toString('base64')
    this.internal.set(user, {credential: createScramCredential(password, INTERNAL_ITERATIONS), rights: ALL_RIGHTS})
    return {user, password}
  }

  /** The user an HTTP token belongs to (`meta user token`), or undefined. */
  userOfToken(token: string): string | undefined {
    return this.tokens.get(tokenHash(token))
  }

  /** Whether `password` is this users-file user's (PBKDF2 off the event loop; a right answer is remembered until the next reload). */
  async checkPassword(user: string, password: string): Promise<boolean> {
    const credential = this.users.get(user)?.credential
    if (credential === undefined) return false
    const key = createHmac('sha256', this.secret).update(user).update('\0').update(password).digest('base64')
    if (this.verified.get(key) === credential) return true
    const ok = await verifyPassword(credential, password)
    if (ok && this.users.get(user)?.credential === credential) {
      if (this.verified.size >= VERIFIED_PASSWORDS_MAX) this.verified.clear()
      this.verified.set(key, credential)
    }
    return ok
  }

  /** A stable fake salt for a user that does not exist. */
  fakeSalt(user: string): string {
    return createHmac('sha256', this.secret).update(user).digest().subarray(0, 16).toString('base64')
  }

  /** ms until this address may try again (0: now); it is locked out after FAILURES_MAX failures. */
  lockedForMs(address: string, nowMs = Date.now()): number {
    const run = this.runs.get(address)
    if (run === undefined || run.count < FAILURES_MAX) return 0
    return Math.max(0, run.lastAtMs + LOCKOUT_MS - nowMs)
  }

  /** Count a failed login; returns how long to wait before answering it, in ms. */
  failed(address: string, user: string, nowMs = Date.now()): number {
    this.failures += 1
    let run = this.runs.get(address)
    if (run !== undefined && run.count >= FAILURES_MAX && nowMs - run.lastAtMs >= LOCKOUT_MS) run = undefined
    if (run === undefined) {
      if (this.runs.size >= TRACKED_ADDRESSES_MAX) this.runs.delete(this.runs.keys().next().value as string)
      run = {count: 0, lastAtMs: nowMs}
      this.runs.set(address, run)
    }
    run.count += 1
    run.lastAtMs = nowMs
    if ((run.count & (run.count - 1)) === 0 || run.count === FAILURES_MAX) {
      this.options.log.warn('failed login', {address, user, failuresInARow: run.count, ...(run.count >= FAILURES_MAX ? {lockedOutMs: LOCKOUT_MS} : {})})
    }
    return Math.min(FAILURE_DELAY_BASE_MS * 2 ** (run.count - 1), FAILURE_DELAY_MAX_MS)
  }

  succeeded(address: string): void {
    this.runs.delete(address)
  }
}
