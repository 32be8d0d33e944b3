/**
 * What keeps a web page from using a visitor's browser to reach this server
 * (docs/http.md#browsers-and-other-sites), with or without access control:
 *
 *   Host     must be a name the server answers to: its listen address, `localhost`, a loopback
 *            literal, a name given with `--http-allow-host`, or (on a wildcard listen address)
 *            any IP literal. Another name is a DNS rebinding (a page's own name pointed at this
 *            address): 421 Misdirected Request.
 *   Origin   when present, the origin this server is served at (scheme, host and port): else 403.
 *   changes  a request other than GET and HEAD needs a header a page on another site cannot
 *            send without the browser asking this server first (which it never allows):
 *            `X-Meta-Request`, `X-Meta-Token` or `Authorization: Bearer`. Basic credentials do
 *            not count: a browser attaches them on its own. A request with no Content-Type, no
 *            Origin and no credentials (MetaQ's Java HTTP client) needs none: a browser sends
 *            an Origin with every cross-site request that changes something.
 */
import {isIP} from 'node:net'
import type {FastifyRequest} from 'fastify'
import {MetaError} from '../protocol/errors.js'
import {HttpError} from './params.js'

interface BrowserGuardOptions {
  /** The address the server listens on (`--host`). */
  listenHost: string
  /** Further names it answers to (`--http-allow-host`). */
  allowHosts: readonly string[]
  scheme: 'http' | 'https'
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/

/** A `--http-allow-host` value, lower-cased: a host name or an IP literal (no port, no scheme). */
export function checkAllowHost(value: string): string {
  const name = normalize(value.startsWith('[') && value.endsWith(']') ? value.slice(1, -1) : value)
  if (isIP(name) === 0 && !HOST_NAME.test(name)) {
    throw new MetaError(
      'INVALID_ARGUMENT',
      `invalid --http-allow-host ${JSON.stringify(value)}: expected a host name or an IP address, without a port or scheme (broker.example.com)`,
    )
  }
  return name
}

/** A hook that throws 421 or 403 for a request a browser was made to send (see the module comment). */
export function browserGuard(options: BrowserGuardOptions): (req: FastifyRequest) => void {
  const listen = normalize(options.listenHost.replace(/^\[|\]$/g, ''))
  const wildcard = listen === '' || listen === '0.0.0.0' || listen === '::'
  const allowed = new Set([listen, 'localhost', ...options.allowHosts.map(checkAllowHost)])
  const answers = (name: string) => allowed.has(name) || isLoopbackLiteral(name) || (wildcard && isIP(name) !== 0)
  return (req) => {
    const host = req.headers.host
    if (host !== undefined) {
      const name = hostName(host)
      if (name === undefined || !answers(name)) {
        throw new HttpError(
          421,
          `this server does not answer to the host ${JSON.stringify(host)} (Host header): it answers to ${[...allowed].join(', ')} and loopback addresses; start it with --http-allow-host NAME to add a name`,
          'MISDIRECTED',
        )
      }
    }
    const origin = req.headers.origin
    if (origin !== undefined && (host === undefined || !sameOrigin(origin, `${options.scheme}://${host}`))) {
      throw new HttpError(
        403,
        `cross-origin request refused: Origin ${JSON.stringify(origin)} is not this server's (${options.scheme}://${host ?? '?'})`,
        'FORBIDDEN',
      )
    }
    if (req.method === 'GET' || req.method === 'HEAD') return
    const h = req.headers
    const authorization = h.authorization ?? ''
    if (nonEmpty(h['x-meta-request']) || nonEmpty(h['x-meta-token']) || authorization.startsWith('Bearer ')) return
    if (origin === undefined && authorization === '' && h['content-type'] === undefined) return
    throw new HttpError(
      403,
      `${req.method} ${req.url.split('?')[0]} changes the broker: send the header "X-Meta-Request: 1" (or the token as "X-Meta-Token" or "Authorization: Bearer"); Basic credentials alone are not enough, a browser sends them for any site`,
      'FORBIDDEN',
    )
  }
}

function nonEmpty(value: string | string[] | undefined): boolean {
  return value !== undefined && value.length > 0
}

function normalize(name: string): string {
  const lower = name.trim().toLowerCase()
  return lower.endsWith('.') ? lower.slice(0, -1) : lower
}

/** The name part of a Host header (`name`, `name:port`, `[v6]:port`), or undefined when malformed. */
function hostName(header: string): string | undefined {
  const h = header.trim()
  if (h.startsWith('[')) {
    const end = h.indexOf(']')
    return end < 0 ? undefined : normalize(h.slice(1, end))
  }
  const colon = h.indexOf(':')
  return normalize(colon < 0 ? h : h.slice(0, colon))
}

function isLoopbackLiteral(name: string): boolean {
  return name === '::1' || (isIP(name) === 4 && name.startsWith('127.'))
}

function sameOrigin(origin: string, served: string): boolean {
  try {
    return new URL(origin).origin === new URL(served).origin
  } catch {
    return false
  }
}
