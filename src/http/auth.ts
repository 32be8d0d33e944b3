/**
 * Who an HTTP request is and what it may do, on a broker with access control
 * (docs/security.md#the-http-server):
 *
 *   Authorization: Basic <user:password>   a user of the users file (https, or a loopback listener)
 *   Authorization: Bearer <token>          a token made by `meta user token`: its user
 *                                          (X-Meta-Token: <token> too)
 *   Authorization: Bearer <operator token> every right ($META_HTTP_TOKEN or --http-token-file)
 *   nothing                                the anonymous rights ([security] anonymous)
 *
 * Each request the HTTP server sends its broker on behalf of an HTTP request goes over an
 * in-process connection the broker bound to that request's principal (sessions.ts), so the
 * broker checks, counts, limits and audits it as that principal's: refused, 403 ACCESS_DENIED
 * with the broker's message. Failed logins (a wrong password or an unknown token) are slowed and
 * counted as on the broker's port (the same per-address runs, `auth_failures`).
 *
 * Without access control nothing here runs: the operator token rule (server.ts) holds alone.
 */
import {timingSafeEqual} from 'node:crypto'
import type {FastifyRequest} from 'fastify'
import {ALL_RIGHTS, checkUserName, type BoundPrincipal, type BrokerReadView, type Right, type RightSet} from '../broker/read-view.js'
import {HttpError} from './params.js'

/** An HTTP request's principal: how messages name it, and its rights (read at each check: a reload applies). */
export interface HttpPrincipal {
  who: string
  /** The users-file user it is (a Basic login or a user's token), for what it may see of its own. */
  user?: string
  rights(): RightSet
  /** Record a refusal of this principal (the broker's audit trail and access_denied count). */
  refused?(command: string, resource: string, why: string): void
  /** Whom the broker's in-process connection for its requests acts as (sessions.ts). */
  bound: BoundPrincipal
}

/** Throws 403 ACCESS_DENIED unless `principal` has `right` on `resource` (checks made without a broker request). */
export function authorize(principal: HttpPrincipal | undefined, right: Right, resource: string): void {
  if (principal === undefined || principal.rights().allows(right, resource)) return
  const on = right === 'put' || right === 'get' ? `topic "${resource}"` : right === 'group' ? `group "${resource}"` : 'this broker'
  const message = `access denied: ${principal.who} lacks the "${right}" right on ${on}`
  principal.refused?.(`HTTP ${right}`, `${right} ${resource}`, message)
  throw new HttpError(403, message, 'ACCESS_DENIED')
}

function tokenEquals(given: string, token: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  return a.length === b.length && timingSafeEqual(a, b)
}

const failedLogin = (message: string) => new HttpError(401, message, 'UNAUTHORIZED')

/** The principal of an HTTP request (see the module comment); throws 401/403 for a refused login. */
export async function principalOf(
  req: FastifyRequest,
  access: NonNullable<BrokerReadView['access']>,
  options: {httpToken: string | undefined; basicAllowed: boolean},
): Promise<HttpPrincipal> {
  const header = req.headers.authorization ?? ''
  const bearer = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : (req.headers['x-meta-token'] as string | undefined)
  const basic = header.startsWith('Basic ') ? header.slice('Basic '.length).trim() : undefined
  const address = req.socket.remoteAddress ?? req.ip
  const refused = (name: string) => (command: string, resource: string, why: string) => access.audit.refused(name, address, command, resource, why)
  if (basic === undefined && (bearer === undefined || bearer === '')) {
    return {
      who: 'an anonymous HTTP request (no Authorization header)',
      rights: () => access.rightsOf(undefined),
      refused: refused('(anonymous)'),
      bound: {anonymous: true},
    }
  }
  if (basic !== undefined) {
    if (!options.basicAllowed) {
      throw new HttpError(
        403,
        'HTTP Basic auth sends the password in clear and this server is neither https nor on a loopback address: use https (the broker certificate, --tls-cert) or a token (meta user token)',
        'ACCESS_DENIED',
      )
    }
    const decoded = Buffer.from(basic, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = colon < 0 ? decoded : decoded.slice(0, colon)
    // A name the users file could not hold is a failure like a wrong password (counted under one name).
    const named = colon > 0 && isUserName(user)
    if (await access.login(address, named ? user : '(invalid name)', 'HTTP Basic', () => named && access.checkPassword(user, decoded.slice(colon + 1)))) {
      return {who: `user "${user}"`, user, rights: () => access.rightsOf(user), refused: refused(user), bound: {user}}
    }
    throw failedLogin('authentication failed')
  }
  const token = bearer as string
  if (options.httpToken !== undefined && tokenEquals(token, options.httpToken))
    return {who: 'the --http-token', rights: () => ALL_RIGHTS, bound: {operatorToken: true}}
  const user = access.userOfToken(token)
  if (user !== undefined) return {who: `user "${user}"`, user, rights: () => access.rightsOf(user), refused: refused(user), bound: {user}}
  await access.login(address, '(HTTP token)', 'HTTP token', () => false)
  throw failedLogin('authentication failed: unknown HTTP token')
}

function isUserName(name: string): boolean {
  try {
    checkUserName(name)
    return true
  } catch {
    return false
  }
}
