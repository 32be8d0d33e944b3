/** The shared error catalogue: wire statuses map to stable codes and back. */
import {describe, it} from 'node:test'
import assert from 'node:assert/strict'
import {MetaError, Status, isMetaError} from '../../src/protocol/index.js'

describe('MetaError', () => {
  it('carries the catalogue wire status and retriable flag', () => {
    const err = new MetaError('PARTITION_CLOSED', 'Partition[0-1] has been closed')
    assert.equal(err.wireStatus, Status.FORBIDDEN)
    assert.equal(err.retriable, true)
    assert.equal(err.name, 'MetaError')
    assert.equal(new MetaError('CONFIG_INVALID').wireStatus, 500, 'no wire form → 500')
  })

  it('fromWire() maps each MetaQ status to one code', () => {
    const cases: Array<[number, string]> = [
      [301, 'OFFSET_MOVED'], [400, 'BAD_REQUEST'], [403, 'PARTITION_CLOSED'], [404, 'NOT_FOUND'],
      [500, 'INTERNAL'], [503, 'SERVICE_UNAVAILABLE'], [504, 'TIMEOUT'],
    ]
    for (const [status, code] of cases) {
      const err = MetaError.fromWire(status, 'text')
      assert.equal(err.code, code)
      assert.equal(err.status, status)
      assert.equal(err.message, 'text')
    }
  })

  it('fromWire() turns an unknown status into UNKNOWN_ERROR_CODE instead of throwing', () => {
    const err = MetaError.fromWire(418, 'teapot')
    assert.ok(isMetaError(err, 'UNKNOWN_ERROR_CODE'))
    assert.equal(err.status, 418)
    assert.equal(err.message, 'unknown status 418: teapot')
  })
})
