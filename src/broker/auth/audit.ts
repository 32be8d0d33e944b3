/**
 * The audit trail of a broker with access control (docs/security.md#audit-trail): logins
 * (success and failure, replication's marked), refusals, and changes of users and rights seen
 * at a reload, as JSON lines in `meta serve --audit-log FILE`, each with its time, principal,
 * client address, command, resource and outcome. Names are written as JSON strings with control
 * and bidirectional characters escaped (log.ts escapeUnsafe), so a name cannot forge or hide a
 * line.
 *
 * Refusals are aggregated per (principal, command, resource) per {@link REFUSAL_INTERVAL_MS}:
 * the first of an interval is written at once, the rest as one line with their count when the
 * interval ends; at most {@link REFUSAL_KEYS_MAX} keys are kept per interval (the others are
 * counted in one line for "other"). The main log gets refusals too, rate-limited, and every
 * refusal is counted (`stats access_denied`, `meta_access_denied_total`).
 */
import {closeSync, openSync, writeSync} from 'node:fs'
import {escapeUnsafe, type Logger} from '../../log.js'

/** Refusals of one key are written at most once per this long (plus one line with the count). */
const REFUSAL_INTERVAL_MS = 10_000
/** Keys of refusals kept per interval. */
const REFUSAL_KEYS_MAX = 1000

interface AuditEntry {
  event: 'login' | 'refused' | 'user-changed' | 'certificate-refused'
  principal: string
  address?: string
  command?: string
  resource?: string
  outcome: string
  [field: string]: string | number | boolean | undefined
}

interface RefusalCount {
  entry: AuditEntry
  count: number
}

export class AuditLog {
  /** Refused requests since the start. */
  refusals = 0
  private fd: number | undefined
  private pending = new Map<string, RefusalCount>()
  private other = 0
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly log: Logger,
    path?: string,
  ) {
    // Appended to, readable by its owner only (it names users and addresses).
    if (path !== undefined) this.fd = openSync(path, 'a', 0o600)
  }

  /** A login's outcome (a failure once its delay is over). */
  login(principal: string, address: string, outcome: 'success' | 'failure', fields: {mechanism: string; replication?: boolean}): void {
    this.write({event: 'login', principal, address, command: 'auth', outcome, ...fields})
  }

  /** A change of a user or its rights, seen when the users file was read again. */
  userChanged(principal: string, change: string): void {
    this.write({event: 'user-changed', principal, outcome: change})
    this.log.info('user changed', {user: principal, change})
  }

  /** A client certificate whose name no users file may hold: its connection is refused. */
  certificateRefused(name: string, address: string): void {
    this.write({event: 'certificate-refused', principal: name, address, outcome: 'refused: not a user name'})
  }

  /** A request refused for rights (counted in `refusals`), or for a quota (`quota`: audited and logged only). */
  refused(principal: string, address: string, command: string, resource: string, why: string, quota = false): void {
    if (!quota) this.refusals += 1
    this.log
      .limited(quota ? 'quota-exceeded' : 'access-denied')
      .warn(quota ? 'request refused: quota' : 'request refused', {principal, address, command, resource})
    const key = `${principal}\0${command}\0${resource}`
    const counted = this.pending.get(key)
    if (counted !== undefined) {
      counted.count += 1
      return
    }
    if (this.pending.size >= REFUSAL_KEYS_MAX) {
      this.other += 1
      return
    }
    const entry: AuditEntry = {event: 'refused', principal, address, command, resource, outcome: why}
    this.pending.set(key, {entry, count: 0})
    this.write({...entry, count: 1})
    this.timer ??= setTimeout(() => this.flushRefusals(), REFUSAL_INTERVAL_MS).unref()
  }

  /** Write the counts of the interval's repeated refusals. */
  flushRefusals(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    for (const {entry, count} of this.pending.values()) if (count > 0) this.write({...entry, count, repeated: true})
    if (this.other > 0) this.write({event: 'refused', principal: '(other)', outcome: 'refused', count: this.other, repeated: true})
    this.pending = new Map()
    this.other = 0
  }

  close(): void {
    this.flushRefusals()
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private write(entry: AuditEntry): void {
    if (this.fd === undefined) return
    try {
      writeSync(this.fd, `${escapeUnsafe(JSON.stringify({time: new Date().toISOString(), ...entry}))}\n`)
    } catch (error) {
      this.log.limited('audit-write').error('cannot write the audit log', {error: (error as Error).message})
    }
  }
}
