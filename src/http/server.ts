/**
 * The broker's HTTP server (`meta serve --http <port>`, or dashboardHttpPort set in
 * server.ini): one fastify server in the broker process, on the broker's listen address,
 * serving MetaQ's HTTP plugin paths (gateway.ts), `/metrics` (metrics.ts), the dashboard's
 * JSON API and live events (api.ts) and the dashboard's static files (assets/dashboard).
 * MetaQ served its HTTP plugin and its dashboard on two ports; meta serves both on one.
 *
 * It talks to its broker as a client does, in the MetaQ protocol, over in-process connections
 * each bound to the principal of the HTTP requests it carries (sessions.ts; shown among the
 * broker's connections), and reads counters the broker keeps through its read-only view
 * (broker/read-view.ts).
 *
 * Token (docs/http.md): with `token` set, every mutating endpoint (put, reload, skip, offset
 * changes) needs it (`Authorization: Bearer <token>`); without one, mutating endpoints are
 * open on a loopback address and refused on any other.
 *
 * On a broker with access control (a users file or [security]), users and rights decide
 * instead (auth.ts): Basic auth or a per-user token, the anonymous rights otherwise, and the
 * token above is one with every right. The broker checks each request as that principal's.
 */
import {timingSafeEqual} from 'node:crypto'
import {isIP} from 'node:net'
import Fastify, {type FastifyError, type FastifyRequest} from 'fastify'
import {SEES_ALL, visibilityOf, type BrokerReadView} from '../broker/read-view.js'
import {AdminClient} from '../client/admin.js'
import {readFileSync} from 'node:fs'
import {silentLogger, type Logger} from '../log.js'
import {errorStatus, isMetaError, MetaError} from '../protocol/errors.js'
import {RECORD_HEADER_BYTES} from '../protocol/message-set.js'
import {registerApi} from './api.js'
import {browserGuard} from './browser-guard.js'
import {authorize, principalOf, type HttpPrincipal} from './auth.js'
import type {HttpContext} from './context.js'
import {registerGateway, tooLarge, wantsJson} from './gateway.js'
import {HISTORY_INTERVAL_MS, startCounterHistory} from './history.js'
import {topicMessageCounts} from './api.js'
import {registerMetrics} from './metrics.js'
import {HttpError} from './params.js'
import {BrokerSessions} from './sessions.js'
import {registerStatic} from './static.js'

interface HttpServerOptions {
  broker: BrokerReadView
  /** TCP port; 0 = any free port. */
  port: number
  /** Address to listen on (default: the broker's listen address). */
  host?: string
  /** Token mutating endpoints require (default: none; see the module comment). */
  token?: string
  /** The package root (assets/ is read from there). */
  assetRoot: string
  logger?: Logger
  /** PEM files: serve https with them (the broker's TLS certificate, when tlsPort is set). */
  tls?: {cert: string; key: string}
  /** Names the server answers to besides its address and localhost (`--http-allow-host`; browser-guard.ts). */
  allowHosts?: readonly string[]
}

export interface HttpServer {
  readonly host: string
  readonly port: number
  /** `http://host:port/` (`https://` with tls) */
  readonly url: string
  close(): Promise<void>
}

export async function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const {broker} = options
  const log = (options.logger ?? silentLogger).child('http')
  const host = options.host ?? broker.host
  const token = options.token === undefined || options.token === '' ? undefined : options.token
  const loopback = isLoopback(host)
  // Before connecting: a bad --http-allow-host is refused with nothing to undo.
  const guard = browserGuard({listenHost: host, allowHosts: options.allowHosts ?? [], scheme: options.tls === undefined ? 'http' : 'https'})
  const access = broker.access
  const sessions = new BrokerSessions(broker, log)
  const maxBodyBytes = Math.max(0, broker.config.system.maxTransferBytes - RECORD_HEADER_BYTES)
  const principals = new WeakMap<FastifyRequest, HttpPrincipal>()
  /** The broker's in-process connection acting as the request's principal (anonymous without access control). */
  const connection = (req: FastifyRequest) => sessions.connection(principals.get(req)?.bound ?? {anonymous: true})
  const ctx: HttpContext = {
    broker,
    admin: async (req) => new AdminClient(await connection(req)),
    request: async (req, write, timeoutMs) => (await connection(req)).requestAsync(write, timeoutMs),
    // With access control the rights decide (each request to the broker is checked).
    authorizeMutation: (req) => (access === undefined ? authorizeMutation(req.headers, token, host) : undefined),
    authorize: (req, right, resource) => authorize(principals.get(req), right, resource),
    viewer: (req) => {
      const principal = principals.get(req)
      return principal === undefined ? {seen: SEES_ALL} : {seen: visibilityOf(principal.rights()), user: principal.user}
    },
    maxBodyBytes,
    assetRoot: options.assetRoot,
    log,
  }
  const https = options.tls === undefined ? undefined : readPemPair(options.tls.cert, options.tls.key)
  const app = Fastify({
    ...(https === undefined ? {} : {https}),
    logger: false,
    bodyLimit: maxBodyBytes,
    forceCloseConnections: true,
    // /put?… is MetaQ's; fastify would otherwise also answer /put/?… differently.
    routerOptions: {ignoreTrailingSlash: true},
    rewriteUrl: (req) => brokerIdPath(req.url ?? '/', broker.config.system.brokerId),
  })
  // Every body is taken raw: MetaQ's put takes the payload whatever its Content-Type, and the
  // JSON endpoints parse their own small bodies.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', {parseAs: 'buffer'}, (_req, body, done) => done(null, body))
  // First of all: a request a web page made a browser send is refused before any login.
  app.addHook('onRequest', async (req) => guard(req))
  if (access !== undefined) {
    const basicAllowed = https !== undefined || loopback
    app.addHook('onRequest', async (req) => {
      principals.set(req, await principalOf(req, access, {httpToken: token, basicAllowed}))
    })
  }
  app.setErrorHandler((error: FastifyError | HttpError | MetaError, req, reply) => {
    const {status, message, code} = describeError(error, maxBodyBytes, req)
    if (status === 401 && access !== undefined) reply.header('www-authenticate', 'Basic realm="meta", charset="UTF-8"')
    if (status >= 500) log.warn('request failed', {method: req.method, url: req.url, status, error: message})
    // A body that was not read: close the connection rather than read it to the end.
    if (status === 413) reply.header('connection', 'close')
    reply.code(status)
    if (wantsJson(req) || isApi(req)) reply.send({status, error: message, code})
    else reply.type('text/plain; charset=utf-8').send(message)
  })
  app.setNotFoundHandler((req, reply) => {
    reply.code(404)
    const message = `no such endpoint: ${req.method} ${req.url.split('?')[0]} (docs/http.md lists them)`
    if (wantsJson(req) || isApi(req)) reply.send({status: 404, error: message, code: 'NOT_FOUND'})
    else reply.type('text/plain; charset=utf-8').send(message)
  })
  app.all(`${MISDIRECTED}/:command/:id`, async (req) => {
    const {command, id} = req.params as {command: string; id: string}
    throw new HttpError(
      400,
      `broker id "${id}" in /${command}/${id} is not this broker's: this is broker ${broker.config.system.brokerId}, ask the broker with id ${id}`,
    )
  })
  const history = startCounterHistory(
    () => {
      const traffic = broker.traffic()
      const counters = broker.stats.counters
      return {timeMs: Date.now(), cmdPut: counters.cmdPut, cmdGet: counters.cmdGet, receivedBytes: traffic.received, sentBytes: traffic.sent}
    },
    () => topicMessageCounts(broker),
  )
  app.addHook('onClose', async () => history.stop())
  app.get('/api/history', async () => ({intervalMs: HISTORY_INTERVAL_MS, samples: history.samples()}))
  registerGateway(app, ctx)
  registerMetrics(app, ctx)
  registerApi(app, ctx, history)
  registerStatic(app, ctx)

  try {
    await app.listen({port: options.port, host})
  } catch (error) {
    sessions.close()
    await app.close().catch(() => undefined)
    throw listenError(error as NodeJS.ErrnoException, host, options.port)
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : options.port
  const url = `${https === undefined ? 'http' : 'https'}://${host.includes(':') ? `[${host}]` : host}:${port}/`
  if (!loopback && token === undefined && access === undefined) {
    log.warn(
      'HTTP server on a non-loopback address without a token ($META_HTTP_TOKEN or --http-token-file): put, reload, skip and offset changes are refused',
      {host},
    )
  }
  let closing: Promise<void> | undefined
  return {
    host,
    port,
    url,
    close: () =>
      (closing ??= (async () => {
        await app.close()
        sessions.close()
      })()),
  }
}

/** Throws 401/403 unless a request with these headers may mutate (see the module comment). */
export function authorizeMutation(headers: FastifyRequest['headers'], token: string | undefined, host: string): void {
  if (token === undefined) {
    if (isLoopback(host)) return
    throw new HttpError(
      403,
      `this endpoint changes the broker and the HTTP server listens on ${host}, not a loopback address: start it with --http-token-file FILE or $META_HTTP_TOKEN to allow it`,
    )
  }
  const header = headers.authorization ?? ''
  const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : (headers['x-meta-token'] as string | undefined)
  if (given === undefined || given === '') throw new HttpError(401, 'this endpoint needs the HTTP token: send "Authorization: Bearer <token>"')
  const a = Buffer.from(given)
  const b = Buffer.from(token)
  if (a.length !== b.length || !timingSafeEqual(a, b)) throw new HttpError(401, 'wrong HTTP token')
}

function describeError(
  error: FastifyError | HttpError | MetaError,
  maxBodyBytes: number,
  req: FastifyRequest,
): {status: number; message: string; code: string} {
  if (error instanceof HttpError) return {status: error.statusCode, message: error.message, code: error.code}
  if (isMetaError(error)) {
    const status = error.code === 'CONNECTION_CLOSED' || error.code === 'CONNECTION_FAILED' ? 503 : errorStatus(error.code)
    return {status, message: error.message, code: error.code}
  }
  const fastify = error as FastifyError
  if (fastify.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const e = tooLarge(req.headers['content-length'] ?? 'more than the limit of', maxBodyBytes)
    return {status: 413, message: e.message, code: e.code}
  }
  if (typeof fastify.statusCode === 'number' && fastify.statusCode >= 400 && fastify.statusCode < 500) {
    return {status: fastify.statusCode, message: fastify.message, code: 'BAD_REQUEST'}
  }
  return {status: 500, message: `internal error: ${error.message}`, code: 'INTERNAL'}
}

/** Where requests naming another broker's id (`/put/3` on broker 0) are answered 400. */
const MISDIRECTED = '/misdirected-broker-id'
const BROKER_ID_PATH = /^\/(put|get|offset)\/(\d+)\/?(\?.*)?$/

/**
 * MetaQ's own Java HTTP client (metamorphosis-http-client) names the broker in the path:
 * `POST /put/0?…`, `GET /get/0?…`, `GET /offset/0?…`. MetaQ's server looked only at the
 * path's 2nd character, so it took those; here `/put/<this broker's id>` is `/put`, and
 * another id is refused (400, not 404: that client reads a 404 as "no message here").
 */
function brokerIdPath(url: string, brokerId: number): string {
  const m = BROKER_ID_PATH.exec(url)
  if (m === null) return url
  const [, command, id, query = ''] = m
  return Number(id) === brokerId ? `/${command}${query}` : `${MISDIRECTED}/${command}/${id}${query}`
}

/** The dashboard's API answers JSON, errors included. */
function isApi(req: FastifyRequest): boolean {
  return req.url.startsWith('/api/')
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true
  return isIP(host) === 4 && host.startsWith('127.')
}

function listenError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`
  switch (error.code) {
    case 'EADDRINUSE':
      return new MetaError('CONFIG_INVALID', `cannot serve HTTP on ${where}: the port is already in use; choose another with --http or dashboardHttpPort`, {
        cause: error,
      })
    case 'EACCES':
      return new MetaError('CONFIG_INVALID', `cannot serve HTTP on ${where}: permission denied (ports below 1024 need privileges)`, {cause: error})
    case 'EADDRNOTAVAIL':
      return new MetaError('CONFIG_INVALID', `cannot serve HTTP on ${where}: no such local address`, {cause: error})
    default:
      return error
  }
}

/** The PEM certificate and key files, read (a broker's TLS files). */
function readPemPair(cert: string | undefined, key: string | undefined): {cert: Buffer; key: Buffer} | undefined {
  return cert === undefined || key === undefined ? undefined : {cert: readFileSync(cert), key: readFileSync(key)}
}
