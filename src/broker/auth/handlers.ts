/**
 * `auth-start` and `auth-finish` (protocol/commands/auth.ts): the broker's side of SCRAM-SHA-256.
 * A user that does not exist gets a server-first-message like any other (a stable fake salt)
 * and fails at auth-finish, so logins do not tell which users exist. Failed logins are answered
 * late and counted per address (access.ts). Nothing secret is logged.
 */
import {Status} from '../../protocol/errors.js'
import type {AuthFinishCommand, AuthStartCommand} from '../../protocol/commands/auth.js'
import {parseClientFirst, scramNonce, serverFirstMessage, verifyClientFinal, SCRAM_ITERATIONS_DEFAULT} from '../../protocol/commands/auth-scram.js'
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
  const address = addressOf(conn)
  if (serverFinal !== undefined && access !== undefined) {
    access.succeeded(address)
    conn.user = exchange.user
    ctx.log.info('authenticated', {remote: conn.remote, user: exchange.user})
    conn.sendResult(Status.OK, frame.opaque, serverFinal)
    return
  }
  const delayMs = access?.failed(address, exchange.user) ?? 0
  conn.beginRequest()
  setTimeout(() => {
    conn.sendError('UNAUTHORIZED', frame.opaque, FAILED, Status.UNAUTHORIZED)
    conn.endRequest()
  }, delayMs).unref()
}
