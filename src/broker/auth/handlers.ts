/**
 * `auth-start` and `auth-finish` (protocol/commands/auth.ts): the broker's side of SCRAM-SHA-256.
 * A user that does not exist gets a server-first-message like any other (a stable fake salt)
 * and fails at auth-finish, so logins do not tell which users exist. Every login is checked at
 * the pace of throttle.ts (a failure answered late, per user and address) and one at a time per
 * connection. A name the users file could not hold is refused at auth-start. Nothing secret is
 * logged.
 *
 * PLAIN (user and password in the auth-start body) is taken on TLS connections only: on a plain
 * one it is refused before anything is checked, so a client cannot learn from it which
 * passwords are right, and the answer says why.
 */
import {Status} from '../../protocol/errors.js'
import {parsePlainMessage, PLAIN, type AuthFinishCommand, type AuthStartCommand} from '../../protocol/commands/auth.js'
import {
  parseClientFirst,
  scramNonce,
  serverFirstMessage,
  verifyClientFinal,
  verifyPassword,
  SCRAM_ITERATIONS_DEFAULT,
} from '../../protocol/commands/auth-scram.js'
import type {Connection} from '../connection.js'
import {checkUserName} from './users-file.js'
import {admitLogin} from './limits.js'
import type {BrokerContext} from '../context.js'

const FAILED = 'authentication failed'

/** The address failures are counted against: the client's IP, not its port. */
function addressOf(conn: Connection): string {
  return conn.socket.remoteAddress ?? conn.remote
}

export function handleAuthStart(ctx: BrokerContext, conn: Connection, frame: AuthStartCommand): void {
  const access = ctx.access
  if (conn.bound !== undefined) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-start on an in-process connection: it acts as the principal it was opened for, which no login replaces')
    return
  }
  if (conn.loggingIn) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-start while a login is being answered on this connection: wait for its answer')
    return
  }
  if (frame.mechanism === PLAIN) return handlePlain(ctx, conn, frame)
  let first
  try {
    first = parseClientFirst(frame.body.toString('utf8'))
    checkUserName(first.user)
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, `auth-start: ${(error as Error).message}`)
    return
  }
  const credential = access?.credential(first.user)
  const salt = credential?.salt ?? access?.fakeSalt(first.user) ?? ''
  const nonce = first.clientNonce + scramNonce()
  const serverFirst = serverFirstMessage(nonce, salt, credential?.iterations ?? SCRAM_ITERATIONS_DEFAULT)
  conn.user = undefined
  conn.quota = undefined
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
  const clientFinal = frame.body.toString('utf8')
  answerLogin(ctx, conn, frame.opaque, exchange.user, 'SCRAM-SHA-256', () => {
    try {
      return credential === undefined ? undefined : verifyClientFinal(clientFinal, credential, exchange.clientFirstBare, exchange.serverFirst, exchange.nonce)
    } catch {
      return undefined
    }
  })
}

/** A TLS socket (node:tls TLSSocket) says so; a plain one has no `encrypted`. */
function isTls(conn: Connection): boolean {
  return (conn.socket as {encrypted?: boolean}).encrypted === true
}

function handlePlain(ctx: BrokerContext, conn: Connection, frame: AuthStartCommand): void {
  conn.user = undefined
  conn.quota = undefined
  conn.authExchange = undefined
  if (!isTls(conn)) {
    conn.sendError(
      'BAD_REQUEST',
      frame.opaque,
      'auth-start PLAIN refused: it sends the password in clear and this connection is not TLS; use SCRAM-SHA-256 here, or PLAIN on the TLS port (--tls-port)',
    )
    return
  }
  const plain = parsePlainMessage(frame.body)
  if (plain === undefined) {
    conn.sendError('BAD_REQUEST', frame.opaque, 'auth-start PLAIN: expected the body "\\0<user>\\0<password>" (RFC 4616, no other authorization identity)')
    return
  }
  try {
    checkUserName(plain.user)
  } catch (error) {
    conn.sendError('BAD_REQUEST', frame.opaque, `auth-start PLAIN: ${(error as Error).message}`)
    return
  }
  const credential = ctx.access?.credential(plain.user)
  answerLogin(ctx, conn, frame.opaque, plain.user, PLAIN, async () =>
    credential !== undefined && (await verifyPassword(credential, plain.password)) ? '' : undefined,
  )
}

/**
 * Check a login at the pace of throttle.ts and answer it: `check` gives the 200's body when the
 * login is right, undefined when it is not (answered late, counted).
 */
function answerLogin(
  ctx: BrokerContext,
  conn: Connection,
  opaque: number,
  user: string,
  mechanism: string,
  check: () => string | undefined | Promise<string | undefined>,
): void {
  const access = ctx.access
  if (access === undefined) {
    conn.sendError('UNAUTHORIZED', opaque, `${FAILED}: this broker has no users (start it with --users)`, Status.UNAUTHORIZED)
    return
  }
  let body: string | undefined
  conn.beginRequest()
  conn.loggingIn = true
  access
    .login(addressOf(conn), user, mechanism, async () => {
      body = await check()
      return body !== undefined
    })
    .then(
      (ok) => {
        if (ok && !admitLogin(ctx, access, conn, user, opaque)) return
        if (ok) {
          conn.user = user
          conn.quota = access.quotaOf(user)
          ctx.log.info('authenticated', {remote: conn.remote, user, mechanism})
          conn.sendResult(Status.OK, opaque, body ?? '')
        } else {
          conn.sendError('UNAUTHORIZED', opaque, FAILED, Status.UNAUTHORIZED)
        }
      },
      (error: Error) => {
        ctx.log.error('password check failed', {remote: conn.remote, error: error.message})
        conn.sendError('INTERNAL', opaque, `password check failed: ${error.message}`)
      },
    )
    .finally(() => {
      conn.loggingIn = false
      conn.endRequest()
    })
}
