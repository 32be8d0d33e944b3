/**
 * `auth-start` and `auth-finish` (protocol/commands/auth.ts): the broker's side of SCRAM-SHA-256.
 * A user that does not exist gets a server-first-message like any other (a stable fake salt)
 * and fails at auth-finish, so logins do not tell which users exist. Failed logins are answered
 * late and counted per address (access.ts). Nothing secret is logged.
 *
 * PLAIN (user and password in the auth-start body) is taken on TLS connections only: on a plain
 * one it is refused before anything is checked, so a client cannot learn from it which
 * passwords are right, and the answer says why.
 */
import {Status} from '../../protocol/errors.js'
import {parsePlainMessage, PLAIN, type AuthFinishCommand, type AuthStartCommand} from '../../protocol/commands/auth.js'
import {parseClientFirst, scramNonce, serverFirstMessage, verifyClientFinal, verifyPassword, SCRAM_ITERATIONS_DEFAULT} from '../../protocol/commands/auth-scram.js'
import type {Connection} from '../connection.js'
import type {BrokerContext} from '../context.js'

const FAILED = 'authentication failed'

/** The address failures are counted against: the client's IP, not its port. */
function addressOf(conn: Connection): string {
  return conn.socket.remoteAddress ?? conn.remote
}

export function handleAuthStart(ctx: BrokerContext, conn: Connection, frame: AuthStartCommand): void {
  const access = ctx.access
  const lockedMs = access?.lockedForMs(addressOf(conn)) ?? 0
  if (lockedMs > 0) {
    conn.sendError('UNAUTHORIZED', frame.opaque, `${FAILED}: too many failed logins from this address; try again in ${Math.ceil(lockedMs / 1000)} s`, Status.UNAUTHORIZED)
    return
  }
  if (frame.mechanism === PLAIN) return handlePlain(ctx, conn, frame)
  let first
  try {
    first = parseClientFirst(frame.body.toString('utf8'))
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, `auth-start: ${(error as Error).message}`)
    return
  }
  const credential = access?.credential(first.user)
  const salt = credential?.salt ?? access?.fakeSalt(first.user) ?? ''
  const nonce = first.clientNonce + scramNonce()
  const serverFirst = serverFirstMessage(nonce, salt, credential?.iterations ?? SCRAM_ITERATIONS_DEFAULT)
  conn.user = undefined
  conn.authExchange = {user: first.user, clientFirstBare: first.bare, serverFirst, nonce}
  conn.sendResult(Status.OK, frame.opaque, serverFirst)
}

export function handleAuthFinish(ctx: BrokerContext, conn: Connection, frame: AuthFinishCommand): void {
  const exchange = conn.authExchange
  conn.authExchange = undefined
  if (exchange === undefined) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-finish without auth-start: send auth-start first')
    return
  }
  const access = ctx.access
  const credential = access?.credential(exchange.user)
  let serverFinal: string | undefined
  try {
    serverFinal = credential === undefined ? undefined : verifyClientFinal(frame.body.toString('utf8'), credential, exchange.clientFirstBare, exchange.serverFirst, exchange.nonce)
  } catch {
    serverFinal = undefined
  }
  answerLogin(ctx, conn, frame.opaque, exchange.user, serverFinal, 'SCRAM-SHA-256')
}

/** A TLS socket (node:tls TLSSocket) says so; a plain one has no `encrypted`. */
function isTls(conn: Connection): boolean {
  return (conn.socket as {encrypted?: boolean}).encrypted === true
}

function handlePlain(ctx: BrokerContext, conn: Connection, frame: AuthStartCommand): void {
  conn.user = undefined
  conn.authExchange = undefined
  if (!isTls(conn)) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-start PLAIN refused: it sends the password in clear and this connection is not TLS; use SCRAM-SHA-256 here, or PLAIN on the TLS port (--tls-port)')
    return
  }
  const plain = parsePlainMessage(frame.body)
  if (plain === undefined) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-start PLAIN: expected the body "\\0<user>\\0<password>" (RFC 4616, no other authorization identity)')
    return
  }
  const credential = ctx.access?.credential(plain.user)
  conn.beginRequest()
  const checked = credential === undefined ? Promise.resolve(false) : verifyPassword(credential, plain.password)
  checked.then(
    (ok) => {
      conn.endRequest()
      answerLogin(ctx, conn, frame.opaque, plain.user, ok ? '' : undefined, PLAIN)
    },
    (error: Error) => {
      conn.endRequest()
      ctx.log.error('password check failed', {remote: conn.remote, error: error.message})
      conn.sendError('INTERNAL', frame.opaque, `password check failed: ${error.message}`)
    },
  )
}

/** Answer a login: `body` is the 200's body when it succeeded, undefined when it failed (answered late, counted). */
function answerLogin(ctx: BrokerContext, conn: Connection, opaque: number, user: string, body: string | undefined, mechanism: string): void {
  const access = ctx.access
  const address = addressOf(conn)
  if (body !== undefined && access !== undefined) {
    access.succeeded(address)
    conn.user = user
    ctx.log.info('authenticated', {remote: conn.remote, user, mechanism})
    conn.sendResult(Status.OK, opaque, body)
    return
  }
  const delayMs = access?.failed(address, user) ?? 0
  conn.beginRequest()
  setTimeout(() => {
    conn.sendError('UNAUTHORIZED', opaque, FAILED, Status.UNAUTHORIZED)
    conn.endRequest()
  }, delayMs).unref()
}
