/**
 * The HTTP server acts as each request's principal (docs/http.md#how-the-http-server-reaches-its-broker):
 * its requests reach the broker on in-process connections the broker binds to that principal,
 * so the broker's own check refuses them, and its counters, quotas and audit trail name the
 * user; those connections are not network peers (no per-address cap), and none of them can be
 * logged in as someone else. Real broker and HTTP server on port 0, requests over loopback.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {addUser, grantRight, setLimits} from '../../src/broker/index.js'
import {BrokerConnection} from '../../src/client/connection.js'
import {inProcessDial} from '../../src/client/in-process.js'
import {encodePut, NO_CHECKSUM} from '../../src/protocol/commands/put.js'
import {tmpDir, waitFor} from '../helpers/index.js'
import {RawClient, rawLogin} from '../helpers/raw-client.js'
import {httpFixture} from './helpers.js'

const PASSWORD = 'http-secret-5d1c'
const basic = (user: string) => ({authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`})
/** A change over HTTP sends the header a cross-site page cannot (docs/http.md#browsers-and-other-sites). */
const change = (user: string) => ({...basic(user), 'x-meta-request': '1'})

async function users(t: {after(fn: () => unknown): void}): Promise<{path: string; dir: string}> {
  const dir = await tmpDir(t, 'meta-http-principal-')
  const path = join(dir, 'users.json')
  addUser(path, 'alice', PASSWORD)
  grantRight(path, 'alice', 'put', 'a-*')
  grantRight(path, 'alice', 'get', 'a-*')
  addUser(path, 'bob', PASSWORD)
  grantRight(path, 'bob', 'get', 'a-*')
  addUser(path, 'root', PASSWORD)
  for (const right of ['put', 'get', 'group', 'admin']) grantRight(path, 'root', right, '*')
  return {path, dir}
}

async function rootStats(port: number, item: string): Promise<string> {
  const admin = await BrokerConnection.connect({host: '127.0.0.1', port, user: 'root', password: PASSWORD, reconnect: false})
  try {
    return await admin.stats(item)
  } finally {
    admin.close()
  }
}

/** The `stats meta-principals` line of `user`, as numbers by name. */
function principalLine(stats: string, user: string): Record<string, number> {
  const line = stats.split('\n').find((l) => l.startsWith(`${user} `))
  assert.ok(line !== undefined, `stats meta-principals has ${user}: ${stats}`)
  const fields: Record<string, number> = {}
  const tokens = line.trim().split(/\s+/).slice(1)
  for (let i = 0; i + 1 < tokens.length; i += 2) fields[tokens[i]] = Number(tokens[i + 1])
  return fields
}

describe('HTTP requests act as their principal', () => {
  it('a user’s /put is counted, limited and audited as that user’s; refusals are the broker’s own', async (t) => {
    const {path, dir} = await users(t)
    const audit = join(dir, 'audit.log')
    const {broker, url} = await httpFixture(t, {usersFile: path, auditLog: audit})
    const put = await fetch(url('/put?topic=a-1&partition=0&length=5'), {method: 'POST', body: 'hello', headers: change('alice')})
    assert.equal(put.status, 200, await put.clone().text())
    const alice = principalLine(await rootStats(broker.port, 'meta-principals'), 'alice')
    assert.ok(alice.produce_bytes >= 5, `alice's produced bytes: ${JSON.stringify(alice)}`)
    assert.equal(alice.connections, 1, 'the HTTP server’s connection for alice counts as hers')
    assert.ok((await rootStats(broker.port, 'meta-connections')).includes('in-process:http'))

    // bob may read a-* but not put: 403 with the broker's own message, audited as bob's.
    const refused = await fetch(url('/put?topic=a-1&partition=0&length=2'), {
      method: 'POST',
      body: 'hi',
      headers: {...change('bob'), accept: 'application/json'},
    })
    assert.equal(refused.status, 403)
    const body = (await refused.json()) as {code: string; error: string}
    assert.equal(body.code, 'ACCESS_DENIED')
    assert.match(body.error, /user "bob" lacks the "put" right on topic "a-1"/)
    // A request with no HTTP-side check: the broker refuses it on bob's in-process connection.
    const offset = await fetch(url('/offset?topic=b-1&partition=0&group=g&offset=0'), {headers: {...basic('bob'), accept: 'application/json'}})
    assert.equal(offset.status, 403)
    assert.match(((await offset.json()) as {error: string}).error, /access denied: user "bob" lacks the "get" right on topic "b-1"/)
    await waitFor(() => readFileSync(audit, 'utf8').includes('in-process:http'))
    const lines = readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.ok(
      lines.some((e) => e.event === 'refused' && e.principal === 'bob' && e.command === 'offset' && e.address === 'in-process:http'),
      JSON.stringify(lines),
    )
    assert.ok(
      lines.some((e) => e.event === 'refused' && e.principal === 'bob' && e.resource === 'put a-1'),
      JSON.stringify(lines),
    )
    assert.ok(!lines.some((e) => String(e.principal).startsWith('meta:')), 'no internal user anywhere')
  })

  it('large bodies cross the in-process connection intact, both ways, put after put', async (t) => {
    const {path} = await users(t)
    const {url} = await httpFixture(t, {usersFile: path})
    const bodies = [0x41, 0x42, 0x43].map((fill, i) => Buffer.alloc(200 * 1024 + i, fill))
    let offset = 0
    for (const body of bodies) {
      const put = await fetch(url(`/put?topic=a-big&partition=0&length=${body.length}`), {method: 'POST', body, headers: change('alice')})
      assert.equal(put.status, 200, await put.clone().text())
    }
    for (const body of bodies) {
      const got = await fetch(url(`/get?topic=a-big&partition=0&offset=${offset}&group=g&maxsize=${300 * 1024}`), {
        headers: {...basic('alice'), accept: 'application/json'},
      })
      assert.equal(got.status, 200)
      const json = (await got.json()) as {messages: Array<{payload: string}>; nextOffset: number}
      assert.ok(Buffer.from(json.messages[0].payload, 'base64').equals(body), `the message at ${offset} is the one put`)
      offset = json.nextOffset
    }
  })

  it('a user at its connections limit gets 403 QUOTA_EXCEEDED over HTTP; another user is served', async (t) => {
    const {path} = await users(t)
    setLimits(path, 'alice', {connections: 1})
    const {broker, url} = await httpFixture(t, {usersFile: path})
    const wire = await RawClient.connect(t, broker.port)
    assert.equal((await rawLogin(wire, 'alice', PASSWORD)).type, 'result')
    const res = await fetch(url('/get?topic=a-1&partition=0&offset=0&group=g'), {headers: {...basic('alice'), accept: 'application/json'}})
    assert.equal(res.status, 403)
    const body = (await res.json()) as {code: string; error: string}
    assert.equal(body.code, 'QUOTA_EXCEEDED')
    assert.match(body.error, /user "alice" has 1 connections, its limit \(connections 1/)
    assert.notEqual((await fetch(url('/get?topic=a-1&partition=0&offset=0&group=g'), {headers: basic('bob')})).status, 403)
  })

  it('in-process connections are not counted against maxConnectionsPerAddress', async (t) => {
    const {path} = await users(t)
    const {broker, url} = await httpFixture(t, {usersFile: path, maxConnectionsPerAddress: 2})
    await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.6')
    await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.6')
    // Three principals, three in-process connections, while 127.0.0.6 is at its cap.
    for (const user of ['alice', 'bob', 'root']) {
      const res = await fetch(url('/get?topic=a-1&partition=0&offset=0&group=g'), {headers: basic(user)})
      assert.ok(res.status === 200 || res.status === 404, `${user}: ${res.status} ${await res.text()}`)
    }
    assert.equal(broker.stats.connectionCount(), 5)
    assert.equal(broker.stats.connectionsRefused(), 0)
    // The address is still at its cap for network peers.
    const third = await RawClient.connect(t, broker.port, '127.0.0.1', '127.0.0.6')
    await third.waitClosed()
    assert.equal(broker.stats.connectionsRefused(), 1)
  })

  it('an anonymous in-process connection outlives connectionAuthTimeoutMs, which closes a network peer', async (t) => {
    const {path} = await users(t)
    const {broker, url} = await httpFixture(t, {usersFile: path, connectionAuthTimeoutMs: 300})
    const inProcess = async () => (await rootStats(broker.port, 'meta-connections')).split('\n').find((l) => l.startsWith('in-process:http '))
    assert.equal((await fetch(url('/api/overview'))).status, 200)
    const before = await inProcess()
    assert.ok(before !== undefined)
    const peer = await RawClient.connect(t, broker.port)
    await peer.waitClosed()
    assert.equal((await fetch(url('/api/overview'))).status, 200)
    const after = await inProcess()
    assert.equal(/ id (\d+)/.exec(after ?? '')?.[1], / id (\d+)/.exec(before)?.[1], 'the same in-process connection, still open, served the next request')
  })

  it('an in-process connection cannot log in as anyone else', async (t) => {
    const {path} = await users(t)
    const {broker} = await httpFixture(t, {usersFile: path})
    const login = BrokerConnection.connect({
      transport: inProcessDial((socket) => broker.acceptInProcess(socket, {anonymous: true})),
      host: broker.host,
      port: broker.port,
      user: 'root',
      password: PASSWORD,
      reconnect: false,
    })
    await assert.rejects(login, /auth-start on an in-process connection/)
    // Anonymous and bound: a put needs a right it has not.
    const conn = await BrokerConnection.connect({
      transport: inProcessDial((socket) => broker.acceptInProcess(socket, {anonymous: true})),
      host: broker.host,
      port: broker.port,
      reconnect: false,
    })
    t.after(() => conn.close())
    const frame = await conn.requestAsync((out, opaque) =>
      encodePut(out, {topic: 'a-1', partition: 0, flag: 0, checksum: NO_CHECKSUM, txKey: null, opaque, body: Buffer.from('x')}),
    )
    assert.equal(frame.type === 'result' ? frame.code : 0, 403)
    assert.match(frame.body.toString(), /an anonymous connection \(not authenticated\) lacks the "put" right/)
  })
})
