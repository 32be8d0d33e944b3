/**
 * The browser guard's rules one by one (browser-guard.ts): which Host names, which Origins and
 * which requests that change something it lets through. The integration test
 * (browser.int.test.ts) sends such requests to a real server.
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import type {FastifyRequest} from 'fastify'
import {browserGuard, checkAllowHost} from '../../src/http/browser-guard.js'

const req = (method: string, headers: Record<string, string>) => ({method, url: '/put?topic=t', headers}) as unknown as FastifyRequest
const status = (guard: (r: FastifyRequest) => void, method: string, headers: Record<string, string>): number => {
  try {
    guard(req(method, headers))
    return 200
  } catch (error) {
    return (error as {statusCode: number}).statusCode
  }
}

describe('browser guard', () => {
  it('answers to its listen address, localhost, loopback literals and allowed names (case and a final dot aside)', () => {
    const guard = browserGuard({listenHost: '10.1.2.3', allowHosts: ['Broker.Example'], scheme: 'http'})
    for (const host of ['10.1.2.3:8080', 'localhost:8080', 'LOCALHOST.', '127.0.0.1', '127.5.6.7:1', '[::1]:8080', 'broker.example', 'BROKER.EXAMPLE.:80']) {
      assert.equal(status(guard, 'GET', {host}), 200, host)
    }
    for (const host of ['evil.example', '10.1.2.4:8080', 'sub.localhost', 'localhost.evil.example', '[::2]:80', '']) {
      assert.equal(status(guard, 'GET', {host}), 421, host)
    }
    // No Host at all (HTTP/1.0): nothing a browser sends.
    assert.equal(status(guard, 'GET', {}), 200)
  })

  it('on a wildcard listen address answers to any IP literal, still not to other names', () => {
    for (const listenHost of ['0.0.0.0', '::']) {
      const guard = browserGuard({listenHost, allowHosts: [], scheme: 'http'})
      assert.equal(status(guard, 'GET', {host: '192.168.1.9:8080'}), 200)
      assert.equal(status(guard, 'GET', {host: '[fe80::1]:8080'}), 200)
      assert.equal(status(guard, 'GET', {host: 'evil.example:8080'}), 421)
    }
  })

  it('takes an Origin only when it is the served origin (scheme, host, port)', () => {
    const guard = browserGuard({listenHost: '127.0.0.1', allowHosts: [], scheme: 'https'})
    const base = {host: '127.0.0.1:8443', 'x-meta-request': '1'}
    assert.equal(status(guard, 'POST', {...base, origin: 'https://127.0.0.1:8443'}), 200)
    assert.equal(status(guard, 'POST', {...base, origin: 'http://127.0.0.1:8443'}), 403)
    assert.equal(status(guard, 'POST', {...base, origin: 'https://127.0.0.1:8444'}), 403)
    assert.equal(status(guard, 'POST', {...base, origin: 'null'}), 403)
    assert.equal(status(guard, 'GET', {host: '127.0.0.1:8443', origin: 'https://evil.example'}), 403)
  })

  it('lets a change through with X-Meta-Request, X-Meta-Token or a Bearer token, or with nothing a browser sends', () => {
    const guard = browserGuard({listenHost: '127.0.0.1', allowHosts: [], scheme: 'http'})
    const host = {host: '127.0.0.1:8080'}
    assert.equal(status(guard, 'POST', {...host, 'content-type': 'text/plain', 'x-meta-request': '1'}), 200)
    assert.equal(status(guard, 'POST', {...host, 'content-type': 'text/plain', 'x-meta-token': 't'}), 200)
    assert.equal(status(guard, 'PUT', {...host, 'content-type': 'text/plain', authorization: 'Bearer t'}), 200)
    assert.equal(status(guard, 'POST', {...host, 'content-type': 'text/plain', authorization: 'Basic cm9vdDpy'}), 403)
    assert.equal(status(guard, 'POST', {...host, 'content-type': 'application/x-www-form-urlencoded'}), 403)
    assert.equal(status(guard, 'POST', {...host, authorization: 'Basic cm9vdDpy'}), 403)
    // MetaQ's Java HTTP client: no Content-Type, no Origin, no credentials.
    assert.equal(status(guard, 'POST', {...host, 'user-agent': 'Jakarta Commons-HttpClient/3.1'}), 200)
  })

  it('refuses an --http-allow-host that is not a host name or an IP address, naming it', () => {
    assert.equal(checkAllowHost('[::1]'), '::1')
    assert.equal(checkAllowHost('Meta.Example.'), 'meta.example')
    for (const bad of ['http://x.example', 'x.example:80', '', 'a b', '*.example']) {
      assert.throws(
        () => checkAllowHost(bad),
        new RegExp(`invalid --http-allow-host ${JSON.stringify(JSON.stringify(bad)).slice(1, -1).replace(/[.*]/g, '\\$&')}`),
      )
    }
  })
})
