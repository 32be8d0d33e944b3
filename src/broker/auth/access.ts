/**
 * Access control of one broker: the users file (reloaded on `meta reload` and SIGHUP), the
 * rights of connections that never authenticate (`anonymous`), and the pace of logins
 * (throttle.ts: failures answered late, per user and address, never a lockout).
 *
 * Failures are logged (never a password or proof) on the 1st, 2nd, 4th, 8th… of a (user,
 * address) run.
 */
import {createHash, createHmac, randomBytes} from 'node:crypto'
import {createScramCredential, verifyPassword, type ScramCredential} from '../../protocol/commands/auth-scram.js'
import type {Logger} from '../../log.js'
import {ALL_RIGHTS, NO_RIGHTS, RightSet, type Grant} from './rights.js'
import {LoginThrottle, type LoginThrottleOptions} from './throttle.js'
import {readUsersFile} from './users-file.js'

/** Passwords checked right that are remembered (HTTP Basic auth: one PBKDF2 per user and password, not per request). */
const VERIFIED_PASSWORDS_MAX = 1000
/** PBKDF2 rounds of an in-memory user's random password (its login is loopback, in-process). */
const INTERNAL_ITERATIONS = 4096

interface AccessOptions {
  /** The users file; undefined: no users (only anonymous rights). */
  usersFile?: string
  anonymous: Grant[]
  log: Logger
  /** The pace of logins (tests make the delays short). */
  throttle?: LoginThrottleOptions
}

interface User {
  credential: ScramCredential
  rights: RightSet
}

/** SHA-256 (hex) of an HTTP token: the form the users file keeps it in. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export class AccessControl {
  readonly throttle: LoginThrottle
  private users = new Map<string, User>()
  /** HTTP tokens (their SHA-256, hex) → user. */
  private tokens = new Map<string, string>()
  /** Users that exist only in this process (internalUser), with every right. */
  private readonly internal = new Map<string, User>()
  /** hmac(secret, user, password) of passwords checked right → the credential they were checked against. */
  private readonly verified = new Map<string, ScramCredential>()
  private anonymousRights: RightSet
  /** Makes fake salts for unknown users (the same per user, so they cannot be told apart). */
  private readonly secret = randomBytes(32)

  constructor(private readonly options: AccessOptions) {
    this.anonymousRights = options.anonymous.length === 0 ? NO_RIGHTS : new RightSet(options.anonymous)
    this.throttle = new LoginThrottle({
      ...options.throttle,
      onFailure: (failure) => {
        if ((failure.failuresInARow & (failure.failuresInARow - 1)) === 0) options.log.warn('failed login', failure)
        options.throttle?.onFailure?.(failure)
      },
    })
    this.load()
  }

  /** Failed logins since start (`stats` auth_failures). */
  get failures(): number {
    return this.throttle.failures
  }

  /** Check a login of `user` from `address` at the pace throttle.ts sets; resolves once it may be answered. */
  login(address: string, user: string, check: () => boolean | Promise<boolean>): Promise<boolean> {
    return this.throttle.attempt(address, user, check)
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

  /** Anonymous connections have no right at all (connectionAuthTimeoutMs then applies). */
  get anonymousHasNoRights(): boolean {
    return this.anonymousRights === NO_RIGHTS
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

  /** Whether `user` is one of this process' in-memory users ({@link internalUser}). */
  isInternalUser(user: string): boolean {
    return this.internal.has(user)
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
}
