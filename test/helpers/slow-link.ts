/**
 * A slow network link between a client and a broker: a loopback TCP relay whose answers (the
 * broker → client direction) flow at most `bytesPerSecond`, as over a congested WAN link.
 * Requests pass at full speed. TCP back-pressure holds the broker's writes while the relay's
 * queue is full, so the broker sees a slow reader, not a buffer that grows without bound.
 * `setRate(undefined)` lifts the limit. Real sockets, no protocol knowledge: whatever the
 * client asks for arrives, only later.
 */
import {connect, createServer, type Socket} from 'node:net'
import type {Cleanup} from './index.js'

export interface SlowLink {
  /** Loopback port to give the client instead of the broker's. */
  port: number
  /** Bytes per second towards the client; undefined: no limit. */
  setRate(bytesPerSecond: number | undefined): void
}

const TICK_MS = 20
/** Pause reading from the broker when this much is queued for the client. */
const HIGH_WATER = 256 * 1024

export async function slowLink(t: Cleanup, target: {host: string; port: number}, bytesPerSecond: number | undefined): Promise<SlowLink> {
  let rate = bytesPerSecond
  const pairs = new Set<{client: Socket; broker: Socket; queue: Buffer[]; queued: number}>()
  const server = createServer((client) => {
    const broker = connect(target.port, target.host)
    const pair = {client, broker, queue: [] as Buffer[], queued: 0}
    pairs.add(pair)
    const drop = (): void => {
      pairs.delete(pair)
      client.destroy()
      broker.destroy()
    }
    client.on('error', drop).on('close', drop)
    broker.on('error', drop).on('close', drop)
    client.pipe(broker)
    broker.on('data', (chunk: Buffer) => {
      pair.queue.push(chunk)
      pair.queued += chunk.length
      if (pair.queued >= HIGH_WATER) broker.pause()
      flush(pair, rate === undefined ? Infinity : 0)
    })
  })
  /** Write up to `budget` queued bytes to the client; returns what was written. */
  const flush = (pair: {client: Socket; broker: Socket; queue: Buffer[]; queued: number}, budget: number): number => {
    let written = 0
    while (pair.queue.length > 0 && written < budget) {
      const head = pair.queue[0]!
      const n = Math.min(head.length, budget - written)
      pair.client.write(n === head.length ? head : head.subarray(0, n))
      if (n === head.length) pair.queue.shift()
      else pair.queue[0] = head.subarray(n)
      pair.queued -= n
      written += n
    }
    if (pair.queued < HIGH_WATER) pair.broker.resume()
    return written
  }
  // The budget follows the clock, not the number of ticks: a busy machine that runs the timer
  // late still gets the rate on average (so requests do not time out), never more.
  let lastTick = Date.now()
  const ticker = setInterval(() => {
    const now = Date.now()
    const elapsedMs = Math.min(500, now - lastTick)
    lastTick = now
    for (const pair of pairs) flush(pair, rate === undefined ? Infinity : Math.max(1, Math.floor((rate * elapsedMs) / 1000)))
  }, TICK_MS)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    clearInterval(ticker)
    for (const pair of pairs) {
      pair.client.destroy()
      pair.broker.destroy()
    }
    server.close()
  })
  return {
    port: (server.address() as {port: number}).port,
    setRate(bytesPerSecond) {
      rate = bytesPerSecond
      if (rate === undefined) for (const pair of pairs) flush(pair, Infinity)
    },
  }
}
