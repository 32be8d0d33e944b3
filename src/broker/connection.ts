/**
 * One client connection: socket bytes → decoder → handler, and responses → one socket write
 * per event-loop turn.
 *
 * Writes: handlers encode responses into `out` (small frames: put acks, results) or, for big
 * `value` bodies, queue the body as its own chunk after its header. A flush scheduled with
 * process.nextTick hands everything queued during the current callback to the socket inside
 * one cork/uncork, so many acks leave in one writev and a header never leaves without its
 * body (some MetaQ clients read a response as one chunk, spec A.2.4).
 *
 * Backpressure and memory: reading pauses while the socket's queued bytes exceed
 * MAX_QUEUED_BYTES or too many requests are in flight, and resumes on 'drain' / completion.
 * The decoder holds at most one frame. Bad input (decode error, oversize frame) logs one
 * line and closes this connection only, after flushing what was already answered.
 */
import type {Socket} from 'node:net'
import {OutputBuffer} from '../protocol/output-buffer.js'
import {encodeResult} from '../protocol/commands/result.js'
import {encodePutResult} from '../protocol/commands/put.js'
import {valueHeader} from '../protocol/commands/value.js'
import {createRequestDecoder, type RequestFrame} from '../protocol/frames.js'
import type {FrameDecoder} from '../protocol/decoder.js'
import {isMetaError} from '../protocol/errors.js'
import type {Logger} from '../log.js'

/** Pause reading while more than this many response bytes wait in the socket. */
export const MAX_QUEUED_BYTES = 32 * 1024 * 1024
/** Pause reading while this many requests await an asynchronous answer. */
export const MAX_IN_FLIGHT_REQUESTS = 100_000
/** Bodies at least this big are queued as their own chunk instead of being copied. */
const LARGE_BODY_BYTES = 64 * 1024

export interface ConnectionHandler {
  /** Handle one request; may answer now or later (track with beginRequest/endRequest). */
  handle(conn: Connection, frame: RequestFrame): void
  closed(conn: Connection): void
}

let nextConnectionId = 1

export class Connection {
  readonly id = nextConnectionId++
  readonly remote: string
  /** Set once the socket is closing; late answers are dropped. */
  closing = false
  private readonly decoder: FrameDecoder<RequestFrame>
  private readonly out = new OutputBuffer()
  private chunks: Buffer[] = []
  private flushScheduled = false
  private inFlight = 0
  private readPaused = false

  constructor(
    readonly socket: Socket,
    private readonly handler: ConnectionHandler,
    private readonly log: Logger,
    limits: {maxBodyBytes: number; maxHeaderBytes?: number},
  ) {
    this.remote = `${socket.remoteAddress}:${socket.remotePort}`
    this.decoder = createRequestDecoder(limits)
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('drain', () => this.maybeResume())
    socket.on('error', (err) => this.log.debug('connection error', {remote: this.remote, error: err.message}))
    socket.on('close', () => {
      this.closing = true
      if (this.decoder.inFrame) this.log.debug('client left mid-frame; partial frame dropped', {remote: this.remote})
      this.handler.closed(this)
    })
  }

  /** Mark a request as answered later (puts waiting for the disk, long polls, reads). */
  beginRequest(): void {
    this.inFlight += 1
  }

  endRequest(): void {
    this.inFlight -= 1
    if (this.readPaused) this.maybeResume()
  }

  sendResult(code: number, opaque: number, body: string | Uint8Array = ''): void {
    if (this.closing) return
    encodeResult(this.out, code, opaque, body)
    this.scheduleFlush()
  }

  /** A successful put's `result 200` (body "<msgId> <partition> <offset>"), encoded without a body string. */
  sendPutResult(opaque: number, id: bigint, partition: number, offset: number): void {
    if (this.closing) return
    encodePutResult(this.out, opaque, id, partition, offset)
    this.scheduleFlush()
  }

  /** A `value` response: header and raw log bytes, leaving in the same socket write. */
  sendValue(opaque: number, data: Buffer): void {
    if (this.closing) return
    this.out.writeAscii(valueHeader(data.length, opaque))
    if (data.length < LARGE_BODY_BYTES) {
      this.out.writeBytes(data)
    } else {
      this.chunks.push(this.out.take(), data)
    }
    this.scheduleFlush()
  }

  /** Stop reading, answer what is queued, then close (quit, bad input, shutdown). */
  close(): void {
    if (this.closing) return
    this.closing = true
    this.flush()
    this.socket.end()
    // Keep reading (and discarding: onData ignores a closing connection) so the peer's FIN is
    // seen and the socket closes; a paused socket would wait for the deadline below.
    this.socket.resume()
    // A peer that never reads would keep the socket half-open; do not wait for it forever.
    setTimeout(() => this.socket.destroy(), 5000).unref()
  }

  /** Stop reading new requests (shutdown) without closing. */
  stopReading(): void {
    this.readPaused = true
    this.socket.pause()
  }

  private onData(chunk: Buffer): void {
    if (this.closing) return
    this.decoder.push(chunk)
    try {
      for (let frame = this.decoder.next(); frame !== undefined; frame = this.decoder.next()) {
        this.handler.handle(this, frame)
        if (this.closing) return
      }
    } catch (error) {
      this.rejectInput(error)
      return
    }
    if (this.inFlight >= MAX_IN_FLIGHT_REQUESTS || this.socket.writableLength > MAX_QUEUED_BYTES) {
      this.readPaused = true
      this.socket.pause()
    }
  }

  private rejectInput(error: unknown): void {
    if (isMetaError(error, 'DECODE_ERROR') || isMetaError(error, 'FRAME_TOO_LARGE')) {
      this.log.warn('bad request; closing connection', {remote: this.remote, error: error.message})
    } else {
      this.log.error('request handler failed; closing connection', {remote: this.remote, error: String(error)})
    }
    this.close()
  }

  private maybeResume(): void {
    if (!this.readPaused || this.closing) return
    if (this.inFlight < MAX_IN_FLIGHT_REQUESTS / 2 && this.socket.writableLength <= MAX_QUEUED_BYTES / 2) {
      this.readPaused = false
      this.socket.resume()
    }
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return
    this.flushScheduled = true
    process.nextTick(() => this.flush())
  }

  private flush(): void {
    this.flushScheduled = false
    if (this.socket.destroyed) return
    if (this.out.byteLength > 0) this.chunks.push(this.out.take())
    const chunks = this.chunks
    if (chunks.length === 0) return
    this.chunks = []
    if (chunks.length === 1) {
      this.socket.write(chunks[0])
    } else {
      this.socket.cork()
      for (const chunk of chunks) this.socket.write(chunk)
      this.socket.uncork()
    }
  }
}
