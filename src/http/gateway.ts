/**
 * MetaQ's HTTP plugin (docs/http.md, `jettyBroker`): `/put`, `/get` and `/offset` with its
 * semantics. Each request becomes the MetaQ protocol command, encoded once, on the broker's
 * in-process connection for the request's principal (sessions.ts), so every check, counter,
 * quota and answer is the broker's for that principal:
 *
 *   POST /put?topic&partition&flag[&checksum]&length   body = the payload, taken raw whatever
 *        the Content-Type → status and `msgId partition offset`
 *   GET  /get?topic&partition&group&offset&maxsize     → 200 and the stored-format bytes, or
 *        the status and text of the answer (301 and the offset to use, 404, …)
 *   GET  /offset?topic&partition&group&offset          → status and the offset
 *
 * With `Accept: application/json` the same answers come as JSON (docs/http.md).
 */
import type {FastifyInstance, FastifyReply, FastifyRequest} from 'fastify'
import {encodeGet} from '../protocol/commands/get.js'
import {encodeOffset} from '../protocol/commands/offset.js'
import {encodePut, NO_CHECKSUM} from '../protocol/commands/put.js'
import {parsePutReply} from '../protocol/commands/put-reply.js'
import {parseErrorBody} from '../protocol/errors.js'
import type {ResponseFrame} from '../protocol/frames.js'
import {decodeMessageSet} from '../protocol/message-set.js'
import type {HttpContext} from './context.js'
import {groupParam, HttpError, intParam, param, topicParam, type Query} from './params.js'

/** The group a /get or /offset without `group` is made for (MetaQ required one). */
const DEFAULT_HTTP_GROUP = 'meta-http'

interface PutParams {
  topic: string
  partition: number
  flag: number
  checksum: number
  length: number
}

export function registerGateway(app: FastifyInstance, ctx: HttpContext): void {
  const putParams = new WeakMap<FastifyRequest, PutParams>()
  const put = {
    bodyLimit: ctx.maxBodyBytes,
    // Before the body is read: bad parameters, a missing token or a declared length over
    // the limit are answered without taking the body in.
    onRequest: async (req: FastifyRequest) => {
      ctx.authorizeMutation(req)
      const q = req.query as Query
      const params: PutParams = {
        topic: topicParam(param(q, 'topic')),
        partition: intParam(q, 'partition', {min: -1}),
        flag: intParam(q, 'flag', {fallback: 0}),
        checksum: intParam(q, 'checksum', {fallback: NO_CHECKSUM}),
        length: intParam(q, 'length', {min: 0}),
      }
      // Refused before the body is read (the broker checks the put again, as the principal's).
      ctx.authorize(req, 'put', params.topic)
      if (params.length > ctx.maxBodyBytes) throw tooLarge(params.length, ctx.maxBodyBytes)
      const declared = req.headers['content-length']
      if (declared !== undefined && Number(declared) !== params.length) {
        throw new HttpError(400, `length=${params.length} but the body has ${declared} bytes (Content-Length): they must agree`)
      }
      // Any Content-Type, or none, is the raw payload (curl sends a form type by default).
      req.headers['content-type'] = 'application/octet-stream'
      putParams.set(req, params)
    },
  }
  const putHandler = async (req: FastifyRequest, reply: FastifyReply) => {
    const p = putParams.get(req)!
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
    if (body.length !== p.length) throw new HttpError(400, `length=${p.length} but the body has ${body.length} bytes: they must agree`)
    const frame = await ctx.request(req, (out, opaque) =>
      encodePut(out, {topic: p.topic, partition: p.partition, flag: p.flag, checksum: p.checksum, txKey: null, opaque, body}),
    )
    sendResult(req, reply, frame, () => {
      const put = parsePutReply(frame.body)
      if (put === undefined)
        throw new HttpError(
          502,
          `malformed put reply "${frame.body.toString('latin1').slice(0, 80)}" from the broker: expected "<msgId> <partition> <offset>"`,
          'DECODE_ERROR',
        )
      return {msgId: put.id.toString(), partition: put.partition, offset: put.offset}
    })
  }
  app.post('/put', put, putHandler)
  app.put('/put', put, putHandler)
  app.get('/put', async () => {
    throw new HttpError(405, 'use POST /put?topic=<t>&partition=<p>&flag=<f>&length=<n> with the payload as the body', 'BAD_REQUEST')
  })

  app.get('/get', async (req, reply) => {
    const q = req.query as Query
    const topic = topicParam(param(q, 'topic'))
    const partition = intParam(q, 'partition', {min: 0})
    const group = groupParam(param(q, 'group') ?? DEFAULT_HTTP_GROUP)
    const offset = intParam(q, 'offset', {min: 0, max: Number.MAX_SAFE_INTEGER})
    const maxSize = intParam(q, 'maxsize', {min: 1, fallback: ctx.broker.config.system.maxTransferBytes})
    const frame = await ctx.request(req, (out, opaque) => encodeGet(out, {topic, group, partition, offset, maxSize, opaque, maxWaitMs: 0}))
    if (frame.type === 'value') {
      if (wantsJson(req)) {
        const set = decodeMessageSet(frame.body, {baseOffset: offset, verifyChecksum: true, maxPayloadBytes: Number.MAX_SAFE_INTEGER})
        return reply.send({
          status: 200,
          messages: set.messages.map((m) => messageJson(m)),
          nextOffset: offset + set.bytesConsumed,
          ...(set.error ? {error: set.error.message} : {}),
        })
      }
      return reply.code(200).type('application/octet-stream').send(frame.body)
    }
    sendResult(req, reply, frame, (text) => ({offset: Number(text)}))
  })

  app.get('/offset', async (req, reply) => {
    const q = req.query as Query
    const topic = topicParam(param(q, 'topic'))
    const partition = intParam(q, 'partition', {min: 0})
    const group = groupParam(param(q, 'group') ?? DEFAULT_HTTP_GROUP)
    const offset = intParam(q, 'offset', {min: -1, max: Number.MAX_SAFE_INTEGER})
    const frame = await ctx.request(req, (out, opaque) => encodeOffset(out, {topic, group, partition, offset, opaque}))
    sendResult(req, reply, frame, (text) => ({offset: Number(text)}))
  })
}

/**
 * A message of a fetched set as JSON: the payload as base64, and as text when it is UTF-8.
 * `size` is the payload's length in bytes, as in `meta tail -J`; `recordBytes` the whole
 * stored record (header, attribute and payload): the step from this offset to the next.
 */
export function messageJson(m: {offset: number; size: number; id: bigint; flag: number; attribute: string | undefined; data: Buffer}): Record<string, unknown> {
  const text = m.data.toString('utf8')
  return {
    offset: m.offset,
    size: m.data.length,
    recordBytes: m.size,
    msgId: m.id.toString(),
    flag: m.flag,
    ...(m.attribute !== undefined ? {attribute: m.attribute} : {}),
    payload: m.data.toString('base64'),
    ...(Buffer.from(text, 'utf8').equals(m.data) ? {text} : {}),
  }
}

/** MetaQ's answer: the result's status and text; as JSON, `ok(text)` for a 200, else the error. */
function sendResult(req: FastifyRequest, reply: FastifyReply, frame: ResponseFrame, ok: (text: string) => Record<string, unknown>): void {
  const text = frame.body.toString('utf8')
  const status = frame.type === 'result' ? frame.code : 200
  reply.code(status)
  if (!wantsJson(req)) {
    reply.type('text/plain; charset=utf-8').send(text)
    return
  }
  if (status === 200) {
    reply.send({status, ...ok(text)})
    return
  }
  const {text: message, wireCode} = parseErrorBody(text)
  reply.send({status, ...(status === 301 ? {offset: Number(text)} : {}), error: message, ...(wireCode ? {code: wireCode} : {})})
}

export function wantsJson(req: FastifyRequest): boolean {
  return (req.headers.accept ?? '').includes('application/json')
}

export function tooLarge(bytes: number | string, limit: number): HttpError {
  return new HttpError(
    413,
    `body of ${bytes} bytes exceeds the limit of ${limit} bytes (the broker's largest message: maxTransferSize minus the 20-byte record header)`,
  )
}
