/**
 * The sync master's link to its slave (broker/replication/sync-link.ts) against a real sync
 * slave: an idle link keeps itself open with `version` heartbeats, so a slave that closes
 * idle connections (connectionIdleTimeoutMs) never drops it; a slave that never answers
 * cannot make the link hold more than its cap of unanswered requests.
 */
import {createServer, type Socket} from 'node:net'
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {startTestBroker} from '../helpers/broker.js'
import {waitFor} from '../helpers/index.js'
import {RawClient} from '../helpers/raw-client.js'
import {silentLogger} from '../../src/log.js'
import {SyncLink} from '../../src/broker/replication/sync-link.js'
import type {MetaError} from '../../src/protocol/errors.js'

describe('sync link', () => {
  it("an idle link sends heartbeats and outlives the slave's idle timeout", async (t) => {
    const slave = await startTestBroker(t, {syncSlave: true, connectionIdleTimeoutMs: 300})
    let connects = 0
    let drops = 0
    const link = new SyncLink({
      host: '127.0.0.1',
      port: slave.port,
      timeoutMs: 2000,
      retryMs: 50,
      heartbeatMs: 100,
      log: silentLogger,
      onConnected: async (batchForm) => {
        assert.equal(batchForm, true)
        connects += 1
      },
      onDisconnected: () => (drops += 1),
    })
    t.after(() => link.close())
    await waitFor(() => link.ready, {what: 'the link to connect'})
    // A plain connection opened now and left idle is closed by the slave's idle timeout; the
    // link, idle as long, must still be up then (its heartbeats count as requests).
    // Twice, so that a close of the link by the first sweep has certainly arrived here.
    for (let i = 0; i < 2; i++) {
      const idle = await RawClient.connect(t, slave.port)
      await idle.waitClosed(20_000)
    }
    assert.equal(drops, 0, 'the slave never closed the link')
    assert.equal(connects, 1)
    assert.ok(link.ready)
  })

  it('SyncLink.request() fails at once with SLAVE_DISCONNECTED past maxPending unanswered requests', async (t) => {
    // A "slave" that takes the connection and never answers anything.
    const sockets = new Set<Socket>()
    let received = 0
    const silent = createServer((socket) => {
      sockets.add(socket)
      socket.on('data', (chunk) => (received += chunk.length))
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    t.after(() => {
      for (const socket of sockets) socket.destroy()
      silent.close()
    })
    const port = (silent.address() as {port: number}).port
    const link = new SyncLink({
      host: '127.0.0.1',
      port,
      timeoutMs: 60_000,
      retryMs: 50,
      log: silentLogger,
      maxPending: 3,
      onConnected: async () => undefined,
      onDisconnected: () => undefined,
    })
    t.after(() => link.close())
    // The link's own capabilities request is the first one unanswered.
    await waitFor(() => received > 0, {what: 'the link to ask the slave its capabilities'})
    const answers: Array<MetaError | null> = []
    for (let i = 0; i < 3; i++)
      link.request(
        () => undefined,
        (err) => answers.push(err),
      )
    assert.equal(answers.length, 1, 'two more were taken (3 unanswered), the third answered at once')
    assert.equal(answers[0]?.code, 'SLAVE_DISCONNECTED')
    assert.match(answers[0]!.message, /has 3 requests unanswered, the most the link holds \(3\)/)
  })
})
