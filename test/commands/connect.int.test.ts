/**
 * Wrong endpoints fail fast with one clear line naming the address: a listener that
 * accepts and never answers, an HTTP server, nothing listening. A bare port means 127.0.0.1.
 * Each run has a deadline (runCli kills it and the test fails), so a hang cannot pass.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {createServer as createHttpServer} from 'node:http'
import {createServer, type Server, type Socket} from 'node:net'
import type {Cleanup} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'
import {probeFreePort} from '../helpers/ports.js'

async function listen(t: Cleanup, server: Server): Promise<number> {
  const sockets = new Set<Socket>()
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return (server.address() as {port: number}).port
}

const DEADLINE_MS = 30_000

describe('meta against wrong endpoints', () => {
  it('a listener that never answers: one line naming the address, exit 1 (send, tail, stats, bare port)', async (t) => {
    const port = await listen(
      t,
      createServer(() => {}),
    )
    const line = `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: it accepted the connection but did not answer within 5 s (is a meta or MetaQ broker listening there?)\n`
    for (const args of [
      ['stats', '-b', String(port)],
      ['tail', '-t', 'orders', '-e', '-b', `127.0.0.1:${port}`],
      ['send', '-t', 'orders', '-b', `:${port}`],
    ]) {
      const r = await runCli(args, {input: 'hello\n', timeoutMs: DEADLINE_MS})
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr, line, args.join(' '))
      assert.equal(r.stdout, '')
    }
  })

  it('an HTTP server: one line saying it does not speak the protocol, exit 1', async (t) => {
    const port = await listen(
      t,
      createHttpServer((_request, response) => response.end('hello')),
    )
    for (const args of [
      ['group', 'list'],
      ['tail', '-t', 'orders'],
    ]) {
      const r = await runCli([...args, '-b', `127.0.0.1:${port}`], {timeoutMs: DEADLINE_MS})
      assert.equal(r.code, 1, r.stderr)
      assert.equal(
        r.stderr,
        `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: what answers there does not speak the MetaQ protocol (it said "HTTP/1.1 400 Bad Request"; an HTTP server or another service?)\n`,
      )
    }
  })

  it('nothing listening: connection refused; a bare port is 127.0.0.1', async () => {
    const port = await probeFreePort()
    const r = await runCli(['topic', 'list', '-b', String(port)], {timeoutMs: DEADLINE_MS})
    assert.equal(r.code, 1)
    assert.equal(r.stderr, `error [CONNECTION_FAILED]: cannot reach broker 127.0.0.1:${port}: connection refused\n`)
    const bad = await runCli(['topic', 'list', '-b', 'host:port'])
    assert.equal(bad.code, 2)
    assert.equal(
      bad.stderr,
      'error [USAGE]: invalid broker address "host:port": expected host:port (or a port alone for 127.0.0.1), e.g. 127.0.0.1:8123\nsee: meta topic list --help\n',
    )
  })
})
