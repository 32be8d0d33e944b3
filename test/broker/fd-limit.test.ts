import assert from 'node:assert/strict'
import {describe, it} from 'node:test'
import {CONNECTION_HEADROOM_FDS, connectionCap, RESERVED_FDS, STORE_FILES_MIN, storeFileBudget} from '../../src/broker/fd-limit.js'

describe('file-descriptor budget', () => {
  it('gives the store three quarters of the limit after the reserve, whatever the limit, and the fixed default when unknown', () => {
    assert.equal(storeFileBudget(256, 1024), 144)
    assert.equal(storeFileBudget(1024, 1024), 720)
    assert.equal(storeFileBudget(20_000, 1024), 14_952)
    assert.equal(storeFileBudget(1_048_576, 1024), 786_384)
    assert.equal(storeFileBudget(64, 1024), STORE_FILES_MIN)
    assert.equal(storeFileBudget(undefined, 1024), 1024)
  })

  it('never lets the store budget, the connection cap and the reserve together pass the limit', () => {
    for (const limit of [128, 256, 1024, 16_384, 65_536, 1_048_576]) {
      const budget = storeFileBudget(limit, 1024)
      assert.ok(budget + RESERVED_FDS < limit, `limit ${limit}: store ${budget} leaves the reserve`)
      // Others open = what is neither a store file nor a connection (base) + the store's open files.
      for (const base of [20, 40, RESERVED_FDS]) {
        for (const storeOpen of [0, Math.floor(budget / 2), budget]) {
          const cap = connectionCap(limit, base + storeOpen, budget, storeOpen)
          assert.ok(cap >= 1, `cap ${cap} for limit ${limit}`)
          assert.ok(
            cap === 1 || base + budget + cap + CONNECTION_HEADROOM_FDS <= limit,
            `limit ${limit}, base ${base}: store ${budget} + connections ${cap} over the limit`,
          )
        }
      }
    }
    assert.equal(connectionCap(256, 30 + 144, 144, 144), 256 - 30 - 144 - CONNECTION_HEADROOM_FDS)
    assert.equal(connectionCap(256, 30, 144, 0), 256 - 30 - 144 - CONNECTION_HEADROOM_FDS)
    assert.equal(connectionCap(10, 20, 1024), 1)
  })
})
