/**
 * Failed logins from one address: a growing delay, then a lockout; logged rate-limited and
 * without secrets (broker/auth/access.ts).
 */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {AccessControl} from '../../src/broker/auth/access.js'
import {captureLogger} from '../helpers/log.js'

describe('failed login throttle', () => {
  it('delays 100, 200, 400 … ms up to 3 s, locks the address out after 10 for 60 s, and a success clears it', () => {
    const log = captureLogger()
    const access = new AccessControl({anonymous: [], log: log.logger})
    const t0 = 1_000_000
    const delays: number[] = []
    for (let i = 0; i < 10; i++) {
      assert.equal(access.lockedForMs('10.0.0.1', t0 + i), 0)
      delays.push(access.failed('10.0.0.1', 'mallory', t0 + i))
    }
    assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3000, 3000, 3000, 3000, 3000])
    assert.ok(access.lockedForMs('10.0.0.1', t0 + 10) > 59_000)
    assert.equal(access.lockedForMs('10.0.0.2', t0 + 10), 0, 'another address is not locked out')
    assert.equal(access.lockedForMs('10.0.0.1', t0 + 9 + 60_000), 0, 'the lockout ends')
    assert.equal(access.failures, 10)
    // Logged on the 1st, 2nd, 4th, 8th and the 10th (lockout): not on every failure.
    const lines = log.entries.filter((e) => e.msg === 'failed login')
    assert.deepEqual(lines.map((e) => e.failuresInARow), [1, 2, 4, 8, 10])
    access.failed('10.0.0.3', 'bob', t0)
    access.succeeded('10.0.0.3')
    assert.equal(access.failed('10.0.0.3', 'bob', t0 + 1), 100, 'a success starts the count again')
  })
})
