/**
 * What a web page on another site can make a visitor's browser send the HTTP server: a form
 * POST (text/plain, with the Basic credentials the browser keeps), a request from another
 * Origin, a request through a name of its own pointed at the server (DNS rebinding). Each is
 * sent as the browser would, over loopback to a real broker's HTTP server, and refused; the
 * dashboard's own requests and a curl with `X-Meta-Request: 1` still work.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {request} from 'node:http'
import {join} from 'node:path'
import {addUser, grantRight} from '../../src/broker/index.js'
import {connectAdmin} from '../../src/client/admin.js'
import {startHttpServer} from '../../src/http/server.js'
import {tmpDir, withDeadline} from '../helpers/index.js'
import {httpFixture, ROOT} from './helpers.js'

const PASSWORD = 'browser-secret-9f2e'
const basic = (user: string) => `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}`

interface Answer {
  status: number
  body: string
}

/** One request with exactly these headers (node:http: Host and Origin as given). */
function send(port: number, method: string, path: string, headers: Record<string, string>, body = ''): Promise<Answer> {
  return withDeadline(
    new Promise<Answer>((resolve, reject) => {
      const req = request({host: '127.0.0.1', port, method, path, headers: {...headers, 'content-length': String(Buffer.byteLength(body))}}, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (d: Buffer) => chunks.push(d))
        res.on('end', () => resolve({status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString()}))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    }),
    20_000,
    `an answer to ${method} ${path}`,
  )
}

async function withUsers(t: {after(fn: () => unknown): void}) {
  const dir = await tmpDir(t, 'meta-http-browser-')
  const users = join(dir, 'users.json')
  addUser(users, 'root', PASSWORD)
  grantRight(users, 'root', 'admin', '*')
  grantRight(users, 'root', 'put', '*')
  grantRight(users, 'root', 'get', '*')
  grantRight(users, 'root', 'group', '*')
  // Anonymous may commit g1's offsets over the broker's port (the test's own setup).
  return httpFixture(t, {usersFile: users, ini: '[system]\nnumPartitions=1\n[security]\nanonymous = group g1\n'})
}

describe('HTTP server and browsers on other sites', () => {
  it('a cross-site text/plain form POST with Basic credentials is refused on /put and on a group skip', async (t) => {
    const {http, broker} = await withUsers(t)
    const host = `127.0.0.1:${http.port}`
    const evil = {host, origin: 'https://evil.example', 'content-type': 'text/plain', authorization: basic('root')}
    const put = await send(http.port, 'POST', '/put?topic=t1&partition=0&length=2', evil, 'hi')
    assert.equal(put.status, 403, put.body)
    assert.match(put.body, /cross-origin request refused: Origin "https:\/\/evil.example"/)
    // Set a committed offset first (as root, from the dashboard's origin), then attack the skip.
    const dashboard = {host, origin: `http://${host}`, 'x-meta-request': '1', authorization: basic('root')}
    assert.equal((await send(http.port, 'POST', '/put?topic=t1&partition=0&length=2', dashboard, 'hi')).status, 200)
    const admin = await connectAdmin({broker: `127.0.0.1:${broker.port}`})
    t.after(() => admin.close())
    await admin.commitOffsets('g1', [{topic: 't1', partition: 0, offset: 0, msgId: '-1'}])
    const skip = await send(http.port, 'POST', '/api/groups/g1/skip', evil, '{"topic":"t1","partition":0}')
    assert.equal(skip.status, 403, skip.body)
    // Without an Origin (a browser that leaves it out), Basic credentials alone still change nothing.
    const noOrigin = {host, 'content-type': 'text/plain', authorization: basic('root')}
    const put2 = await send(http.port, 'POST', '/put?topic=t1&partition=0&length=2', noOrigin, 'hi')
    assert.equal(put2.status, 403, put2.body)
    assert.match(put2.body, /send the header "X-Meta-Request: 1"/)
    const skip2 = await send(http.port, 'POST', '/api/groups/g1/skip', noOrigin, '{"topic":"t1","partition":0}')
    assert.equal(skip2.status, 403, skip2.body)
    assert.match(skip2.body, /X-Meta-Request/)
    // The log holds the one message the dashboard's put wrote: nothing else got in.
    const got = await send(http.port, 'GET', '/get?topic=t1&partition=0&offset=22&group=g', {host, authorization: basic('root')})
    assert.equal(got.status, 404, 'no second message in t1')
    const group = await send(http.port, 'GET', '/api/groups/g1', {host, authorization: basic('root')})
    assert.equal((JSON.parse(group.body) as {items: Array<{committed: number}>}).items[0].committed, 0, 'g1 not skipped')
  })

  it('the dashboard (same origin, X-Meta-Request) and a curl with the header work', async (t) => {
    const {http} = await withUsers(t)
    const host = `127.0.0.1:${http.port}`
    const page = await send(http.port, 'GET', '/', {host})
    assert.equal(page.status, 200)
    const app = await send(http.port, 'GET', '/ui/app.js', {host})
    assert.match(app.body, /'x-meta-request': '1'/, 'the dashboard sends the header with every API request')
    const dashboard = {
      host,
      origin: `http://${host}`,
      'x-meta-request': '1',
      'content-type': 'application/json',
      accept: 'application/json',
      authorization: basic('root'),
    }
    const reload = await send(http.port, 'POST', '/api/reload', dashboard, '{"dryRun":true}')
    // Reached the reload itself (the test broker's server.ini is not on disk): the guard let it through.
    assert.equal(reload.status, 400, reload.body)
    assert.match(reload.body, /cannot read config file/)
    const curl = {host, 'content-type': 'application/x-www-form-urlencoded', 'x-meta-request': '1', authorization: basic('root')}
    assert.equal((await send(http.port, 'POST', '/put?topic=t1&partition=0&length=2', curl, 'hi')).status, 200)
    // `localhost` as the Host, with its own origin, is the same server.
    const local = {host: `localhost:${http.port}`, origin: `http://localhost:${http.port}`, 'x-meta-request': '1', authorization: basic('root')}
    assert.equal((await send(http.port, 'POST', '/put?topic=t1&partition=0&length=2', local, 'hi')).status, 200)
  })

  it('without --users: a foreign Host is 421 (DNS rebinding); a cross-origin POST is 403; names given with allowHosts work', async (t) => {
    const {http} = await httpFixture(t, {ini: '[system]\nnumPartitions=1\n[topic=t1]\n'})
    const port = http.port
    assert.equal((await send(port, 'POST', '/put?topic=t1&partition=0&length=2', {host: `127.0.0.1:${port}`, 'x-meta-request': '1'}, 'hi')).status, 200)
    const rebound = await send(port, 'GET', '/get?topic=t1&partition=0&offset=0', {host: `evil.example:${port}`})
    assert.equal(rebound.status, 421, rebound.body)
    assert.match(rebound.body, /does not answer to the host "evil.example:\d+".*--http-allow-host/)
    assert.equal((await send(port, 'GET', '/metrics', {host: 'evil.example'})).status, 421)
    assert.equal((await send(port, 'GET', '/', {host: 'evil.example'})).status, 421)
    // A cross-site form POST (no credentials needed here: a loopback server without a token).
    const form = await send(
      port,
      'POST',
      '/put?topic=t1&partition=0&length=2',
      {host: `127.0.0.1:${port}`, origin: 'https://evil.example', 'content-type': 'text/plain'},
      'hi',
    )
    assert.equal(form.status, 403, form.body)
    assert.equal((await send(port, 'GET', '/get?topic=t1&partition=0&offset=0', {host: `127.0.0.1:${port}`})).status, 200)

    const named = await httpFixture(t, {ini: '[system]\nnumPartitions=1\n[topic=t1]\n', allowHosts: ['Broker.Example']})
    const ok = await send(named.http.port, 'GET', '/get?topic=t1&partition=0&offset=0', {host: `broker.example:${named.http.port}`})
    assert.equal(ok.status, 404, ok.body)
    const still = await send(named.http.port, 'GET', '/get?topic=t1&partition=0&offset=0', {host: 'other.example'})
    assert.equal(still.status, 421)
  })

  it('an invalid allowHosts value is refused at start, naming it', async (t) => {
    const {broker} = await httpFixture(t)
    const started = startHttpServer({broker, port: 0, assetRoot: ROOT, allowHosts: ['http://x.example:80']})
    // A server that started anyway is closed (else the test would hold the process open).
    t.after(() => started.then((s) => s.close()).catch(() => undefined))
    await assert.rejects(started, /invalid --http-allow-host "http:\/\/x.example:80": expected a host name or an IP address/)
  })
})
