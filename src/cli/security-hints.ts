/**
 * What to type after a refusal of the broker's security (docs/security.md#clients): an
 * anonymous connection refused a right on a broker with users → log in with --user; a refused
 * login → check the password's source. Undefined for any other error.
 */
import {isMetaError} from '../protocol/errors.js'

const PASSWORD_SOURCES = '$META_PASSWORD, --password-file or $META_PASSWORD_FILE, else a prompt on the terminal'

export function securityHint(error: unknown): string | undefined {
  if (isMetaError(error, 'ACCESS_DENIED') && /\banonymous\b/.test(error.message)) {
    return `the broker has users: log in with --user NAME (password from ${PASSWORD_SOURCES})`
  }
  if (isMetaError(error, 'UNAUTHORIZED')) return `the user name or password is wrong: check --user and the password (${PASSWORD_SOURCES})`
  return undefined
}
