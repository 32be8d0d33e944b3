/**
 * Who an HTTP request is (src/http/auth.ts principalOf), against a real users file: Basic auth
 * is refused where it would travel in clear, tokens name their user, the --http-token has every
 * right, and nothing at all is anonymous. Plus `meta user token` from the CLI.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import type {FastifyRequest} from 'fastify'
import {AccessControl} from '../../src/broker/auth/access.js'
import {addUser, grantRight} from '../../src/broker/index.js'
import {principalOf} from '../../src/http/auth.js'
import {HttpError} from '../../src/http/params.js'
import {silentLogger} from '../../src/log.js'
import {tmpDir} from '../helpers/index.js'
import {runCli} from '../helpers/process.js'

const PASSWORD = 'unit-secret-33'

function request(headers: Record<string, string>): FastifyRequest {
  return {headers, socket: {remoteAddress: '127.0.0.1'}, ip: '127.0.0.1'} as unknown as FastifyRequest
}

describe('principalOf()', () => {
  it('Basic only where allowed; tokens name their user; the --http-token has every right; none is anonymous', async (t) => {
    const dir = await tmpDir(t, 'meta-http-principal-')
    const path = join(dir, 'users.json')
    addUser(path, 'alice', PASSWORD)
    grantRight(path, 'alice', 'get', 'a-*')
    const access = new AccessControl({usersFile: path, anonymous: [{right: 'get', pattern: 'public-*'}], log: silentLogger})
    const basic = {authorization: `Basic ${Buffer.from(`alice:${PASSWORD}`).toString('base64')}`}

    await assert.rejects(principalOf(request(basic), access, {httpToken: undefined, basicAllowed: false}), (e) => {
      assert.ok(e instanceof HttpError)
      assert.equal(e.statusCode, 403)
      assert.match(e.message, /Basic auth sends the password in clear .* use https .* or a token/)
      return true
    })
    const alice = await principalOf(request(basic), access, {httpToken: undefined, basicAllowed: true})
    assert.equal(alice.who, 'user "alice"')
    assert.equal(alice.rights().allows('get', 'a-1'), true)
    assert.equal(alice.rights().allows('get', 'b-1'), false)

    const anonymous = await principalOf(request({}), access, {httpToken: 'op', basicAllowed: true})
    assert.match(anonymous.who, /anonymous/)
    assert.equal(anonymous.rights().allows('get', 'public-1'), true)
    assert.equal(anonymous.rights().allows('get', 'a-1'), false)
    const operator = await principalOf(request({authorization: 'Bearer op'}), access, {httpToken: 'op', basicAllowed: true})
    assert.equal(operator.rights().allows('admin', '*'), true)
  })

  it('meta user token prints a token once and keeps only its SHA-256; --revoke drops it', async (t) => {
    const dir = await tmpDir(t, 'meta-http-token-cli-')
    const path = join(dir, 'users.json')
    addUser(path, 'dash', PASSWORD)
    const made = await runCli(['user', 'token', 'dash', '--users', path])
    assert.equal(made.code, 0, made.stderr)
    const token = made.stdout.trim()
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    assert.ok(!readFileSync(path, 'utf8').includes(token))
    const access = new AccessControl({usersFile: path, anonymous: [], log: silentLogger})
    assert.equal(access.userOfToken(token), 'dash')
    const listed = await runCli(['user', 'list', '--users', path, '--json'])
    assert.equal(JSON.parse(listed.stdout)[0].tokens, 1)
    const revoked = await runCli(['user', 'token', 'dash', '--revoke', '--users', path])
    assert.match(revoked.stderr, /revoked 1 token\(s\) of "dash"/)
    access.load()
    assert.equal(access.userOfToken(token), undefined)
  })
})
