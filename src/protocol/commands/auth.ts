/**
 * Authentication — meta extension (docs/protocol.md#authentication): SCRAM-SHA-256
 * (RFC 5802, RFC 7677) over the MetaQ text protocol, in two round trips:
 *
 *   auth-start <mechanism> <len> <opaque>\r\n<client-first-message>
 *       mechanism `SCRAM-SHA-256`; body `n,,n=<user>,r=<client nonce>`
 *       → 200 + server-first-message `r=<nonce>,s=<salt base64>,i=<iterations>`
 *       → 400 BAD_REQUEST for another mechanism or a malformed message
 *   auth-finish <len> <opaque>\r\n<client-final-message>
 *       body `c=biws,r=<nonce>,p=<proof base64>`
 *       → 200 + server-final-message `v=<server signature base64>`: the connection now has
 *         the user's rights
 *       → 401 UNAUTHORIZED `authentication failed` (wrong user or password: the same answer)
 *
 * or, on a TLS connection only, in one round trip (RFC 4616):
 *
 *   auth-start PLAIN <len> <opaque>\r\n[<authzid>]\0<user>\0<password>
 *       → 200 (empty body): the connection now has the user's rights
 *       → 401 UNAUTHORIZED `authentication failed`
 *       → 400 BAD_REQUEST on a plain (not TLS) connection: PLAIN is refused there, checked
 *         nothing, and says to use SCRAM-SHA-256 or the TLS port
 *
 * With SCRAM-SHA-256 the password never crosses the wire; PLAIN sends it, inside TLS only.
 * A MetaQ client never sends these commands.
 */
import type {OutputBuffer} from '../output-buffer.js'
import {badToken, lengthField, opaqueField, tokenCount} from '../tokens.js'

export const SCRAM_SHA_256 = 'SCRAM-SHA-256'
export const PLAIN = 'PLAIN'
const AUTH_MECHANISMS = [SCRAM_SHA_256, PLAIN] as const
type AuthMechanism = (typeof AUTH_MECHANISMS)[number]

export interface AuthStartCommand {
  readonly type: 'auth-start'
  mechanism: AuthMechanism
  opaque: number
  body: Buffer
}

export interface AuthFinishCommand {
  readonly type: 'auth-finish'
  opaque: number
  body: Buffer
}

const EMPTY = Buffer.alloc(0)

export function parseAuthStart(tokens: string[]): {frame: AuthStartCommand; bodyLength: number} {
  tokenCount('auth-start', tokens, [4])
  const mechanism = tokens[1] as AuthMechanism
  if (!AUTH_MECHANISMS.includes(mechanism)) throw badToken('auth-start', 'mechanism', tokens[1], AUTH_MECHANISMS.join(' or '))
  return {
    frame: {type: 'auth-start', mechanism, opaque: opaqueField('auth-start', tokens[3]), body: EMPTY},
    bodyLength: lengthField('auth-start', 'length', tokens[2]),
  }
}

export function parseAuthFinish(tokens: string[]): {frame: AuthFinishCommand; bodyLength: number} {
  tokenCount('auth-finish', tokens, [3])
  return {
    frame: {type: 'auth-finish', opaque: opaqueField('auth-finish', tokens[2]), body: EMPTY},
    bodyLength: lengthField('auth-finish', 'length', tokens[1]),
  }
}

export function encodeAuthStart(out: OutputBuffer, mechanism: AuthMechanism, clientFirst: string, opaque: number): void {
  const body = Buffer.from(clientFirst)
  out.writeAscii(`auth-start ${mechanism} ${body.length} ${opaque}\r\n`)
  out.writeBytes(body)
}

/** The user and password of a PLAIN message; undefined when it is not `[authzid]\0user\0password`. */
export function parsePlainMessage(body: Buffer): {user: string; password: string} | undefined {
  const parts = body.toString('utf8').split('\0')
  if (parts.length !== 3 || parts[1] === '' || parts[2] === '') return undefined
  // An authorization identity other than the user itself is not supported (no impersonation).
  if (parts[0] !== '' && parts[0] !== parts[1]) return undefined
  return {user: parts[1], password: parts[2]}
}

export function encodeAuthFinish(out: OutputBuffer, clientFinal: string, opaque: number): void {
  const body = Buffer.from(clientFinal)
  out.writeAscii(`auth-finish ${body.length} ${opaque}\r\n`)
  out.writeBytes(body)
}
