/**
 * Who may use the mutating endpoints (docs/http.md#token): open on loopback without a
 * token, refused on other addresses without one, and the token whenever one is set. (Tests
 * bind only loopback, so the non-loopback case is checked on the rule itself.)
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {authorizeMutation, isLoopback} from '../../src/http/server.js'
import {HttpError} from '../../src/http/params.js'

function status(fn: () => void): number {
  try {
    fn()
    return 200
  } catch (error) {
    assert.ok(error instanceof HttpError)
    return error.statusCode
  }
}

describe('HTTP token', () => {
  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) assert.equal(isLoopback(host), true, host)
    for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'broker1.example.com']) assert.equal(isLoopback(host), false, host)
  })

  it('opens mutations on loopback without a token and refuses them elsewhere, naming --http-token', () => {
    assert.equal(
      status(() => authorizeMutation({}, undefined, '127.0.0.1')),
      200,
    )
    assert.equal(
      status(() => authorizeMutation({}, undefined, '0.0.0.0')),
      403,
    )
    assert.throws(() => authorizeMutation({}, undefined, '0.0.0.0'), /listens on 0\.0\.0\.0, not a loopback address: start it with --http-token/)
  })

  it('needs the token whenever one is set, on any address', () => {
    for (const host of ['127.0.0.1', '0.0.0.0']) {
      assert.equal(
        status(() => authorizeMutation({}, 't0k', host)),
        401,
      )
      assert.equal(
        status(() => authorizeMutation({authorization: 'Bearer nope'}, 't0k', host)),
        401,
      )
      assert.equal(
        status(() => authorizeMutation({authorization: 'Bearer t0k'}, 't0k', host)),
        200,
      )
      assert.equal(
        status(() => authorizeMutation({'x-meta-token': 't0k'}, 't0k', host)),
        200,
      )
    }
  })
})
