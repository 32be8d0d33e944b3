/**
 * A connection to a broker in the same process, without a socket: two ends that hand each
 * other the buffers written to them (no copy, no kernel, no TLS), one the client's transport
 * (transport.ts), the other what the broker takes as a connection's socket (its listener binds
 * it to a principal: docs/http.md#how-the-http-server-reaches-its-broker).
 *
 * The broker's end behaves as the part of a `net.Socket` a broker connection uses: 'data',
 * 'drain', 'end', 'error' and 'close' events, pause/resume (a paused end takes nothing; what
 * is written to it waits, counted in the writer's `writableLength`), half-close (`end`: the
 * peer sees 'end' after the data before it), write callbacks (run once the peer took the
 * chunk), and byte counts. Chunks are delivered on a later tick, never inside the write, as a
 * socket's are.
 */
import {EventEmitter} from 'node:events'
import type {Dial, Transport} from './transport.js'

/** Bytes written and not yet taken by the peer at which write() answers false ('drain' follows). */
const HIGH_WATER_BYTES = 64 * 1024

interface Queued {
  chunk: Buffer
  done: (() => void) | undefined
}

/** One end of an in-process pair. */
class InProcessSocket extends EventEmitter {
  /** The other end (set by {@link inProcessPair}). */
  private peer!: InProcessSocket
  /** Chunks the peer wrote that this end has not taken yet. */
  private inbox: Queued[] = []
  private paused = false
  private deliveryScheduled = false
  /** This end ended its side (end()). */
  private ended = false
  /** The peer ended its side: 'end' follows the inbox. */
  private peerEnded = false
  private endEmitted = false
  private closeEmitted = false
  /** A write answered false: 'drain' once the peer has taken everything. */
  private needDrain = false
  /** Destroyed or closed: nothing more is written or delivered. */
  destroyed = false
  bytesRead = 0
  bytesWritten = 0
  /** Bytes written and not yet taken by the peer. */
  writableLength = 0
  /** No network peer: the broker names the connection by its label instead. */
  readonly remoteAddress = undefined
  readonly remotePort = undefined

  constructor(
    /** false: end this side as soon as the peer's end arrives (a client; the broker's side stays open until it has answered). */
    private readonly allowHalfOpen: boolean,
  ) {
    super()
  }

  static pair(): {client: InProcessSocket; broker: InProcessSocket} {
    const client = new InProcessSocket(false)
    const broker = new InProcessSocket(true)
    client.peer = broker
    broker.peer = client
    return {client, broker}
  }

  setNoDelay(): this {
    return this
  }

  cork(): void {}

  uncork(): void {}

  write(chunk: Buffer, done?: () => void): boolean {
    if (this.destroyed || this.ended || this.peer.destroyed) return false
    this.writableLength += chunk.length
    this.peer.inbox.push({chunk, done})
    this.peer.scheduleDelivery()
    if (this.writableLength < HIGH_WATER_BYTES) return true
    this.needDrain = true
    return false
  }

  pause(): this {
    this.paused = true
    return this
  }

  resume(): this {
    if (this.paused) {
      this.paused = false
      this.scheduleDelivery()
    }
    return this
  }

  /** End this side: the peer gets 'end' after what was written. */
  end(): this {
    if (this.ended || this.destroyed) return this
    this.ended = true
    this.peer.peerEnded = true
    this.peer.scheduleDelivery()
    this.closeIfDone()
    return this
  }

  /** Close now: what was not delivered is dropped; the peer sees the end. */
  destroy(error?: Error): this {
    if (this.destroyed) return this
    this.destroyed = true
    this.ended = true
    this.inbox = []
    const peer = this.peer
    if (!peer.destroyed) {
      peer.peerEnded = true
      peer.scheduleDelivery()
    }
    process.nextTick(() => {
      if (error !== undefined) this.emit('error', error)
      this.emitClose()
    })
    return this
  }

  private scheduleDelivery(): void {
    if (this.deliveryScheduled) return
    this.deliveryScheduled = true
    process.nextTick(() => this.deliver())
  }

  /** Hand the inbox to the 'data' listeners (unless paused), then the peer's end. */
  private deliver(): void {
    this.deliveryScheduled = false
    const writer = this.peer
    while (!this.paused && !this.destroyed && this.inbox.length > 0) {
      const {chunk, done} = this.inbox.shift()!
      this.bytesRead += chunk.length
      writer.bytesWritten += chunk.length
      writer.writableLength -= chunk.length
      this.emit('data', chunk)
      done?.()
    }
    if (this.destroyed || this.inbox.length > 0) return
    if (writer.needDrain) {
      writer.needDrain = false
      writer.emit('drain')
    }
    if (this.peerEnded && !this.endEmitted && !this.paused) {
      this.endEmitted = true
      this.emit('end')
      if (!this.allowHalfOpen) this.end()
      this.closeIfDone()
    }
  }

  /** Both sides ended and this one took everything: closed. */
  private closeIfDone(): void {
    if (this.ended && this.endEmitted && !this.closeEmitted) {
      this.destroyed = true
      process.nextTick(() => this.emitClose())
    }
  }

  private emitClose(): void {
    if (this.closeEmitted) return
    this.closeEmitted = true
    this.destroyed = true
    this.emit('close')
  }
}

/**
 * A dial that opens an in-process pair and hands its broker end to `accept` (which binds it to
 * a principal, or throws why it may not). The client end is usable on the next tick.
 */
export function inProcessDial(accept: (socket: InProcessSocket) => void): Dial {
  return (events) => {
    const {client, broker} = InProcessSocket.pair()
    client.on('data', (chunk: Buffer) => events.data(chunk))
    client.on('error', (err: Error) => events.error(err))
    client.on('close', () => events.close())
    const transport: Transport = {
      write: (bytes) => void client.write(bytes),
      end: () => void client.end(),
      destroy: (error) => void client.destroy(error),
    }
    try {
      accept(broker)
    } catch (error) {
      broker.destroy()
      client.destroy(error as Error)
      return transport
    }
    process.nextTick(() => {
      if (!client.destroyed) events.connect()
    })
    return transport
  }
}
