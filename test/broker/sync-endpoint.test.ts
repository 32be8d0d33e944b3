import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {sameEndpoint} from '../../src/broker/replication/sync-announce.js'

describe('sameEndpoint (a configured sync slave address vs the URL the slave publishes)', () => {
  it('matches the same text, and the same port on hosts that resolve to a common address', async () => {
    assert.equal(await sameEndpoint('127.0.0.1:8124', '127.0.0.1:8124'), true)
    assert.equal(await sameEndpoint('localhost:8124', '127.0.0.1:8124'), true)
    assert.equal(await sameEndpoint('[::1]:8124', '::1:8124'), true)
  })

  it('does not match another port, another address, an unresolvable host or nothing', async () => {
    assert.equal(await sameEndpoint('127.0.0.1:8124', '127.0.0.1:8125'), false)
    assert.equal(await sameEndpoint('127.0.0.1:8124', '127.0.0.2:8124'), false)
    assert.equal(await sameEndpoint('no-such-host.invalid:8124', '127.0.0.1:8124'), false)
    assert.equal(await sameEndpoint(undefined, '127.0.0.1:8124'), false)
  })
})
