import type {FastifyInstance} from 'fastify'
import type {HttpContext} from './context.js'

export function registerStatic(_app: FastifyInstance, _ctx: HttpContext): void {}
