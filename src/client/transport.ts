/**
 * How a client connection reaches its broker: the bytes it writes and the bytes it receives,
 * whatever carries them. `net` (plain TCP), `tls` (the broker's TLS port) and an in-process
 * pair (in-process.ts: a broker in the same process, for its HTTP server) implement it, as
 * nats.js's transports do; the connection (connection.ts) knows nothing of sockets.
 *
 * A transport reports to the {@link TransportEvents} it was dialled with; it calls `close` once,
 * whatever ended it, and nothing after. Received bytes come in one of two ways: `data` hands
 * over a buffer the receiver may keep views of (TLS, in-process); a transport that reads into
 * memory the receiver gives (plain TCP's `onread`) asks `readBuffer` where to read next and
 * reports with `read`.
 */
import {createRequire} from 'node:module'
import {connect, type Socket} from 'node:net'
import type * as Tls from 'node:tls'
import {tlsConnectOptions, type ClientTlsOptions} from './tls.js'

interface TransportEvents {
  /** Usable: connected (TLS: handshaken, and the broker's certificate verified). */
  connect(): void
  /** Bytes arrived in a buffer the transport hands over (views of it may be kept). */
  data(chunk: Buffer): void
  /** Where the next read goes, for a transport that reads into the receiver's memory. */
  readBuffer(): Buffer
  /** `bytes` were read into `buf` (the last buffer {@link readBuffer} gave). */
  read(bytes: number, buf: Buffer): void
  /** What went wrong; `close` follows. */
  error(err: Error): void
  /** Closed, for whatever reason; the last event. */
  close(): void
}

export interface Transport {
  /** Send these bytes (the buffer is the transport's from now on). */
  write(bytes: Buffer): void
  /** Close after what was written (the peer sees the end). */
  end(): void
  /** Close now; `error`, when given, is reported before `close`. */
  destroy(error?: Error): void
}

/** Opens a transport that reports to `events`. */
export type Dial = (events: TransportEvents) => Transport

/** Plain TCP to host:port, read through `onread` (see connection.ts, READ_BUFFER). */
export function netTransport(host: string, port: number): Dial {
  return (events) => {
    const socket = connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: () => events.readBuffer(),
        callback: (bytes, buf) => {
          events.read(bytes, buf as Buffer)
          return true
        },
      },
    })
    return socketTransport(socket, 'connect', events)
  }
}

/** TLS to host:port; `node:tls` is loaded on the first TLS dial only (a plain client never needs it). */
export function tlsTransport(host: string, port: number, tls: ClientTlsOptions): Dial {
  return (events) => {
    const socket = (createRequire(import.meta.url)('node:tls') as typeof Tls).connect(tlsConnectOptions(host, port, tls))
    socket.on('data', (chunk: Buffer) => events.data(chunk))
    return socketTransport(socket, 'secureConnect', events)
  }
}

function socketTransport(socket: Socket, ready: 'connect' | 'secureConnect', events: TransportEvents): Transport {
  socket.once(ready, () => {
    socket.setNoDelay(true)
    events.connect()
  })
  socket.on('error', (err) => events.error(err))
  socket.on('close', () => events.close())
  return {
    write: (bytes) => void socket.write(bytes),
    end: () => void socket.end(),
    destroy: (error) => void socket.destroy(error),
  }
}
