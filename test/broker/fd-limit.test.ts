import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {connectionCap, LARGE_FD_LIMIT, storeFileBudget} from '../../src/broker/fd-limit.js'

describe('file-descriptor budget', () => {
  it('gives the store three quarters of a large limit, and the fixed default below it or when unknown', () => {
    assert.equal(storeFileBudget(20_000, 1024), 15_000)
    assert.equal(storeFileBudget(1_048_576, 1024), 786_432)
    assert.equal(storeFileBudget(LARGE_FD_LIMIT - 1, 1024), 1024)
    assert.equal(storeFileBudget(1024, 1024), 1024)
    assert.equal(storeFileBudget(undefined, 1024), 1024)
  })

  it('never lets the store budget and the connection cap together pass a large limit', () => {
    for (const limit of [LARGE_FD_LIMIT, 20_000, 65_536, 1_048_576]) {
      for (const others of [0, 30, 500]) {
        const budget = storeFileBudget(limit, 1024)
        const cap = connectionCap(limit, others, budget)
        assert.ok(cap >= 1, `cap ${cap} for limit ${limit}`)
        assert.ok(others + budget + cap <= limit, `limit ${limit}, others ${others}: store ${budget} + connections ${cap} over the limit`)
      }
    }
    assert.equal(connectionCap(20_000, 30, 15_000), 4_970)
  })

  it('keeps the quarter-of-what-is-free reserve for a small limit', () => {
    assert.equal(connectionCap(1024, 24, 1024), 750)
    assert.equal(connectionCap(100, 20, 1024), 60)
    assert.equal(connectionCap(10, 20, 1024), 1)
  })
})
