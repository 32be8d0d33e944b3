/**
 * What every route of the HTTP server may use (server.ts wires it once).
 */
import type {FastifyRequest} from 'fastify'
import type {BrokerReadView, Right, Visibility} from '../broker/read-view.js'
import type {AdminClient} from '../client/admin.js'
import type {OutputBuffer} from '../protocol/output-buffer.js'
import type {ResponseFrame} from '../protocol/frames.js'
import type {Logger} from '../log.js'

export interface HttpContext {
  broker: BrokerReadView
  /** Stats, groups, offsets and reload as the HTTP request's principal (its in-process connection, sessions.ts). */
  admin(req: FastifyRequest): Promise<AdminClient>
  /** One protocol request as the HTTP request's principal (rejects with the connection's MetaError). */
  request(req: FastifyRequest, write: (out: OutputBuffer, opaque: number) => void, timeoutMs?: number): Promise<ResponseFrame>
  /**
   * Throws 401/403 unless the request may change something (docs/http.md#token); with access
   * control, a no-op (rights decide).
   */
  authorizeMutation(req: FastifyRequest): void
  /** With access control: throws 403 unless the request's user has `right` on `resource` (before a body is read, and what makes no broker request). */
  authorize(req: FastifyRequest, right: Right, resource: string): void
  /** What the request's principal may see (docs/security.md#what-a-principal-may-see), and its user; everything without access control. */
  viewer(req: FastifyRequest): {seen: Visibility; user?: string}
  /** Largest put body: the broker's maxTransferSize minus the record header. */
  maxBodyBytes: number
  /** The package root, where assets/ is read from (or the single executable's directory). */
  assetRoot: string
  log: Logger
}
