/**
 * The HTTP server of a broker with access control: Basic auth, per-user tokens, the
 * --http-token and anonymous requests each get their rights, checked by the broker on the
 * in-process connection it bound to the request's principal. Real broker and HTTP server on
 * port 0, requests over loopback.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {addToken, addUser, grantRight, revokeRight} from '../../src/broker/index.js'
import {tmpDir} from '../helpers/index.js'
import {captureLogger} from '../helpers/log.js'
import {httpFixture} from './helpers.js'

const PASSWORD = 'http-secret-5d1c'
const OP_TOKEN = 'operator-token-0123456789'

const basic = (user: string, password: string) => ({authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`})

async function put(url: string, topic: string, headers: Record<string, string> = {}): Promise<{status: number; body: {error?: string; code?: string}}> {
  const res = await fetch(url + `/put?topic=${topic}&partition=0&length=2`, {
    method: 'POST',
    body: 'hi',
    headers: {accept: 'application/json', 'x-meta-request': '1', ...headers},
  })
  return {status: res.status, body: (await res.json()) as {error?: string; code?: string}}
}

async function setup(t: {after(fn: () => unknown): void}) {
  const dir = await tmpDir(t, 'meta-http-auth-')
  const users = join(dir, 'users.json')
  addUser(users, 'alice', PASSWORD)
  grantRight(users, 'alice', 'put', 'a-*')
  grantRight(users, 'alice', 'get', 'a-*')
  grantRight(users, 'alice', 'group', 'ga-*')
  addUser(users, 'root', PASSWORD)
  grantRight(users, 'root', 'admin', '*')
  // A real server.ini: a reload re-reads it as well as the users file.
  const ini = '[system]\n[security]\nanonymous = put public-*\n'
  const dataPath = await tmpDir(t, 'meta-http-auth-data-')
  writeFileSync(join(dataPath, 'server.ini'), ini)
  const log = captureLogger('trace')
  const fx = await httpFixture(t, {usersFile: users, ini, dataPath, token: OP_TOKEN, logger: log.logger})
  return {...fx, users, log}
}

describe('HTTP server with access control', () => {
  it('Basic auth, anonymous and the --http-token get their rights; refusals are the broker’s 403', async (t) => {
    const {url} = await setup(t)
    const u = url('')
    assert.equal((await put(u, 'public-1')).status, 200)
    const anon = await put(u, 'a-1')
    assert.equal(anon.status, 403)
    assert.equal(anon.body.code, 'ACCESS_DENIED')
    assert.match(anon.body.error ?? '', /an anonymous HTTP request .* lacks the "put" right on topic "a-1"/)

    assert.equal((await put(u, 'a-1', basic('alice', PASSWORD))).status, 200)
    const other = await put(u, 'b-1', basic('alice', PASSWORD))
    assert.equal(other.status, 403)
    assert.match(other.body.error ?? '', /user "alice" lacks the "put" right on topic "b-1"/)
    // A get goes to the broker and is checked there-bound: alice reads a-1, not b-1.
    const got = await fetch(u + '/get?topic=a-1&partition=0&offset=0&group=ga-1', {headers: basic('alice', PASSWORD)})
    assert.equal(got.status, 200)
    const refusedGet = await fetch(u + '/get?topic=b-1&partition=0&offset=0', {headers: {...basic('alice', PASSWORD), accept: 'application/json'}})
    assert.equal(refusedGet.status, 403)
    // Admin endpoints: server.ini needs admin; the group list shows what each may see.
    assert.equal((await fetch(u + '/api/config', {headers: basic('alice', PASSWORD)})).status, 403)
    assert.equal((await fetch(u + '/api/config', {headers: basic('root', PASSWORD)})).status, 200)
    assert.equal((await fetch(u + '/api/groups', {headers: basic('alice', PASSWORD)})).status, 200)
    assert.equal((await fetch(u + '/api/groups', {headers: basic('root', PASSWORD)})).status, 200)
    // The operator's --http-token has every right.
    assert.equal((await put(u, 'b-1', {authorization: `Bearer ${OP_TOKEN}`})).status, 200)
    assert.equal((await fetch(u + '/api/groups', {headers: {authorization: `Bearer ${OP_TOKEN}`}})).status, 200)
  })

  it('a wrong password is 401 with a Basic challenge, slowed and counted; per-user tokens; a revoke + reload applies', async (t) => {
    const {url, broker, users, log} = await setup(t)
    const u = url('')
    const wrong = await fetch(u + '/put?topic=a-1&partition=0&length=2', {
      method: 'POST',
      body: 'hi',
      headers: {...basic('alice', 'nope'), 'x-meta-request': '1'},
    })
    assert.equal(wrong.status, 401)
    assert.match(wrong.headers.get('www-authenticate') ?? '', /^Basic realm="meta"/)
    assert.equal((await put(u, 'a-1', {authorization: 'Bearer not-a-token'})).status, 401)
    assert.equal(broker.access?.failures, 2)
    assert.ok(log.find('warn', 'failed login').length > 0)
    assert.ok(!JSON.stringify(log.entries).includes('nope'), 'no password in the broker log')

    const token = addToken(users, 'alice')
    assert.equal((await put(u, 'a-1', {authorization: `Bearer ${token}`})).status, 401, 'not before a reload')
    await broker.reloadWithUsers()
    assert.equal((await put(u, 'a-1', {authorization: `Bearer ${token}`})).status, 200)
    assert.equal((await put(u, 'a-2', {'x-meta-token': token})).status, 200)
    assert.equal((await put(u, 'b-1', {authorization: `Bearer ${token}`})).status, 403)

    revokeRight(users, 'alice', 'put', 'a-*')
    await broker.reloadWithUsers()
    assert.equal((await put(u, 'a-1', basic('alice', PASSWORD))).status, 403)
    assert.equal((await put(u, 'a-1', {authorization: `Bearer ${token}`})).status, 403)
    const logged = JSON.stringify(log.entries)
    assert.ok(!logged.includes(PASSWORD) && !logged.includes(token), 'no password or token in the broker log')
  })
})
