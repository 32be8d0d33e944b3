/**
 * SCRAM-SHA-256 arithmetic and message texts (RFC 5802 §3, RFC 7677), shared by the broker
 * (which keeps only StoredKey and ServerKey) and meta's client (which knows the password).
 *
 *   SaltedPassword  = PBKDF2-HMAC-SHA-256(password, salt, iterations)
 *   ClientKey       = HMAC(SaltedPassword, "Client Key")    StoredKey = SHA-256(ClientKey)
 *   ServerKey       = HMAC(SaltedPassword, "Server Key")
 *   AuthMessage     = client-first-bare + "," + server-first + "," + client-final-without-proof
 *   ClientProof     = ClientKey XOR HMAC(StoredKey, AuthMessage)
 *   ServerSignature = HMAC(ServerKey, AuthMessage)
 *
 * Channel binding is not used (gs2 header `n,,`; `c=biws`). Pure computation, no I/O.
 */
import type * as Crypto from 'node:crypto'
import {createRequire} from 'node:module'
import {MetaError} from '../errors.js'

/** node:crypto, loaded on first use: most commands connect without logging in. */
let loaded: typeof Crypto | undefined
const crypto = (): typeof Crypto => (loaded ??= createRequire(import.meta.url)('node:crypto') as typeof Crypto)

/** The stored form of a password (users file): enough to verify a login, never to log in. */
export interface ScramCredential {
  /** base64 */
  salt: string
  iterations: number
  /** base64 SHA-256(ClientKey) */
  storedKey: string
  /** base64 HMAC(SaltedPassword, "Server Key") */
  serverKey: string
}

/** Iterations `meta user add` uses (RFC 7677 asks at least 4096; a login costs the client one PBKDF2 of this many rounds, ~10 ms). */
export const SCRAM_ITERATIONS_DEFAULT = 16_384
const SCRAM_ITERATIONS_MIN = 4096
const SCRAM_ITERATIONS_MAX = 1_000_000
/** Header without channel binding, base64 of `n,,` in client-final. */
const GS2_HEADER = 'n,,'
const CHANNEL_BINDING = Buffer.from(GS2_HEADER).toString('base64')

const hmac = (key: Buffer, text: string): Buffer => crypto().createHmac('sha256', key).update(text).digest()
const sha256 = (data: Buffer): Buffer => crypto().createHash('sha256').update(data).digest()

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length)
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i]
  return out
}

/** The keys of a password (client side, and `meta user add`). */
function scramKeys(password: string, salt: Buffer, iterations: number): {clientKey: Buffer; storedKey: Buffer; serverKey: Buffer} {
  const salted = crypto().pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256')
  const clientKey = hmac(salted, 'Client Key')
  return {clientKey, storedKey: sha256(clientKey), serverKey: hmac(salted, 'Server Key')}
}

export function createScramCredential(password: string, iterations = SCRAM_ITERATIONS_DEFAULT): ScramCredential {
  const salt = crypto().randomBytes(16)
  const {storedKey, serverKey} = scramKeys(password, salt, iterations)
  return {salt: salt.toString('base64'), iterations, storedKey: storedKey.toString('base64'), serverKey: serverKey.toString('base64')}
}

export function scramNonce(): string {
  return crypto().randomBytes(18).toString('base64')
}

/** A SCRAM name: `=` and `,` escaped (RFC 5802 §5.1). */
const escapeName = (name: string) => name.replace(/=/g, '=3D').replace(/,/g, '=2C')
const unescapeName = (name: string) => name.replace(/=2C/g, ',').replace(/=3D/g, '=')

/** `k=v` attributes of a SCRAM message; DECODE_ERROR naming what is wrong. */
function attributes(message: string, what: string): Map<string, string> {
  const map = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq !== 1) throw new MetaError('DECODE_ERROR', `malformed ${what} ${JSON.stringify(message)}: expected k=value attributes`)
    map.set(part[0], part.slice(2))
  }
  return map
}

function required(attrs: Map<string, string>, key: string, what: string): string {
  const value = attrs.get(key)
  if (value === undefined || value.length === 0) throw new MetaError('DECODE_ERROR', `${what} lacks its "${key}=" attribute`)
  return value
}

export function clientFirstMessage(user: string, clientNonce: string): {message: string; bare: string} {
  const bare = `n=${escapeName(user)},r=${clientNonce}`
  return {message: GS2_HEADER + bare, bare}
}

export function parseClientFirst(message: string): {user: string; clientNonce: string; bare: string} {
  if (!message.startsWith(GS2_HEADER)) throw new MetaError('DECODE_ERROR', `client-first-message must start with "${GS2_HEADER}" (no channel binding)`)
  const bare = message.slice(GS2_HEADER.length)
  const attrs = attributes(bare, 'client-first-message')
  return {user: unescapeName(required(attrs, 'n', 'client-first-message')), clientNonce: required(attrs, 'r', 'client-first-message'), bare}
}

export function serverFirstMessage(nonce: string, salt: string, iterations: number): string {
  return `r=${nonce},s=${salt},i=${iterations}`
}

function parseServerFirst(message: string, clientNonce: string): {nonce: string; salt: Buffer; iterations: number} {
  const attrs = attributes(message, 'server-first-message')
  const nonce = required(attrs, 'r', 'server-first-message')
  if (!nonce.startsWith(clientNonce)) throw new MetaError('DECODE_ERROR', 'server-first-message nonce does not extend the client nonce')
  const iterations = Number(required(attrs, 'i', 'server-first-message'))
  if (!Number.isInteger(iterations) || iterations < SCRAM_ITERATIONS_MIN || iterations > SCRAM_ITERATIONS_MAX) {
    throw new MetaError('DECODE_ERROR', `server-first-message iterations ${iterations}: expected ${SCRAM_ITERATIONS_MIN}..${SCRAM_ITERATIONS_MAX}`)
  }
  return {nonce, salt: Buffer.from(required(attrs, 's', 'server-first-message'), 'base64'), iterations}
}

/** The client's final message and the server signature it expects back. */
export function clientFinalMessage(
  password: string,
  clientFirstBare: string,
  serverFirst: string,
  clientNonce: string,
): {message: string; serverSignature: string} {
  const {nonce, salt, iterations} = parseServerFirst(serverFirst, clientNonce)
  const {clientKey, storedKey, serverKey} = scramKeys(password, salt, iterations)
  const withoutProof = `c=${CHANNEL_BINDING},r=${nonce}`
  const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`
  const proof = xor(clientKey, hmac(storedKey, authMessage))
  return {message: `${withoutProof},p=${proof.toString('base64')}`, serverSignature: hmac(serverKey, authMessage).toString('base64')}
}

/**
 * Check a client-final-message against a credential; the server-final-message when the proof
 * holds, undefined when it does not (or the nonce is not the one sent).
 */
export function verifyClientFinal(
  message: string,
  credential: ScramCredential,
  clientFirstBare: string,
  serverFirst: string,
  nonce: string,
): string | undefined {
  const attrs = attributes(message, 'client-final-message')
  if (attrs.get('r') !== nonce || attrs.get('c') !== CHANNEL_BINDING) return undefined
  const proof = Buffer.from(required(attrs, 'p', 'client-final-message'), 'base64')
  const storedKey = Buffer.from(credential.storedKey, 'base64')
  if (proof.length !== storedKey.length) return undefined
  const authMessage = `${clientFirstBare},${serverFirst},c=${CHANNEL_BINDING},r=${nonce}`
  const clientKey = xor(proof, hmac(storedKey, authMessage))
  if (!crypto().timingSafeEqual(sha256(clientKey), storedKey)) return undefined
  return `v=${hmac(Buffer.from(credential.serverKey, 'base64'), authMessage).toString('base64')}`
}

/**
 * Whether `password` is the one a credential was made from (PLAIN over TLS, HTTP Basic auth):
 * its StoredKey derived again, off the event loop (PBKDF2 runs in the thread pool).
 */
export function verifyPassword(credential: ScramCredential, password: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    crypto().pbkdf2(password.normalize('NFKC'), Buffer.from(credential.salt, 'base64'), credential.iterations, 32, 'sha256', (error, salted) => {
      if (error) return reject(error)
      const storedKey = Buffer.from(credential.storedKey, 'base64')
      const derived = sha256(hmac(salted, 'Client Key'))
      resolve(derived.length === storedKey.length && crypto().timingSafeEqual(derived, storedKey))
    })
  })
}

export function checkServerFinal(message: string, expectedSignature: string): boolean {
  const attrs = attributes(message, 'server-final-message')
  return attrs.get('v') === expectedSignature
}
