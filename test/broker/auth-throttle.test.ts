/**
 * The pace of logins (broker/auth/throttle.ts), in virtual time: guesses from one address are
 * checked one at a time per user and answered late, however many arrive together; nothing is
 * ever locked out, and another user's success resets nothing.
 */
import {describe, it, type TestContext} from 'node:test'
import assert from 'node:assert/strict'
import {AccessControl} from '../../src/broker/auth/access.js'
import {addressKey, LoginThrottle} from '../../src/broker/auth/throttle.js'
import {captureLogger} from '../helpers/log.js'

/** Virtual time: setTimeout and Date are mocked; `advance` moves time on in steps, letting promises settle. */
function virtualTime(t: TestContext): {advance(ms: number, stepMs?: number): Promise<void>; settle(): Promise<void>} {
  t.mock.timers.enable({apis: ['setTimeout', 'Date'], now: 1_000_000})
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve))
  }
  return {
    settle,
    async advance(ms, stepMs = 50) {
      await settle()
      for (let done = 0; done < ms; done += stepMs) {
        t.mock.timers.tick(stepMs)
        await settle()
      }
    },
  }
}

describe('login throttle', () => {
  it('60 parallel guesses from one address are checked one at a time, each failure answered after 100, 200, 400 … ms up to 3 s: under 1 per second sustained', async (t) => {
    const clock = virtualTime(t)
    const throttle = new LoginThrottle()
    const checkedAt: number[] = []
    const answeredAt: number[] = []
    for (let i = 0; i < 60; i++) {
      void throttle
        .attempt('10.0.0.1', 'root', () => {
          checkedAt.push(Date.now())
          return false
        })
        .then(() => answeredAt.push(Date.now()))
    }
    await clock.settle()
    assert.equal(checkedAt.length, 1, 'one guess checked at once, the others wait')
    await clock.advance(60_000)
    const gaps = checkedAt.slice(1).map((at, i) => at - checkedAt[i])
    assert.deepEqual(gaps.slice(0, 6), [100, 200, 400, 800, 1600, 3000])
    assert.ok(
      gaps.slice(5).every((gap) => gap >= 3000),
      `gaps ${gaps}`,
    )
    // 60 s of guessing: 6 to reach the 3 s delay, then one per 3 s.
    assert.ok(checkedAt.length <= 6 + 60_000 / 3000, `${checkedAt.length} guesses checked in 60 s`)
    assert.ok(checkedAt.length / 60 < 1, 'under 1 guess per second')
    assert.equal(throttle.failures, checkedAt.length, 'counted when checked')
    assert.equal(answeredAt.length, checkedAt.length - 1, 'the last one still waits out its delay')
  })

  it('the right password after 50 failures from the same address succeeds, waiting at most the one guess being answered', async (t) => {
    const clock = virtualTime(t)
    const access = new AccessControl({anonymous: [], log: captureLogger().logger})
    for (let i = 0; i < 50; i++) {
      const answer = access.login('10.0.0.1', 'root', 'SCRAM-SHA-256', () => false)
      await clock.advance(3000)
      assert.equal(await answer, false)
    }
    // A guess still being answered (3 s), then the owner's right password.
    void access.login('10.0.0.1', 'root', 'SCRAM-SHA-256', () => false)
    await clock.settle()
    const startedAt = Date.now()
    let ok: boolean | undefined
    void access.login('10.0.0.1', 'root', 'SCRAM-SHA-256', () => true).then((outcome) => (ok = outcome))
    await clock.advance(3000)
    assert.equal(ok, true, 'never locked out')
    assert.ok(Date.now() - startedAt <= 3000)
    assert.equal(access.failures, 51)
  })

  it("another user's success resets nothing: 9 wrong root guesses and 1 right lowuser login, repeated, keep root's delays growing", async (t) => {
    const clock = virtualTime(t)
    const delays: number[] = []
    const throttle = new LoginThrottle({onFailure: (f) => f.user === 'root' && delays.push(f.delayMs)})
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 9; i++) {
        const answer = throttle.attempt('10.0.0.1', 'root', () => false)
        await clock.advance(3000)
        assert.equal(await answer, false)
      }
      const low = throttle.attempt('10.0.0.1', 'low', () => true)
      await clock.settle()
      assert.equal(await low, true, 'the right password of another user is answered at once')
    }
    assert.equal(delays.length, 36)
    assert.deepEqual(delays.slice(0, 6), [100, 200, 400, 800, 1600, 3000])
    assert.ok(
      delays.slice(5).every((d) => d === 3000),
      "never reset by lowuser's successes",
    )
    // 36 guesses took at least 36 delays: 4 rounds of 9 cost 100+200+…+3000×31 ms.
  })

  it("a (user, address)'s own success clears its count; another address starts fresh; an address's failures slow all its users", async (t) => {
    const clock = virtualTime(t)
    const delays: Array<{user: string; address: string; delayMs: number}> = []
    const throttle = new LoginThrottle({onFailure: (f) => delays.push(f)})
    for (let i = 0; i < 12; i++) {
      const answer = throttle.attempt('10.0.0.1', `user${i}`, () => false)
      await clock.advance(3000)
      await answer
    }
    // Spraying users: each is a first failure for its pair, but the address's delay grows.
    assert.deepEqual(
      delays.map((d) => d.delayMs),
      [100, 100, 100, 200, 200, 200, 400, 400, 400, 800, 800, 800],
    )
    const other = throttle.attempt('10.0.0.2', 'user0', () => false)
    await clock.advance(200)
    await other
    assert.equal(delays.at(-1)!.delayMs, 100, 'another address starts fresh')
    void throttle.attempt('10.0.0.2', 'user0', () => true)
    await clock.settle()
    const again = throttle.attempt('10.0.0.2', 'user0', () => false)
    await clock.advance(200)
    await again
    // Without the success between them this second failure of the pair would wait 200 ms.
    assert.equal(delays.at(-1)!.delayMs, 100, 'its own success cleared the pair')
  })

  it('caps the logins being checked per address: the rest wait their turn, none is refused', async (t) => {
    const clock = virtualTime(t)
    const throttle = new LoginThrottle()
    let checking = 0
    let most = 0
    const answers: Array<Promise<boolean>> = []
    for (let i = 0; i < 30; i++) {
      answers.push(
        throttle.attempt('10.0.0.1', `user${i}`, async () => {
          checking += 1
          most = Math.max(most, checking)
          await new Promise<void>((resolve) => setTimeout(resolve, 10))
          checking -= 1
          return i === 29
        }),
      )
    }
    await clock.settle()
    assert.equal(throttle.pending('10.0.0.1'), 30)
    await clock.advance(30_000)
    assert.equal(most, 8)
    const outcomes = await Promise.all(answers)
    assert.equal(outcomes.filter(Boolean).length, 1)
    assert.equal(throttle.pending('10.0.0.1'), 0)
  })

  it('counts an IPv6 address by its /64 and an IPv4-mapped address as IPv4', () => {
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64')
    assert.equal(addressKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64')
    assert.equal(addressKey('::1'), '0:0:0:0::/64')
    assert.equal(addressKey('::ffff:127.0.0.2'), '127.0.0.2')
    assert.equal(addressKey('10.1.2.3'), '10.1.2.3')
  })

  it('logs failures on the 1st, 2nd, 4th, 8th … of a (user, address), never a password', async (t) => {
    const clock = virtualTime(t)
    const log = captureLogger()
    const access = new AccessControl({anonymous: [], log: log.logger})
    for (let i = 0; i < 10; i++) {
      const answer = access.login('10.0.0.1', 'mallory', 'SCRAM-SHA-256', () => false)
      await clock.advance(3000)
      await answer
    }
    assert.deepEqual(
      log.entries.filter((e) => e.msg === 'failed login').map((e) => e.failuresInARow),
      [1, 2, 4, 8],
    )
  })
})
