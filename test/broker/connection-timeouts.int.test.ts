/**
 * Connections that hold the broker's resources without making progress: a
 * partial frame that does not complete within connectionFrameTimeoutMs (slowloris), and a
 * connection with no request for connectionIdleTimeoutMs, are closed; and running out of file
 * descriptors when accepting is logged (rate-limited) while existing connections are served.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {connect, type Socket} from 'node:net'
import {startTestBroker} from '../helpers/broker.js'
import {RawClient, text} from '../helpers/raw-client.js'
import {spawnBroker} from '../helpers/process.js'
import {tmpDir, uniqueName, waitFor} from '../helpers/index.js'

describe('connection timeouts', () => {
  it('drops a connection whose partial frame does not complete within connectionFrameTimeoutMs', async (t) => {
    const broker = await startTestBroker(t, {connectionFrameTimeoutMs: 300})
    const topic = uniqueName()
    const slowBody = await RawClient.connect(t, broker.port)
    slowBody.send(`put ${topic} 0 100 0 -1 1\r\nonly part of the body`)
    const slowHeader = await RawClient.connect(t, broker.port)
    slowHeader.send('vers')
    const bystander = await RawClient.connect(t, broker.port)
    await slowBody.waitClosed(30_000)
    await slowHeader.waitClosed(30_000)
    assert.equal(slowBody.pending + slowHeader.pending, 0)
    assert.equal(text(await bystander.request('version 2\r\n')), '1.4.6.2', 'a connection with no partial frame stays')
    const reader = await RawClient.connect(t, broker.port)
    const miss = await reader.request(`get ${topic} g 0 0 1024 3\r\n`)
    assert.equal(miss.type === 'result' && miss.code, 404, 'nothing of the partial put was stored')
  })

  it('keeps a connection whose frames complete, however long it has been open', async (t) => {
    const broker = await startTestBroker(t, {connectionFrameTimeoutMs: 300})
    const client = await RawClient.connect(t, broker.port)
    const topic = uniqueName()
    // Each frame completes quickly; together they outlast the frame timeout several times.
    const startedAt = Date.now()
    for (let i = 0; Date.now() - startedAt < 1500; i++) {
      client.send(`put ${topic} 0 5 0 -1 ${i}\r\nhel`)
      await new Promise((resolve) => setImmediate(resolve))
      const ack = await client.request('lo', 10_000)
      assert.equal(ack.type === 'result' && ack.code, 200)
    }
    assert.equal(client.closed, false)
  })

  it('closes a connection idle for connectionIdleTimeoutMs, but not while a request waits', async (t) => {
    const broker = await startTestBroker(t, {connectionIdleTimeoutMs: 400})
    const idle = await RawClient.connect(t, broker.port)
    const polling = await RawClient.connect(t, broker.port)
    // A long poll that waits longer than the idle timeout: the connection is not idle meanwhile.
    polling.send(`get ${uniqueName()} g 0 0 1024 1 1500\r\n`)
    await idle.waitClosed(30_000)
    const answer = await polling.next(30_000)
    assert.equal(answer.type === 'result' && answer.code, 404, 'the long poll was answered, not cut off')
    await polling.waitClosed(30_000)
  })

  it('logs file-descriptor exhaustion once in a while and keeps serving existing connections', async (t) => {
    // With 128 descriptors the broker starts with ~22 open, so ~100 connections exhaust them.
    const proc = await spawnBroker(t, ['--data-dir', await tmpDir(t)], {fdLimit: 128})
    const first = await RawClient.connect(t, proc.port)
    assert.equal(text(await first.request('version 1\r\n')), '1.4.6.2')
    const sockets: Socket[] = []
    t.after(() => {
      for (const s of sockets) s.destroy()
    })
    let refused = 0
    for (let i = 0; i < 200; i++) {
      const socket = connect({port: proc.port, host: '127.0.0.1'})
      socket.on('error', () => {})
      socket.once('close', () => (refused += 1))
      sockets.push(socket)
      await new Promise((resolve) => socket.once('connect', resolve).once('close', resolve))
    }
    await waitFor(() => refused >= 50, {what: 'the broker to refuse connections beyond its descriptors', timeoutMs: 30_000})
    const warnings = await waitFor(
      () => {
        const lines = proc
          .stderr()
          .split('\n')
          .filter((line) => /file descriptors/.test(line) && /"level":40/.test(line))
        return lines.length > 0 ? lines : undefined
      },
      {what: 'a warning about file descriptors in the broker log', timeoutMs: 30_000},
    )
    assert.ok(warnings.length > 0 && warnings.length <= 3, `rate-limited: ${warnings.length} warnings for ${refused} refused connections`)
    assert.match(warnings[0], /limit/)
    assert.equal(text(await first.request('version 2\r\n')), '1.4.6.2', 'an existing connection is still served')
    for (const s of sockets) s.destroy()
    const later = await waitFor(
      async () => {
        const client = await RawClient.connect(t, proc.port)
        return text(await client.request('version 3\r\n', 2000)) === '1.4.6.2' ? client : undefined
      },
      {what: 'a new connection to be served once descriptors are free', timeoutMs: 30_000},
    )
    assert.equal(later.closed, false)
  })
})
