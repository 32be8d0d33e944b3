/**
 * BrokerConnection: pipelined requests matched by opaque, per-request timeouts, everything
 * pending rejected on close, reconnect after a broker restart on the same port, and the
 * idle heartbeat. A silent TCP listener stands in for a broker that never answers (a network
 * fault, not a fake broker).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createServer, type Server, type Socket} from 'node:net'
import {BrokerConnection, connectAdmin, createProducer} from '../../src/client/index.js'
import {checksum, encodeVersion, isMetaError, writePut, type MetaError} from '../../src/protocol/index.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, uniqueName, waitFor, type Cleanup} from '../helpers/index.js'

/** A TCP listener that accepts and reads but never answers. */
async function silentServer(t: Cleanup): Promise<{server: Server; port: number; sockets: Socket[]}> {
  const sockets: Socket[] = []
  const server = createServer((socket) => {
    sockets.push(socket)
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const s of sockets) s.destroy()
    server.close()
  })
  return {server, port: (server.address() as {port: number}).port, sockets}
}

function version(conn: BrokerConnection, timeoutMs?: number): Promise<string> {
  return new Promise((resolve, reject) => {
    conn.request(
      (out, opaque) => encodeVersion(out, {opaque}),
      (err, frame) => (err ? reject(err) : resolve(frame!.body.toString())),
      timeoutMs,
    )
  })
}

describe('BrokerConnection', () => {
  it('pipelines many requests and matches each response by opaque', async (t) => {
    const broker = await startTestBroker(t)
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port})
    t.after(() => conn.close())
    assert.equal(conn.capabilities.meta, true)
    assert.equal(conn.capabilities.longPoll, true)
    const answers = await Promise.all(Array.from({length: 1000}, () => version(conn)))
    assert.ok(answers.every((a) => a === '1.4.6.2'))
    assert.equal(conn.inFlight, 0)
  })

  it('writes requests before the tick ends once 64 KiB are waiting, and still answers every one', async (t) => {
    const broker = await startTestBroker(t)
    const conn = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port})
    t.after(() => conn.close())
    const topic = uniqueName('early')
    const body = Buffer.alloc(1000, 0x61)
    const answers: Array<Promise<number>> = []
    let mostUnsent = 0
    for (let i = 0; i < 200; i++) {
      // Plain puts of 1,000 bytes, about 200 KB encoded in one tick.
      answers.push(
        new Promise((resolve, reject) =>
          conn.request(
            (out, opaque) => writePut(out, topic, 0, body, 0, checksum(body), opaque),
            (err, frame) => (err ? reject(err) : resolve(frame!.type === 'result' ? frame!.code : -1)),
          ),
        ),
      )
      mostUnsent = Math.max(mostUnsent, conn.unsentBytes)
    }
    assert.ok(mostUnsent > 0 && mostUnsent < 64 * 1024 + 1100, `at most 64 KiB + one put waits (saw ${mostUnsent})`)
    assert.ok(conn.unsentBytes < 64 * 1024, `the rest waits for the end of the tick (${conn.unsentBytes})`)
    assert.deepEqual(new Set(await Promise.all(answers)), new Set([200]))
  })

  it('times out a request the broker never answers, with TIMEOUT', async (t) => {
    const {port} = await silentServer(t)
    const conn = new BrokerConnection({host: '127.0.0.1', port, connectTimeoutMs: 200})
    t.after(() => conn.close())
    await assert.rejects(version(conn, 150), (err: MetaError) => isMetaError(err, 'TIMEOUT') && err.retriable)
  })

  it('rejects everything pending with CONNECTION_CLOSED when the broker drops the connection', async (t) => {
    const {port, sockets} = await silentServer(t)
    const conn = new BrokerConnection({host: '127.0.0.1', port, reconnect: false})
    t.after(() => conn.close())
    const pending = Array.from({length: 5}, () => version(conn, 30_000))
    await waitFor(() => sockets.length === 1, {what: 'the connection'})
    sockets[0].destroy()
    for (const p of pending) await assert.rejects(p, (err: MetaError) => isMetaError(err, 'CONNECTION_CLOSED'))
  })

  it('rejects pending requests when closed by the user, and refuses new ones', async (t) => {
    const {port} = await silentServer(t)
    const conn = new BrokerConnection({host: '127.0.0.1', port})
    const pending = version(conn, 30_000)
    conn.close()
    await assert.rejects(pending, (err: MetaError) => isMetaError(err, 'CONNECTION_CLOSED'))
    await assert.rejects(version(conn), (err: MetaError) => isMetaError(err, 'CONNECTION_CLOSED'))
  })

  it('fails to connect with one clear line', async () => {
    const err = await connectAdmin({broker: '127.0.0.1:1'}).catch((e: MetaError) => e)
    assert.ok(isMetaError(err, 'CONNECTION_FAILED'))
    assert.equal(err.message, 'cannot reach broker 127.0.0.1:1: connection refused')
  })

  it('reconnects after the broker restarts on the same port', async (t) => {
    const dataPath = await tmpDir(t)
    const first = await startTestBroker(t, {dataPath})
    const port = first.port
    const producer = createProducer({broker: `127.0.0.1:${port}`, retries: 0})
    t.after(() => producer.close())
    const topic = uniqueName()
    assert.equal((await producer.send(topic, 'before')).success, true)
    await first.close()
    const lost = await producer.send(topic, 'while down')
    assert.equal(lost.success, false)
    assert.equal(lost.error?.retriable, true)
    const second = await startTestBroker(t, {dataPath, serverPort: port})
    const after = await waitFor(
      async () => {
        const r = await producer.send(topic, 'after')
        return r.success ? r : undefined
      },
      {what: 'a send after the restart', timeoutMs: 15_000},
    )
    assert.equal(after.offset, 26, 'appended after the first message')
    assert.equal(second.port, port)
  })

  it('sends a version heartbeat when idle, as MetaQ clients do', async (t) => {
    const listener = await silentServer(t)
    const conn = new BrokerConnection({host: '127.0.0.1', port: listener.port, heartbeatIntervalMs: 50})
    t.after(() => conn.close())
    await waitFor(() => listener.sockets.length === 1, {what: 'the connection'})
    let received = ''
    listener.sockets[0].on('data', (d: Buffer) => {
      received += d.toString()
      // Answer the first request as a MetaQ broker does (a listener that never answers it is no broker), then stay silent.
      const capabilities = /^stats meta-capabilities (-?\d+)\r\n/m.exec(d.toString())
      if (capabilities !== null) listener.sockets[0].write(`result 200 0 ${capabilities[1]}\r\n`)
    })
    await waitFor(() => /^version -?\d+\r\n/m.test(received), {what: 'a version heartbeat'})
  })
})
