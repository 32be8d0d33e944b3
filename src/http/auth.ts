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
 * Each request the HTTP server sends its broker on behalf of an HTTP request is checked, before
 * it leaves, against that request's rights with the broker's own check (accessDenial), on the
 * frame as encoded: the HTTP server's one connection to its broker is logged in as an in-memory
 * user with every right, and no request goes over it unchecked. Refused: 403 ACCESS_DENIED
 * with the broker's message. Failed logins (a wrong password or an unknown token) are slowed and
 * counted as on the broker's port (the same per-address runs, `auth_failures`).
 *
 * Without access control nothing here runs: the operator token rule (server.ts) holds alone.
 */
import {AsyncLocalStorage} from 'node:async_hooks'
import {timingSafeEqual} from 'node:crypto'
import type {FastifyRequest} from 'fastify'
import {accessDenial, ALL_RIGHTS, checkUserName, NO_RIGHTS, type BrokerReadView, type Right, type RightSet} from '../broker/read-view.js'
import {BrokerConnection, type ConnectionOptions} from '../client/connection.js'
import type {ResponseCallback} from '../client/pending.js'
import {MetaError} from '../protocol/errors.js'
import {createRequestDecoder} from '../protocol/frames.js'
import {OutputBuffer} from '../protocol/output-buffer.js'
import {HttpError} from './params.js'

/** An HTTP request's principal: how messages name it, and its rights (read at each check: a reload applies). */
export interface HttpPrincipal {
  who: string
  /** The users-file user it is (a Basic login or a user's token), for what it may see of its own. */
  user?: string
  rights(): RightSet
  /** Record a refusal of this principal (the broker's audit trail and access_denied count). */
  refused?(command: string, resource: string, why: string): void
}

/** The request being served, for the checks made deeper down (the connection's requests). */
const current = new AsyncLocalStorage<HttpPrincipal>()

/** Run `next` (fastify's hook callback, which goes on to the handler) as `principal`. */
export function runAs(principal: HttpPrincipal | undefined, next: () => void): void {
  if (principal === undefined) next()
  else current.run(principal, next)
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
export async function principalOf(req: FastifyRequest, access: NonNullable<BrokerReadView['access']>, options: {httpToken: string | undefined; basicAllowed: boolean}): Promise<HttpPrincipal> {
  const header = req.headers.authorization ?? ''
  const bearer = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : (req.headers['x-meta-token'] as string | undefined)
  const basic = header.startsWith('Basic ') ? header.slice('Basic '.length).trim() : undefined
  const address = req.socket.remoteAddress ?? req.ip
  const refused = (name: string) => (command: string, resource: string, why: string) => access.audit.refused(name, address, command, resource, why)
  if (basic === undefined && (bearer === undefined || bearer === '')) {
    return {who: 'an anonymous HTTP request (no Authorization header)', rights: () => access.rightsOf(undefined), refused: refused('(anonymous)')}
  }
  if (basic !== undefined) {
    if (!options.basicAllowed) {
      throw new HttpError(403, 'HTTP Basic auth sends the password in clear and this server is neither https nor on a loopback address: use https (the broker certificate, --tls-cert) or a token (meta user token)', 'ACCESS_DENIED')
    }
    const decoded = Buffer.from(basic, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    const user = colon < 0 ? decoded : decoded.slice(0, colon)
    // A name the users file could not hold is a failure like a wrong password (counted under one name).
    const named = colon > 0 && isUserName(user)
    if (await access.login(address, named ? user : '(invalid name)', 'HTTP Basic', () => named && access.checkPassword(user, decoded.slice(colon + 1)))) {
      return {who: `user "${user}"`, user, rights: () => access.rightsOf(user), refused: refused(user)}
    }
    throw failedLogin('authentication failed')
  }
  const token = bearer as string
  if (options.httpToken !== undefined && tokenEquals(token, options.httpToken)) return {who: 'the --http-token', rights: () => ALL_RIGHTS}
  const user = access.userOfToken(token)
  if (user !== undefined) return {who: `user "${user}"`, user, rights: () => access.rightsOf(user), refused: refused(user)}
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

/**
 * The HTTP server's connection to its broker when access control is on: logged in as an
 * in-memory user with every right, it checks each request, as encoded, against the rights of
 * the HTTP request it is made for (the one running, AsyncLocalStorage) before sending it. A
 * request made outside any HTTP request is refused: nothing goes over it unchecked.
 */
const OUTSIDE: HttpPrincipal = {who: 'the HTTP server outside any HTTP request', rights: () => NO_RIGHTS}

export class CheckedConnection extends BrokerConnection {
  private readonly requestDecoder = createRequestDecoder({maxBodyBytes: Number.MAX_SAFE_INTEGER})

  static async open(options: ConnectionOptions): Promise<CheckedConnection> {
    const conn = new CheckedConnection(options)
    try {
      await conn.ready()
    } catch (error) {
      conn.close()
      throw error
    }
    return conn
  }

  override request(write: (out: OutputBuffer, opaque: number) => void, callback: ResponseCallback, timeoutMs?: number): void {
    const denied = this.denial(write)
    if (denied !== undefined) {
      callback(new MetaError('ACCESS_DENIED', denied), undefined)
      return
    }
    super.request(write, callback, timeoutMs)
  }

  private denial(write: (out: OutputBuffer, opaque: number) => void): string | undefined {
    // The connection's own requests (its capabilities, heartbeats) need no right; anything
    // else made outside an HTTP request has none.
    const principal = current.getStore() ?? OUTSIDE
    const out = new OutputBuffer()
    write(out, 0)
    this.requestDecoder.push(out.take())
    const frame = this.requestDecoder.next()
    if (frame === undefined || this.requestDecoder.inFrame) throw new Error('the HTTP server encoded a partial request frame')
    const denied = accessDenial(principal.rights(), frame, principal.who)
    if (denied !== undefined) principal.refused?.(frame.type, (frame as {topic?: string; group?: string}).topic ?? (frame as {group?: string}).group ?? '', denied)
    return denied
  }
}
