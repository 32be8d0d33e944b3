/**
 * A network partition on demand: a loopback TCP relay between a client and a server that can
 * stop passing bytes in both directions without closing anything (`cut`), as a pulled cable
 * or a dropped route does: neither side sees an error, the other side simply goes silent.
 * `heal` passes everything held back and later bytes again. Real sockets, no protocol
 * knowledge.
 */
import {connect, createServer, type Socket} from 'node:net'
import type {Cleanup} from './index.js'

export interface TcpRelay {
  /** Loopback port to give the client instead of the server's. */
  port: number
  cut(): void
  heal(): void
  /** The bytes held back since the cut, both directions, in arrival order (what a client sent into the silence). */
  held(): Buffer
}

export async function tcpRelay(t: Cleanup, target: {host: string; port: number}): Promise<TcpRelay> {
  let isCut = false
  /** Bytes that arrived while cut, in order, with the socket they are for. */
  let held: Array<[Socket, Buffer]> = []
  const pairs = new Set<[Socket, Socket]>()
  const forward = (from: Socket, to: Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (isCut) held.push([to, chunk])
      else to.write(chunk)
    })
  }
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    const pair: [Socket, Socket] = [client, upstream]
    pairs.add(pair)
    const drop = (): void => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    forward(client, upstream)
    forward(upstream, client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const pair of pairs) for (const s of pair) s.destroy()
    server.close()
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    cut: () => {
      isCut = true
    },
    held: () => Buffer.concat(held.map(([, chunk]) => chunk)),
    heal: () => {
      isCut = false
      const late = held
      held = []
      for (const [to, chunk] of late) if (!to.destroyed) to.write(chunk)
    },
  }
}

export interface TcpForwarder {
  /** Loopback port to give the client now, before its server exists. */
  port: number
  /** Forward connections made from now on to `port` on 127.0.0.1. */
  pointAt(port: number): void
}

/**
 * A loopback port for a server that starts later (a client configured before its server is
 * up): until {@link TcpForwarder.pointAt}, each connection is reset at once, as on a port
 * nothing listens on; after it, connections are relayed to the server. Replaces picking a
 * free port, releasing it and hoping it is still free when the server binds it.
 */
export async function tcpForwarder(t: Cleanup): Promise<TcpForwarder> {
  let target: number | undefined
  const sockets = new Set<Socket>()
  const track = (socket: Socket): void => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  }
  const server = createServer((client) => {
    track(client)
    client.on('error', () => client.destroy())
    if (target === undefined) {
      client.resetAndDestroy()
      return
    }
    const upstream = connect(target, '127.0.0.1')
    track(upstream)
    const drop = (): void => {
      client.destroy()
      upstream.destroy()
    }
    upstream.on('error', drop).on('close', drop)
    client.on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    pointAt: (port) => {
      target = port
    },
  }
}

export interface TcpValve {
  /** Loopback port to give the client instead of the server's. */
  port: number
  /** From now on, pass at most `bytes` more from clients to the server, then drop the rest silently (answers still pass). */
  closeAfter(bytes: number): void
  /** Bytes passed from clients to the server so far. */
  passed(): number
}

/**
 * A relay that stops passing requests cleanly: once closed, nothing more reaches the server,
 * while every answer to what did reach it still comes back. So a client's unanswered requests
 * are exactly the ones the server never saw (a failure midway with no request stored but
 * unacknowledged), which a test of exactly-once resending needs.
 */
export async function tcpValve(t: Cleanup, target: {host: string; port: number}): Promise<TcpValve> {
  let budget = Number.POSITIVE_INFINITY
  let passed = 0
  const sockets = new Set<Socket>()
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
    }
    const drop = (): void => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.on('data', (chunk: Buffer) => {
      const take = Math.max(0, Math.min(chunk.length, budget))
      budget -= take
      passed += take
      if (take > 0) upstream.write(chunk.subarray(0, take))
    })
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  const address = server.address()
  return {
    port: typeof address === 'object' && address !== null ? address.port : 0,
    closeAfter: (bytes) => {
      budget = bytes
    },
    passed: () => passed,
  }
}
