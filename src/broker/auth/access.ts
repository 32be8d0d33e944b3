/**
 * Access control of one broker: the users file (reloaded on `meta reload` and SIGHUP), the
 * rights of connections that never authenticate (`anonymous`), and the pace of logins
 * (throttle.ts: failures answered late, per user and address, never a lockout).
 *
 * Failures are logged (never a password or proof) on the 1st, 2nd, 4th, 8th… of a (user,
 * address) run.
 */
import {createHash, createHmac, randomBytes} from 'node:crypto'
import {verifyPassword, type ScramCredential} from '../../protocol/commands/auth-scram.js'
import type {Logger} from '../../log.js'
import {NO_RIGHTS, RightSet, type Grant} from './rights.js'
import {AuditLog} from './audit.js'
import {PrincipalQuota} from './quota.js'
import type {Limits} from './users-file.js'
import {LoginThrottle, type LoginThrottleOptions} from './throttle.js'
import {readUsersFile} from './users-file.js'

/** Passwords checked right that are remembered (HTTP Basic auth: one PBKDF2 per user and password, not per request). */
const VERIFIED_PASSWORDS_MAX = 1000

interface AccessOptions {
  /** The users file; undefined: no users (only anonymous rights). */
  usersFile?: string
  anonymous: Grant[]
  log: Logger
  /** The pace of logins (tests make the delays short). */
  throttle?: LoginThrottleOptions
  /** The audit trail's file (`meta serve --audit-log`); undefined: the main log only. */
  auditLog?: string
}

interface User {
  credential: ScramCredential
  rights: RightSet
  /** How many HTTP tokens it has. */
  tokens?: number
  limits?: Limits
}

/** SHA-256 (hex) of an HTTP token: the form the users file keeps it in. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

export class AccessControl {
  readonly throttle: LoginThrottle
  readonly audit: AuditLog
  private users = new Map<string, User>()
  /** HTTP tokens (their SHA-256, hex) → user. */
  private tokens = new Map<string, string>()
  /** hmac(secret, user, password) of passwords checked right → the credential they were checked against. */
  private readonly verified = new Map<string, ScramCredential>()
  private anonymousRights: RightSet
  /** Makes fake salts for unknown users (the same per user, so they cannot be told apart). */
  private readonly secret = randomBytes(32)
  private readonly quotas = new Map<string, PrincipalQuota>()
  /** The users file was read once (later reads are audited as changes). */
  private loaded = false

  constructor(private readonly options: AccessOptions) {
    this.anonymousRights = options.anonymous.length === 0 ? NO_RIGHTS : new RightSet(options.anonymous)
    this.audit = new AuditLog(options.log.child('audit'), options.auditLog)
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

  /** Check a login of `user` from `address` at the pace throttle.ts sets; resolves once it may be answered (audited). */
  async login(address: string, user: string, mechanism: string, check: () => boolean | Promise<boolean>): Promise<boolean> {
    const ok = await this.throttle.attempt(address, user, check)
    const replication = ok && this.rightsOf(user).allows('replicate', '*')
    this.audit.login(user, address, ok ? 'success' : 'failure', {mechanism, ...(replication ? {replication} : {})})
    return ok
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
      users.set(name, {credential: entry['scram-sha-256'], rights: new RightSet(entry.grants), tokens: entry.tokens?.length ?? 0, limits: entry.limits})
      for (const hash of entry.tokens ?? []) tokens.set(hash, name)
    }
    if (this.loaded) this.auditChanges(this.users, users)
    this.loaded = true
    this.users = users
    // Connections keep their user's quota object: its limits change in place.
    for (const [name, quota] of this.quotas) quota.setLimits(users.get(name)?.limits ?? {})
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
    return this.users.get(user)?.rights ?? NO_RIGHTS
  }

  credential(user: string): ScramCredential | undefined {
    return this.users.get(user)?.credential
  }

  /** The quota of a logged-in user (one object per user, kept across reloads: its connections hold it). */
  quotaOf(user: string): PrincipalQuota {
    let quota = this.quotas.get(user)
    if (quota === undefined) {
      quota = new PrincipalQuota(user, this.users.get(user)?.limits ?? {})
      this.quotas.set(user, quota)
    }
    return quota
  }

  /** The users of the users file, sorted. */
  userNames(): string[] {
    return [...this.users.keys()].sort()
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

  /** Audit what a reload changed: users added and removed, passwords, grants, tokens. */
  private auditChanges(before: Map<string, User>, after: Map<string, User>): void {
    const grants = (user: User) => new Set(user.rights.grants.map((g) => `${g.right} ${g.pattern}`))
    for (const [name, user] of after) {
      const old = before.get(name)
      if (old === undefined) {
        this.audit.userChanged(name, `added with ${[...grants(user)].join(', ') || 'no rights'}`)
        continue
      }
      if (old.credential.storedKey !== user.credential.storedKey) this.audit.userChanged(name, 'new password')
      const was = grants(old)
      const now = grants(user)
      for (const grant of now) if (!was.has(grant)) this.audit.userChanged(name, `granted ${grant}`)
      for (const grant of was) if (!now.has(grant)) this.audit.userChanged(name, `revoked ${grant}`)
      if (JSON.stringify(old.limits ?? {}) !== JSON.stringify(user.limits ?? {})) this.audit.userChanged(name, `limits ${JSON.stringify(user.limits ?? {})}`)
      if ((old.tokens ?? 0) !== (user.tokens ?? 0)) this.audit.userChanged(name, `HTTP tokens ${old.tokens ?? 0} → ${user.tokens ?? 0}`)
    }
    for (const name of before.keys()) if (!after.has(name)) this.audit.userChanged(name, 'removed')
  }

  /** A stable fake salt for a user that does not exist. */
  fakeSalt(user: string): string {
    return createHmac('sha256', this.secret).update(user).digest().subarray(0, 16).toString('base64')
  }
}
