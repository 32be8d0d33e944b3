/**
 * Access control (docs/security.md): users file, rights, SCRAM-SHA-256 logins.
 */
import type {Logger} from '../../log.js'
import {MetaError} from '../../protocol/errors.js'
import type {BrokerConfig} from '../config/index.js'
import {AccessControl} from './access.js'
import type {LoginThrottleOptions} from './throttle.js'

export {AccessControl} from './access.js'
export type {LoginThrottleOptions} from './throttle.js'
export {permitted, refused} from './check.js'
export {admitInProcess} from './limits.js'
export {handleAuthFinish, handleAuthStart} from './handlers.js'
export {handleAccessReload, reloadAccess} from './reload.js'

/**
 * The access control a broker runs with: on when a users file is given (`meta serve --users`,
 * which wins over [security] usersFile) or server.ini has a [security] section; else undefined
 * (every request allowed, as in MetaQ). Throws CONFIG_INVALID for a users file it cannot read.
 */
export function createAccessControl(
  config: BrokerConfig,
  usersFile: string | undefined,
  log: Logger,
  options: {throttle?: LoginThrottleOptions; auditLog?: string} = {},
): AccessControl | undefined {
  const security = config.security
  if (usersFile === undefined && security === undefined) {
    if (options.auditLog !== undefined)
      throw new MetaError('CONFIG_INVALID', '--audit-log needs access control: give a users file (--users, or [security] usersFile in server.ini)')
    return undefined
  }
  const access = new AccessControl({usersFile: usersFile ?? security?.usersFile, anonymous: security?.anonymous ?? [], log: log.child('auth'), ...options})
  log.info('access control on', {usersFile: access.usersFile ?? null, anonymousGrants: (security?.anonymous ?? []).map((g) => `${g.right} ${g.pattern}`)})
  return access
}
