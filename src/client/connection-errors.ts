/**
 * A socket error of a connection to a broker as one line that says what happened, and for TLS
 * what to type (src/client/tls.ts): never OpenSSL's own text; and the broker's error in a
 * result reply as a MetaError.
 */
import type {ResponseFrame} from '../protocol/frames.js'
import {MetaError} from '../protocol/errors.js'
import {tlsFailureReason} from './tls.js'

/** A socket error as one clear line: `cannot reach broker 127.0.0.1:8123: connection refused`. */
export function connectionError(name: string, err: NodeJS.ErrnoException): MetaError {
  const reasons: Record<string, string> = {
    ECONNREFUSED: 'connection refused',
    ECONNRESET: 'connection reset',
    ETIMEDOUT: 'connection timed out',
    EHOSTUNREACH: 'host unreachable',
    ENETUNREACH: 'network unreachable',
    ENOTFOUND: 'host not found',
    EAI_AGAIN: 'host name lookup failed',
    EPIPE: 'connection closed',
  }
  const reason = (err.code && reasons[err.code]) ?? tlsFailureReason(err) ?? err.message
  return new MetaError('CONNECTION_FAILED', `cannot reach broker ${name}: ${reason}`, {cause: err})
}

/** The text of a 200 result, or the broker's error as a MetaError. */
export function resultText(frame: ResponseFrame): string {
  if (frame.type !== 'result') throw new MetaError('DECODE_ERROR', `expected a result response, got ${frame.type}`)
  const body = frame.body.toString('utf8')
  if (frame.code !== 200) throw MetaError.fromWire(frame.code, body)
  return body
}
