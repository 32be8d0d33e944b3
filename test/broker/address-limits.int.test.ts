/**
 * Limits before login (docs/security.md#limits-per-address): connections per client address
 * and, with access control, connections not logged in per address; the login timeout of a
 * broker that gives anonymous connections nothing; a put refused for rights answered from its
 * header, its body skipped without being held.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/index.js'
import type {ResponseFrame} from '../../src/protocol/frames.js'
import {startTestBroker} from '../helpers/broker.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {RawClient, rawLogin, text} from '../helpers/raw-client.js'

const PASSWORD = 'correct-horse-7f3a'

function code(frame: ResponseFrame): number {
  assert.equal(frame.type, 'result')
  return (frame as {code: number}).code
}

async function usersFile(t: {after(fn: () => unknown): void}): Promise<string> {
  const path = join(await tmpDir(t, 'meta-limits-'), 'users.json')
  addUser(path, 'alice', PASSWORD)
  grantRight(path, 'alice', 'put', 'a-*')
  addUser(path, 'root', PASSWORD)
  grantRight(path, 'root', 'admin', '*')
  return path
}

async function systemStat(port: number, name: string): Promise<number> {
  const admin = await BrokerConnection.connect({host: '127.0.0.1', port, user: 'root', password: PASSWORD, reconnect: false})
  try {
    const match = new RegExp(`\\b${name} (\\d+)`).exec(await admin.stats(''))
    assert.ok(match, `stats has ${name}`)
    return Number(match[1])
  } finally {
    admin.close()
  }
}

describe('limits per client address and before login', () => {
  it('refuses the connection past maxConnectionsPerAddress from one address; another address still connects', async (t) => {
    const broker = await startTestBroker(t, {maxConnectionsPerAddress: 5})
    const held = await Promise.all(Array.from({length: 5}, () => RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.3')))
    for (const client of held) assert.equal(code(await client.request('version 1\r\n')), 200)
    const extra = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.3')
    await extra.waitClosed()
    const other = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.4')
    assert.equal(code(await other.request('version 1\r\n')), 200)
    assert.match(text(await other.request('stats  2\r\n')), /connections_refused 1\b/)
    // One leaves: the address may connect again.
    held[0].socket.destroy()
    await waitFor(async () => {
      const again = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.3')
      const answer = await again.request('version 3\r\n').catch(() => undefined)
      return answer !== undefined && code(answer) === 200
    })
  })

  it('with access control, caps the connections not logged in per address; logging in frees a place', async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {usersFile: path, maxUnauthenticatedConnectionsPerAddress: 3})
    const anonymous = await Promise.all(Array.from({length: 3}, () => RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.5')))
    for (const client of anonymous) assert.equal(code(await client.request('version 1\r\n')), 200)
    const refused = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.5')
    await refused.waitClosed()
    // Logged in, a connection no longer counts as unauthenticated: one more anonymous connection is taken.
    assert.equal(code(await rawLogin(anonymous[0], 'alice', PASSWORD)), 200)
    const after = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.5')
    assert.equal(code(await after.request('version 2\r\n')), 200)
    assert.equal(await systemStat(broker.port, 'connections_refused'), 1)
  })

  it('closes a connection not logged in connectionAuthTimeoutMs after it opened when anonymous connections have no right; a logged-in one stays', async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {usersFile: path, connectionAuthTimeoutMs: 300})
    const alice = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'alice', password: PASSWORD, reconnect: false})
    t.after(() => alice.close())
    const idle = await RawClient.connect(t, broker.port)
    // Requests that need no right do not stand for a login.
    assert.equal(code(await idle.request('version 1\r\n')), 200)
    await idle.waitClosed(10_000)
    const answer = await alice.requestAsync((out, opaque) => out.writeAscii(`version ${opaque}\r\n`))
    assert.equal(code(answer), 200, 'the logged-in connection is still served')
  })

  it('answers a put refused for rights from its header, skips its body without holding it, and keeps the connection usable', async (t) => {
    const path = await usersFile(t)
    const broker = await startTestBroker(t, {usersFile: path})
    const client = await RawClient.connect(t, broker.port)
    const size = 1024 * 1024 - 64
    // Only the header and the first KiB: the answer does not wait for the rest.
    client.send(Buffer.concat([Buffer.from(`put a-secret 0 ${size} 0 -1 7\r\n`), Buffer.alloc(1024, 0x61)]))
    const refused = await client.next()
    assert.equal(code(refused), 403)
    assert.match(text(refused), /an anonymous connection .* lacks the "put" right on topic "a-secret"/)
    // The rest of the body is passed over; the next request is read after it.
    client.send(Buffer.alloc(size - 1024, 0x62))
    assert.equal(code(await client.request('version 8\r\n')), 200)
    // A put the connection may make is held and stored whole as before.
    const alice = await BrokerConnection.connect({host: '127.0.0.1', port: broker.port, user: 'alice', password: PASSWORD, reconnect: false})
    t.after(() => alice.close())
    const body = Buffer.alloc(size, 0x63)
    const ok = await alice.requestAsync((out, opaque) => {
      out.writeAscii(`put a-secret 0 ${size} 0 -1 ${opaque}\r\n`)
      out.writeBytes(body)
    })
    assert.equal(code(ok), 200, text(ok))
  })
})
