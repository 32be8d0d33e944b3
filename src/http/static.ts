/**
 * The dashboard's static files (assets/dashboard, bundled in the package and in the single
 * executable; no CDN): `/` is its page, `/ui/<file>` its scripts and styles. Read once, kept.
 */
import type {FastifyInstance} from 'fastify'
import {readAsset} from '../cli/assets.js'
import type {HttpContext} from './context.js'
import {HttpError} from './params.js'

const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
  png: 'image/png',
}
const NAME = /^[a-z0-9][a-z0-9-]*\.(html|js|css|svg|png)$/

export function registerStatic(app: FastifyInstance, ctx: HttpContext): void {
  const cache = new Map<string, Promise<Buffer>>()
  const serve = async (name: string) => {
    const match = NAME.exec(name)
    if (match === null) throw new HttpError(404, `no such dashboard file: ${name}`)
    let bytes = cache.get(name)
    if (bytes === undefined) {
      bytes = readAsset(`dashboard/${name}`, ctx.assetRoot)
      cache.set(name, bytes)
      bytes.catch(() => cache.delete(name))
    }
    try {
      return {bytes: await bytes, type: TYPES[match[1]]}
    } catch {
      throw new HttpError(404, `no such dashboard file: ${name}`)
    }
  }
  app.get('/', async (_req, reply) => {
    const {bytes, type} = await serve('index.html')
    reply.type(type).header('cache-control', 'no-cache').send(bytes)
  })
  app.get('/ui/:file', async (req, reply) => {
    const {bytes, type} = await serve((req.params as {file: string}).file)
    reply.type(type).header('cache-control', 'no-cache').send(bytes)
  })
}
