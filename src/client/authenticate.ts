/**
 * The client's side of a SCRAM-SHA-256 login (docs/protocol.md#authentication): sent by
 * BrokerConnection right after every connect, before any other request. The password stays in
 * this process; the broker's server-final-message is checked, so a broker that does not know the
 * user's keys cannot pass for one that does.
 */
import type {OutputBuffer} from '../protocol/output-buffer.js'
import type {ResponseFrame} from '../protocol/frames.js'
import {MetaError} from '../protocol/errors.js'
import {encodeAuthFinish, encodeAuthStart, SCRAM_SHA_256} from '../protocol/commands/auth.js'
import {checkServerFinal, clientFinalMessage, clientFirstMessage, scramNonce} from '../protocol/commands/auth-scram.js'

export interface Credentials {
  user: string
  password: string
}

type Send = (write: (out: OutputBuffer, opaque: number) => void) => Promise<ResponseFrame>

function okText(frame: ResponseFrame): string {
  const body = frame.body.toString('utf8')
  if (frame.type !== 'result') throw new MetaError('DECODE_ERROR', `expected a result response to a login, got ${frame.type}`)
  if (frame.code !== 200) throw MetaError.fromWire(frame.code, body)
  return body
}

/** Log in as `credentials.user`; rejects with UNAUTHORIZED on a wrong user or password. */
export async function scramLogin(credentials: Credentials, broker: string, send: Send): Promise<void> {
  const clientNonce = scramNonce()
  const first = clientFirstMessage(credentials.user, clientNonce)
  const serverFirst = okText(await send((out, opaque) => encodeAuthStart(out, SCRAM_SHA_256, first.message, opaque)))
  const final = clientFinalMessage(credentials.password, first.bare, serverFirst, clientNonce)
  const serverFinal = okText(await send((out, opaque) => encodeAuthFinish(out, final.message, opaque)))
  if (!checkServerFinal(serverFinal, final.serverSignature)) {
    throw new MetaError(
      'UNAUTHORIZED',
      `broker ${broker} answered the login of user "${credentials.user}" with a wrong server signature: it does not hold that user's keys`,
    )
  }
}
